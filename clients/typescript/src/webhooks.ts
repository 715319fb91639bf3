/**
 * Verify a Roster webhook: `await verifyWebhook({ body, headers, secret })` gives the event.
 *
 * Two formats (Roster's contract §5.2), told apart by the headers: `roster` (below) and `standard` (Standard
 * Webhooks v1: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`, HMAC-SHA256 keyed with the
 * bytes of a `whsec_<base64>` secret over "<id>.<timestamp>.<body>"). `secret` may be a list: during a
 * rotation a delivery signed with any of them is accepted.
 *
 * The header is `Roster-Signature: t=<unix seconds>,s=<hex HMAC-SHA256(key=webhook secret, msg="<t>.<body>")>`.
 * Pass the raw body exactly as received (a string or its bytes): parsing and re-serialising the JSON changes
 * it and the signature no longer matches. The timestamp is inside the signed message, so a captured delivery
 * cannot be replayed later with a fresh `t`; the tolerance bounds how old (or how far ahead) `t` may be.
 * The check uses WebCrypto (`crypto.subtle`, in browsers and Node 18+), whose HMAC verify compares in constant
 * time.
 */

import { WebhookVerificationError } from "./errors.js";
import type { WebhookEvent } from "./types.js";

export const SIGNATURE_HEADER = "Roster-Signature";
export const SEQUENCE_HEADER = "Roster-Event-Sequence";
export const DEFAULT_TOLERANCE = 300; // seconds

/** Request headers: a fetch `Headers`, or a plain object (Node's `req.headers`), names in any case. */
export type HeaderSource = Headers | Record<string, string | string[] | undefined | null>;

export interface VerifyOptions {
  /** The raw body, as received. */
  body: string | Uint8Array | ArrayBuffer;
  /** The `Roster-Signature` header's value (or give `headers`). */
  signature?: string | null | undefined;
  /** The request's headers: the format (roster or standard) is told from them. */
  headers?: HeaderSource;
  /** The webhook secret, or several (any one may match: a rotation). */
  secret: string | string[];
  /** Seconds `t` may be from now, either way (default 300). */
  tolerance?: number;
  /** Unix seconds to check against (for tests; default now). */
  now?: number;
}

async function subtle(): Promise<SubtleCrypto> {
  const global = (globalThis as { crypto?: Crypto }).crypto;
  if (global?.subtle) return global.subtle;
  // Node 18 keeps WebCrypto in its crypto module (the global came in Node 19); the name is computed so that
  // a bundler for browsers, which have the global, does not try to include the module.
  const moduleName = "node:crypto";
  const node = (await import(/* @vite-ignore */ moduleName)) as { webcrypto: Crypto };
  return node.webcrypto.subtle;
}

function bytesOf(body: string | Uint8Array | ArrayBuffer): Uint8Array {
  if (typeof body === "string") return new TextEncoder().encode(body);
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

function parse(header: string | null | undefined): { timestamp: number; signatures: string[] } {
  if (!header || typeof header !== "string") {
    throw new WebhookVerificationError(`Missing ${SIGNATURE_HEADER} header.`, "malformed");
  }
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const at = part.indexOf("=");
    if (at < 0) {
      throw new WebhookVerificationError(`${SIGNATURE_HEADER} must look like t=<unix seconds>,s=<hex>.`, "malformed");
    }
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === "t") {
      if (!/^[0-9]+$/.test(value)) {
        throw new WebhookVerificationError(`${SIGNATURE_HEADER} t= must be whole unix seconds.`, "malformed");
      }
      timestamp = Number(value);
    } else if (key === "s") {
      signatures.push(value.toLowerCase());
    }
    // Other keys are ignored, so that a later scheme can be sent beside this one.
  }
  if (timestamp === null || signatures.length === 0) {
    throw new WebhookVerificationError(`${SIGNATURE_HEADER} needs both t= and s=.`, "malformed");
  }
  return { timestamp, signatures };
}

function hexBytes(hex: string) {
  if (!/^[0-9a-f]{64}$/.test(hex)) return null;
  const bytes = new Uint8Array(32);
  for (let i = 0; i < 32; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

function secretsOf(secret: string | string[]): string[] {
  const found = (Array.isArray(secret) ? secret : [secret]).filter((value) => typeof value === "string" && value);
  if (found.length === 0) throw new WebhookVerificationError("No webhook secret to verify with.", "secret");
  return found;
}

function headerOf(headers: HeaderSource, name: string): string | null {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name);
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
    if (key.toLowerCase() !== wanted) continue;
    if (Array.isArray(value)) return value.length ? String(value[0]) : null;
    return value == null ? null : String(value);
  }
  return null;
}

