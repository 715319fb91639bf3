"""The `Roster-Signature` header (contract §5): t=<unix seconds>,s=<hex HMAC-SHA256(secret, "<t>.<body>")>,
and the Standard Webhooks v1 headers (contract §5.2).

The timestamp is inside the signed message, so a captured request cannot be replayed later with a
fresh `t`; receivers bound the age with a tolerance (the client libraries verify with 5 minutes by default).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time

SIGNATURE_HEADER = "Roster-Signature"


def signature(body: bytes, secret: str, timestamp: int) -> str:
    message = str(timestamp).encode("ascii") + b"." + body
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def signature_header(body: bytes, secret: str, timestamp: int | None = None) -> str:
    """The header value for exactly these body bytes, signed now unless `timestamp` is given."""
    t = int(time.time()) if timestamp is None else int(timestamp)
    return f"t={t},s={signature(body, secret, t)}"


# --- Standard Webhooks v1 (contract §5.2) ---------------------------------------------------------------

STANDARD_PREFIX = "whsec_"


def standard_secret_generate() -> str:
    """A `standard` secret: `whsec_` and the base64 of 32 random bytes."""
    return STANDARD_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def standard_key(secret: str) -> bytes | None:
    """The key bytes a `whsec_` secret encodes, or None when `secret` is not of that form."""
    if not isinstance(secret, str) or not secret.startswith(STANDARD_PREFIX):
        return None
    try:
        key = base64.b64decode(secret[len(STANDARD_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        return None
    return key if len(key) >= 16 else None


def standard_signature(body: bytes, key: bytes, message_id: str, timestamp: int) -> str:
    message = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, message, hashlib.sha256).digest()).decode("ascii")


def standard_headers(body: bytes, secrets_: list[str], message_id: str, timestamp: int | None = None) -> dict[str, str]:
    """The three Standard Webhooks headers for these body bytes, one `v1,` signature per secret (several
    during a rotation's grace), signed now unless `timestamp` is given. Secrets not of the `whsec_` form
    are skipped (validation keeps them out)."""
    t = int(time.time()) if timestamp is None else int(timestamp)
    signatures = [standard_signature(body, key, message_id, t) for key in map(standard_key, secrets_) if key]
    return {"webhook-id": message_id, "webhook-timestamp": str(t), "webhook-signature": " ".join(signatures)}


def signed_headers(body: bytes, fmt: str, secrets_: list[str], message_id: str) -> dict[str, str]:
    """The signature headers of `fmt` ("roster": the first secret only; "standard": every secret given)."""
    if fmt == "standard":
        return standard_headers(body, secrets_, message_id)
    if secrets_ and secrets_[0]:
        return {SIGNATURE_HEADER: signature_header(body, secrets_[0])}
    return {}
