"""Verify a Roster webhook: `verify_webhook(body=…, headers=…, secret=…)` returns the event.

Two formats (Roster's contract §5.2), told apart by the headers: `roster` (`Roster-Signature`, below) and
`standard` (Standard Webhooks v1: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`,
HMAC-SHA256 keyed with the bytes of a `whsec_<base64>` secret over "<id>.<timestamp>.<body>"). `secret`
may be a list: during a rotation, a delivery signed with any of them is accepted.

The header is `Roster-Signature: t=<unix seconds>,s=<hex HMAC-SHA256(key=webhook secret, msg="<t>.<body>")>`.
Pass the raw body bytes exactly as received: parsing and re-serialising the JSON changes the bytes and the
signature no longer matches. The timestamp is inside the signed message, so a captured delivery cannot be
replayed later with a fresh `t`; the tolerance bounds how old (or how far ahead) `t` may be.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping, Sequence
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


Secrets = Union[str, Sequence[str]]


def _secrets(secret: Secrets) -> list[str]:
    found = [secret] if isinstance(secret, str) else [value for value in secret if isinstance(value, str)]
    found = [value for value in found if value]
    if not found:
        raise WebhookVerificationError("No webhook secret to verify with.")
    return found


def _header(headers: Mapping[str, Any], name: str) -> Optional[str]:
    wanted = name.lower()
    for key, value in headers.items():
        if str(key).lower() == wanted:
            if isinstance(value, (list, tuple)):
                value = value[0] if value else None
            return None if value is None else str(value)
    return None


def _standard_key(secret: str) -> bytes:
    raw = secret[len("whsec_") :] if secret.startswith("whsec_") else secret
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        raise WebhookVerificationError("A standard webhook secret is whsec_<base64>.") from None


def verify_standard(
    body: Union[bytes, str],
    headers: Mapping[str, Any],
    secret: Secrets,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> int:
    """Check Standard Webhooks headers against the raw body with any of the secrets (constant-time
    compares); returns the signed timestamp."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    message_id = _header(headers, "webhook-id")
    stamp = _header(headers, "webhook-timestamp")
    signature = _header(headers, "webhook-signature")
    if not message_id or not stamp or not signature:
        raise MalformedSignatureHeader("webhook-id, webhook-timestamp and webhook-signature are all required.")
    if not (stamp.isascii() and stamp.isdigit()):
        raise MalformedSignatureHeader("webhook-timestamp must be whole unix seconds.")
    timestamp = int(stamp)
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise TimestampOutsideTolerance(
            f"webhook-timestamp is {int(current - timestamp)} s from now; tolerance is {tolerance} s."
        )
    candidates = [part.partition(",")[2] for part in signature.split(" ") if part.startswith("v1,")]
    if not candidates:
        raise MalformedSignatureHeader("webhook-signature holds no v1 signature.")
    message = f"{message_id}.{timestamp}.".encode() + body
    matched = False
    for key in [_standard_key(value) for value in _secrets(secret)]:
        expected = base64.b64encode(hmac.new(key, message, hashlib.sha256).digest())
        for candidate in candidates:
            matched |= hmac.compare_digest(expected, candidate.encode("utf-8", "replace"))
    if not matched:
        raise SignatureMismatch("webhook-signature does not match the body and secret.")
    return timestamp


def verify_webhook(
    *,
    body: Union[bytes, str],
    signature: Optional[str] = None,
    secret: Secrets,
    headers: Optional[Mapping[str, Any]] = None,
    tolerance: float = DEFAULT_TOLERANCE,
    now: Optional[float] = None,
) -> WebhookEvent:
    """Verify a delivery and return its event: the raw body bytes, and either `headers` (the request's
    headers: the format is told from them) or `signature` (the `Roster-Signature` header's value), with the
    webhook secret or a list of secrets (any one may match: a rotation). Raises WebhookVerificationError:
    answer 400 and do not use the body."""
    if headers is not None and signature is None:
        roster = _header(headers, SIGNATURE_HEADER)
        if roster is None and _header(headers, "webhook-signature") is not None:
            verify_standard(body, headers, secret, tolerance=tolerance, now=now)
            return _event(body)
        signature = roster
    failures: list[WebhookVerificationError] = []
    for one in _secrets(secret):
        try:
            verify_signature(body, signature, one, tolerance=tolerance, now=now)
            break
        except SignatureMismatch as exc:
            failures.append(exc)
    else:
        raise failures[-1]
    return _event(body)


def _event(body: Union[bytes, str]) -> WebhookEvent:
    try:
        payload = json.loads(body)
    except ValueError:
        raise WebhookVerificationError("The signed body is not JSON.") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("id"), str):
        raise WebhookVerificationError("The signed body is not a Roster event.")
    return WebhookEvent.from_dict(payload)