function base64Bytes(text: string) {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) return null;
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** Check Standard Webhooks headers against the raw body with any of the secrets; resolves to the timestamp. */
export async function verifyStandard(options: VerifyOptions & { headers: HeaderSource }): Promise<number> {
  const { tolerance = DEFAULT_TOLERANCE } = options;
  const secrets = secretsOf(options.secret);
  const id = headerOf(options.headers, "webhook-id");
  const stamp = headerOf(options.headers, "webhook-timestamp");
  const signature = headerOf(options.headers, "webhook-signature");
  if (!id || !stamp || !signature) {
    throw new WebhookVerificationError("webhook-id, webhook-timestamp and webhook-signature are all required.", "malformed");
  }
  if (!/^[0-9]+$/.test(stamp)) throw new WebhookVerificationError("webhook-timestamp must be whole unix seconds.", "malformed");
  const timestamp = Number(stamp);
  const now = options.now ?? Date.now() / 1000;
  if (Math.abs(now - timestamp) > tolerance) {
    throw new WebhookVerificationError(
      `webhook-timestamp is ${Math.trunc(now - timestamp)} s from now; tolerance is ${tolerance} s.`,
      "timestamp",
    );
  }
  const candidates = signature
    .split(" ")
    .filter((part) => part.startsWith("v1,"))
    .map((part) => base64Bytes(part.slice(3)));
  if (candidates.length === 0) throw new WebhookVerificationError("webhook-signature holds no v1 signature.", "malformed");
  const crypto = await subtle();
  const encoder = new TextEncoder();
  const head = encoder.encode(`${id}.${timestamp}.`);
  const body = bytesOf(options.body);
  const message = new Uint8Array(head.length + body.length);
  message.set(head);
  message.set(body, head.length);
  let matched = false;
  for (const secret of secrets) {
    const raw = base64Bytes(secret.startsWith("whsec_") ? secret.slice(6) : secret);
    if (raw === null) throw new WebhookVerificationError("A standard webhook secret is whsec_<base64>.", "secret");
    const key = await crypto.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    for (const candidate of candidates) {
      if (candidate !== null && (await crypto.verify("HMAC", key, candidate, message))) matched = true;
    }
  }
  if (!matched) throw new WebhookVerificationError("webhook-signature does not match the body and secret.", "mismatch");
  return timestamp;
}

/** Check the `Roster-Signature` header against the raw body with any of the secrets; resolves to the timestamp. */
export async function verifySignature(options: VerifyOptions): Promise<number> {
  const secrets = secretsOf(options.secret);
  let last: unknown = null;
  for (const secret of secrets) {
    try {
      return await verifyOne({ ...options, secret });
    } catch (error) {
      if (!(error instanceof WebhookVerificationError) || error.reason !== "mismatch") throw error;
      last = error;
    }
  }
  throw last;
}

async function verifyOne(options: VerifyOptions & { secret: string }): Promise<number> {
  const { secret, tolerance = DEFAULT_TOLERANCE } = options;
  const { timestamp, signatures } = parse(options.signature);
  const now = options.now ?? Date.now() / 1000;
  if (Math.abs(now - timestamp) > tolerance) {
    throw new WebhookVerificationError(
      `${SIGNATURE_HEADER} timestamp is ${Math.trunc(now - timestamp)} s from now; tolerance is ${tolerance} s.`,
      "timestamp",
    );
  }
  const crypto = await subtle();
  const encoder = new TextEncoder();
  const key = await crypto.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  const body = bytesOf(options.body);
  const message = new Uint8Array(String(timestamp).length + 1 + body.length);
  message.set(encoder.encode(`${timestamp}.`));
  message.set(body, String(timestamp).length + 1);
  let matched = false;
  // Every candidate is checked, without stopping at a match, so the timing does not tell which one was close.
  for (const candidate of signatures) {
    const bytes = hexBytes(candidate);
    if (bytes !== null && (await crypto.verify("HMAC", key, bytes, message))) matched = true;
  }
  if (!matched) {
    throw new WebhookVerificationError(`${SIGNATURE_HEADER} does not match the body and secret.`, "mismatch");
  }
  return timestamp;
}

/** Verify a delivery and return its event. Throws WebhookVerificationError: answer 400 and do not use the body. */
export async function verifyWebhook(options: VerifyOptions): Promise<WebhookEvent> {
  const headers = options.headers;
  if (headers !== undefined && options.signature == null) {
    const roster = headerOf(headers, SIGNATURE_HEADER);
    if (roster === null && headerOf(headers, "webhook-signature") !== null) {
      await verifyStandard({ ...options, headers });
    } else {
      await verifySignature({ ...options, signature: roster });
    }
  } else {
    await verifySignature(options);
  }
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder().decode(bytesOf(options.body)));
  } catch {
    throw new WebhookVerificationError("The signed body is not JSON.", "body");
  }
  if (payload === null || typeof payload !== "object" || Array.isArray(payload) || typeof (payload as { id?: unknown }).id !== "string") {
    throw new WebhookVerificationError("The signed body is not a Roster event.", "body");
  }
  return payload as WebhookEvent;
}
