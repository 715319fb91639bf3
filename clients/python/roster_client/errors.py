"""What the client raises: one base class, `RosterError`, with the answer's status, message and request id.

Roster answers every error as `{"data": null, "error": {"message": ..., "code": <status>}}` with an
`X-Request-Id` header; quote the request id when reporting a problem. A subclass per status an application
handles differently; any other status (406, 413, 500, a 429 or 503 still refused after the retries) is a
plain `RosterError`.
"""

from __future__ import annotations

from typing import Optional


class RosterError(Exception):
    """An error answer from Roster (or no answer: `status` is None when the request never got one)."""

    status: Optional[int]
    message: str
    request_id: Optional[str]

    def __init__(self, message: str, *, status: Optional[int] = None, request_id: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.request_id = request_id

    def __str__(self) -> str:
        where = f" (request id {self.request_id})" if self.request_id else ""
        return f"{self.status} {self.message}{where}" if self.status is not None else f"{self.message}{where}"


class BadRequestError(RosterError):
    """400: the input was refused; the message names the parameter or field."""


class AuthenticationError(RosterError):
    """401: the API key is missing or not valid."""


class NotFoundError(RosterError):
    """404: no such directory, user or group for this tenant and product (another tenant's is a 404 too)."""


class ConflictError(RosterError):
    """409: the request conflicts with the resource's state (e.g. a resend to a directory without webhook)."""


class GoneError(RosterError):
    """410: what was asked for is no longer kept."""


class ResyncRequired(GoneError):
    """The changes feed cannot be followed from `after`: its events are past retention (Roster answered 410,
    `status` 410), or the feed showed a gap (`status` None). Resynchronise the directory from the user and
    group lists, after reading the directory's `events.last_sequence`, then follow the feed from that number."""

    def __init__(
        self,
        message: str,
        *,
        directory_id: str,
        after: int,
        status: Optional[int] = None,
        request_id: Optional[str] = None,
    ) -> None:
        super().__init__(message, status=status, request_id=request_id)
        self.directory_id = directory_id
        self.after = after


class WebhookVerificationError(ValueError):
    """A webhook delivery must be rejected (answer 400): a malformed or missing `Roster-Signature` header, a
    timestamp outside the tolerance, or a signature that does not match the body and secret."""


BY_STATUS = {400: BadRequestError, 401: AuthenticationError, 404: NotFoundError, 409: ConflictError, 410: GoneError}


def error_for(status: Optional[int], message: str, request_id: Optional[str]) -> RosterError:
    """The RosterError subclass for an answer's status."""
    return BY_STATUS.get(status or 0, RosterError)(message, status=status, request_id=request_id)
