"""Verify a Roster webhook in your application: copy this file, or import it. Standard library only.

    from verify import verify_signature, SignatureError

    try:
        verify_signature(request_body_bytes, request.headers["Roster-Signature"], WEBHOOK_SECRET)
    except SignatureError as exc:
        return 400, str(exc)

Pass the raw body bytes exactly as received: parsing and re-serialising the JSON changes the bytes
and the signature no longer matches. The header is `t=<unix seconds>,s=<hex HMAC-SHA256>` where the
HMAC key is the webhook secret and the message is `<t>.<body>`.
"""

from __future__ import annotations

import hashlib
import hmac
import time

__all__ = [
    "DEFAULT_TOLERANCE",
    "MalformedSignatureHeader",
    "SignatureError",
    "SignatureMismatch",
    "TimestampOutsideTolerance",
    "verify_signature",
]

DEFAULT_TOLERANCE = 300  # seconds; bounds how long a captured request could be replayed


class SignatureError(ValueError):
    """Base class: the request must be rejected."""


class MalformedSignatureHeader(SignatureError):
    """The header is missing, or is not `t=<int>,s=<hex>`."""


class TimestampOutsideTolerance(SignatureError):
    """The signature may be genuine but `t` is too old or too far in the future (replay, clock skew)."""


class SignatureMismatch(SignatureError):
    """No `s` in the header matches this body and secret: wrong secret, or body changed in transit."""


def _parse(header: str | None) -> tuple[int, list[str]]:
    if not header or not isinstance(header, str):
        raise MalformedSignatureHeader("Missing Roster-Signature header.")
    timestamp: int | None = None
    signatures: list[str] = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            raise MalformedSignatureHeader("Roster-Signature must look like t=<unix seconds>,s=<hex>.")
        if key == "t":
            if not value.isdigit():
                raise MalformedSignatureHeader("Roster-Signature t= must be whole unix seconds.")
            timestamp = int(value)
        elif key == "s":
            signatures.append(value.strip().lower())
        # Unknown keys are ignored so a future scheme can be added next to this one.
    if timestamp is None or not signatures:
        raise MalformedSignatureHeader("Roster-Signature needs both t= and s=.")
    return timestamp, signatures


def verify_signature(
    body: bytes,
    header: str | None,
    secret: str,
    tolerance: int = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> int:
    """Check a `Roster-Signature` header against the raw body; returns the signed timestamp.

    Raises MalformedSignatureHeader, TimestampOutsideTolerance or SignatureMismatch (all SignatureError).
    The comparison is constant-time. `tolerance` is in seconds, applied in both directions; `now`
    (unix seconds) is for tests.
    """
    if isinstance(body, str):
        body = body.encode("utf-8")
    if not secret:
        raise SignatureError("No webhook secret configured to verify with.")
    timestamp, signatures = _parse(header)
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise TimestampOutsideTolerance(
            f"Roster-Signature timestamp is {int(current - timestamp)} s from now; tolerance is {tolerance} s."
        )
    expected = hmac.new(
        secret.encode("utf-8"), str(timestamp).encode("ascii") + b"." + body, hashlib.sha256
    ).hexdigest()
    # Check every candidate without stopping early, so timing does not say which one was close.
    matched = False
    for candidate in signatures:
        # As bytes: compare_digest refuses non-ASCII str, and a hostile header may carry some.
        matched |= hmac.compare_digest(expected.encode("ascii"), candidate.encode("utf-8", "replace"))
    if not matched:
        raise SignatureMismatch("Roster-Signature does not match the body and secret.")
    return timestamp
