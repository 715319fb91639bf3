"""Webhook signature checks as a receiving application would do them.

Roster (contract §5): `Roster-Signature: t=<unix seconds>,s=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`,
checked by the client library's verification (roster_client.webhooks), as an application does.
Jackson: `BoxyHQ-Signature: t=<unix milliseconds>,s=<hex HMAC-SHA256(secret, "<t>.<body>")>`, checked here.
Both sign exactly the bytes of the body, so the receiver hashes the raw bytes it read, never a
re-serialisation.
"""

from __future__ import annotations

import hashlib
import hmac
import time

from roster_client.webhooks import (
    MalformedSignatureHeader,
    SignatureMismatch,
    TimestampOutsideTolerance,
    WebhookVerificationError,
    verify_signature,
)

SCHEMES = {
    # scheme name -> (header name, timestamp units per second)
    "roster": ("Roster-Signature", 1),
    "jackson": ("BoxyHQ-Signature", 1000),
}
DEFAULT_TOLERANCE_SECONDS = 300.0


def _parse(header: str) -> tuple[str, str] | None:
    fields: dict[str, str] = {}
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if sep:
            fields[key] = value
    if "t" not in fields or "s" not in fields:
        return None
    return fields["t"], fields["s"]


def sign(*, scheme: str, secret: str, body: bytes, timestamp: float | None = None) -> str:
    """The header value a sender of `scheme` would produce (used by the tests)."""
    _, units = SCHEMES[scheme]
    t = str(int((time.time() if timestamp is None else timestamp) * units))
    digest = hmac.new(secret.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={t},s={digest}"


def verify(
    *,
    scheme: str,
    secret: str,
    header: str | None,
    body: bytes,
    now: float | None = None,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
) -> tuple[bool, str]:
    """(valid, reason). `reason` is empty when valid, else says what was wrong."""
    if not header:
        return False, "missing signature header"
    if scheme == "roster":
        return _verify_roster(secret=secret, header=header, body=body, now=now, tolerance=tolerance)
    parsed = _parse(header)
    if parsed is None:
        return False, "malformed signature header"
    t, received = parsed
    if not t.isdigit():
        return False, "timestamp is not an integer"
    _, units = SCHEMES[scheme]
    sent_at = int(t) / units
    if abs((time.time() if now is None else now) - sent_at) > tolerance:
        return False, "timestamp outside tolerance"
    expected = hmac.new(secret.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, received.lower()):
        return False, "signature mismatch"
    return True, ""


_ROSTER_REASONS = {
    MalformedSignatureHeader: "malformed signature header",
    TimestampOutsideTolerance: "timestamp outside tolerance",
    SignatureMismatch: "signature mismatch",
}


def _verify_roster(*, secret: str, header: str, body: bytes, now: float | None, tolerance: float) -> tuple[bool, str]:
    try:
        verify_signature(body, header, secret, tolerance=tolerance, now=now)
    except WebhookVerificationError as exc:
        return False, _ROSTER_REASONS.get(type(exc), str(exc))
    return True, ""
