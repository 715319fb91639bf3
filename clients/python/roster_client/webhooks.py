"""Verify a Roster webhook: `verify_webhook(body=…, signature=…, secret=…)` returns the event.

The header is `Roster-Signature: t=<unix seconds>,s=<hex HMAC-SHA256(key=webhook secret, msg="<t>.<body>")>`.
Pass the raw body bytes exactly as received: parsing and re-serialising the JSON changes the bytes and the
signature no longer matches. The timestamp is inside the signed message, so a captured delivery cannot be
replayed later with a fresh `t`; the tolerance bounds how old (or how far ahead) `t` may be.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any, Optional, Union

from roster_client._results import Result
from roster_client.errors import WebhookVerificationError

SIGNATURE_HEADER = "Roster-Signature"
SEQUENCE_HEADER = "Roster-Event-Sequence"
DEFAULT_TOLERANCE = 300  # seconds


class MalformedSignatureHeader(WebhookVerificationError):
    """The header is missing, or is not `t=<int>,s=<hex>`."""


class TimestampOutsideTolerance(WebhookVerificationError):
    """The signature may be genuine but `t` is too old or too far ahead (a replay, or clock skew)."""


class SignatureMismatch(WebhookVerificationError):
    """No `s` in the header matches this body and secret: a wrong secret, or a body changed in transit."""


@dataclass
class WebhookEvent(Result):
    """A webhook's payload: `data` is a User for user events, a Group for group events, the User with its
    `group` for membership events, the directory for `dsync.*` events (which carry no `sequence`)."""

    id: str
    event: str
    created_at: str
    data: Any
    directory_id: Optional[str] = None
    tenant: Optional[str] = None
    product: Optional[str] = None
    sequence: Optional[int] = None
    previous_attributes: Optional[Any] = None


def _parse(header: Optional[str]) -> tuple[int, list[str]]:
    if not header or not isinstance(header, str):
        raise MalformedSignatureHeader(f"Missing {SIGNATURE_HEADER} header.")
    timestamp: Optional[int] = None
    signatures: list[str] = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            raise MalformedSignatureHeader(f"{SIGNATURE_HEADER} must look like t=<unix seconds>,s=<hex>.")
        if key == "t":
            if not (value.isascii() and value.isdigit()):
                raise MalformedSignatureHeader(f"{SIGNATURE_HEADER} t= must be whole unix seconds.")
            timestamp = int(value)
        elif key == "s":
            signatures.append(value.strip().lower())
        # Other keys are ignored, so that a later scheme can be sent beside this one.
    if timestamp is None or not signatures:
        raise MalformedSignatureHeader(f"{SIGNATURE_HEADER} needs both t= and s=.")
    return timestamp, signatures


def verify_signature(
    body: Union[bytes, str],
    signature: Optional[str],
    secret: str,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> int:
    """Check the header against the raw body in constant time; returns the signed timestamp. `tolerance`
    (seconds) applies both ways; `now` (unix seconds) is for tests."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    if not secret:
        raise WebhookVerificationError("No webhook secret to verify with.")
    timestamp, signatures = _parse(signature)
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise TimestampOutsideTolerance(
            f"{SIGNATURE_HEADER} timestamp is {int(current - timestamp)} s from now; tolerance is {tolerance} s."
        )
    expected = hmac.new(secret.encode("utf-8"), str(timestamp).encode("ascii") + b"." + body, hashlib.sha256)
    digest = expected.hexdigest().encode("ascii")
    # Every candidate is compared, without stopping early, so the timing does not tell which one was close;
    # as bytes, because compare_digest refuses a str with non-ASCII characters, which a hostile header may hold.
    matched = False
    for candidate in signatures:
        matched |= hmac.compare_digest(digest, candidate.encode("utf-8", "replace"))
    if not matched:
        raise SignatureMismatch(f"{SIGNATURE_HEADER} does not match the body and secret.")
    return timestamp


def verify_webhook(
    *,
    body: Union[bytes, str],
    signature: Optional[str],
    secret: str,
    tolerance: float = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> WebhookEvent:
    """Verify a delivery (raw body bytes, the `Roster-Signature` header's value, the directory's webhook
    secret) and return its event. Raises WebhookVerificationError: answer 400 and do not use the body."""
    verify_signature(body, signature, secret, tolerance=tolerance, now=now)
    try:
        payload = json.loads(body)
    except ValueError:
        raise WebhookVerificationError("The signed body is not JSON.") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("id"), str):
        raise WebhookVerificationError("The signed body is not a Roster event.")
    return WebhookEvent.from_dict(payload)
