"""The `Roster-Signature` header (contract §5): t=<unix seconds>,s=<hex HMAC-SHA256(secret, "<t>.<body>")>.

The timestamp is inside the signed message, so a captured request cannot be replayed later with a
fresh `t`; receivers bound the age with a tolerance (the client libraries verify with 5 minutes by default).
"""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "Roster-Signature"


def signature(body: bytes, secret: str, timestamp: int) -> str:
    message = str(timestamp).encode("ascii") + b"." + body
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def signature_header(body: bytes, secret: str, timestamp: int | None = None) -> str:
    """The header value for exactly these body bytes, signed now unless `timestamp` is given."""
    t = int(time.time()) if timestamp is None else int(timestamp)
    return f"t={t},s={signature(body, secret, t)}"
