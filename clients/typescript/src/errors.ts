/**
 * What the client throws: `RosterError`, with the answer's status, message and request id.
 *
 * Roster answers every error as `{"data": null, "error": {"message": ..., "code": <status>}}` with an
 * `X-Request-Id` header; quote the request id when reporting a problem. A subclass per status an application
 * handles differently; any other status (406, 413, 500, a 429 or 503 still refused after the retries) is a
 * plain `RosterError`.
 */

export class RosterError extends Error {
  /** The HTTP status, or null when the request got no answer. */
  readonly status: number | null;
  readonly requestId: string | null;

  constructor(message: string, status: number | null = null, requestId: string | null = null) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.requestId = requestId;
  }
}

/** 400: the input was refused; the message names the parameter or field. */
export class BadRequestError extends RosterError {}
/** 401: the API key is missing or not valid. */
export class AuthenticationError extends RosterError {}
/** 404: no such directory, user or group for this tenant and product (another tenant's is a 404 too). */
export class NotFoundError extends RosterError {}
/** 409: the request conflicts with the resource's state (e.g. a resend to a directory without webhook). */
export class ConflictError extends RosterError {}
/** 410: what was asked for is no longer kept. */
export class GoneError extends RosterError {}

/**
 * The changes feed cannot be followed from `after`: its events are past retention (Roster answered 410,
 * `status` 410), or the feed showed a gap (`status` null). Resynchronise the directory from the user and group
 * lists, after reading the directory's `events.last_sequence`, then follow the feed from that number.
 */
export class ResyncRequired extends GoneError {
  readonly directoryId: string;
  readonly after: number;

  constructor(
    message: string,
    directoryId: string,
    after: number,
    status: number | null = null,
    requestId: string | null = null,
  ) {
    super(message, status, requestId);
    this.directoryId = directoryId;
    this.after = after;
  }
}

/** Why a webhook delivery was refused. */
export type WebhookVerificationReason = "malformed" | "timestamp" | "mismatch" | "secret" | "body";

/**
 * A webhook delivery must be rejected (answer 400): a malformed or missing `Roster-Signature` header
 * (`reason` "malformed"), a timestamp outside the tolerance ("timestamp"), a signature that does not match
 * the body and secret ("mismatch"), no secret to verify with ("secret"), or a signed body that is not an
 * event ("body").
 */
export class WebhookVerificationError extends Error {
  readonly reason: WebhookVerificationReason;

  constructor(message: string, reason: WebhookVerificationReason) {
    super(message);
    this.name = "WebhookVerificationError";
    this.reason = reason;
  }
}

const BY_STATUS: Record<number, typeof RosterError> = {
  400: BadRequestError,
  401: AuthenticationError,
  404: NotFoundError,
  409: ConflictError,
  410: GoneError,
};

/** The RosterError subclass for an answer's status. */
export function errorFor(status: number | null, message: string, requestId: string | null): RosterError {
  const Class = (status !== null && BY_STATUS[status]) || RosterError;
  return new Class(message, status, requestId);
}
