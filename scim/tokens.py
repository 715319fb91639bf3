"""Access tokens of a directory's OAuth client (contract §4.3): their format, issuing and checking.

A token is self-contained, nothing is stored: `roster.` then, in unpadded url-safe base64, a version byte,
the directory's id (16 bytes), the expiry (seconds since the epoch, 8 bytes), 8 random bytes (so that two
grants never give the same string) and an HMAC-SHA256 of those 33 bytes. The MAC's key is derived from the
server's SECRET_KEY and the digest of the directory's current client secret (`scim_oauth_secret_hash`):

- checking a token needs only the directory row that SCIM authentication reads anyway, and one HMAC of 33
  bytes after the key's derivation (two short HMACs in all, no query: bench/README.md, "OAuth access tokens");
- a new client secret changes the key, so every token issued before fails on every node at the next
  request, with no token table and nothing kept in a process's memory;
- the database alone cannot mint tokens (the key needs SECRET_KEY too), and SECRET_KEY alone cannot
  either (it needs the digest of a live secret).

Why not a JWT, and why not an opaque token in a table: docs/decisions.md ("OAuth client credentials").
Changing SECRET_KEY ends every token (clients simply ask for a new one), as it ends sessions.
"""

from __future__ import annotations

import base64
import hmac
import secrets
import time
import uuid
from typing import Final

from django.conf import settings
from django.utils.encoding import force_bytes

from directories.models import Directory

PREFIX: Final = "roster."
EXPIRES_IN: Final = 3600  # seconds (contract §4.3)
_VERSION: Final = 1
_PAYLOAD_BYTES: Final = 1 + 16 + 8 + 8
_MAC_BYTES: Final = 32
# The length of every token: the prefix and 65 bytes in base64 without padding.
TOKEN_LENGTH: Final = len(PREFIX) + (4 * (_PAYLOAD_BYTES + _MAC_BYTES) + 2) // 3
_KEY_CONTEXT: Final = b"roster/scim-oauth/access-token/v1:"
# Checked in place of a missing directory's, so that an unknown directory costs the same HMAC.
_NOBODY: Final = uuid.UUID(int=0)
_NO_SECRET_HASH: Final = "0" * 64

# The clock, in seconds since the epoch (tests move it).
clock = time.time


def is_access_token(presented: str) -> bool:
    """Whether a bearer credential has the shape of an access token (a SCIM secret never has: 43
    url-safe characters, no dot), so it is checked as one and never compared with the static secret."""
    return len(presented) == TOKEN_LENGTH and presented.startswith(PREFIX)


def _key(secret_hash: str) -> bytes:
    return hmac.digest(force_bytes(settings.SECRET_KEY), _KEY_CONTEXT + secret_hash.encode("ascii"), "sha256")


def access_token_issue(*, directory: Directory, now: float | None = None) -> str:
    """A token for `directory`'s OAuth client, valid EXPIRES_IN seconds from `now` (the clock's time), or
    until the client secret changes. The directory must have a client secret."""
    if not directory.scim_oauth_secret_hash:
        raise ValueError("the directory has no OAuth client secret: it issues no token")
    expires = int(clock() if now is None else now) + EXPIRES_IN
    payload = bytes([_VERSION]) + directory.id.bytes + expires.to_bytes(8, "big") + secrets.token_bytes(8)
    mac = hmac.digest(_key(directory.scim_oauth_secret_hash), payload, "sha256")
    return PREFIX + base64.urlsafe_b64encode(payload + mac).rstrip(b"=").decode("ascii")


def access_token_valid(presented: str, *, directory: Directory | None, now: float | None = None) -> bool:
    """Whether `presented` (shaped like a token: `is_access_token`) is a token of `directory`'s OAuth client
    that has not expired, MACed with the key of its current client secret. The MAC is computed and compared
    whatever else is wrong (an unknown directory, OAuth off, a token of another directory, expired), so the
    time taken does not tell which."""
    try:
        raw = base64.urlsafe_b64decode(presented[len(PREFIX) :] + "=")
    except ValueError:  # not base64 (binascii.Error), or not ASCII
        return False
    if len(raw) != _PAYLOAD_BYTES + _MAC_BYTES or raw[0] != _VERSION:
        return False
    payload, mac = raw[:_PAYLOAD_BYTES], raw[_PAYLOAD_BYTES:]
    secret_hash = directory.scim_oauth_secret_hash if directory is not None else ""
    expected = hmac.digest(_key(secret_hash or _NO_SECRET_HASH), payload, "sha256")
    directory_id = directory.id if directory is not None else _NOBODY
    expires = int.from_bytes(payload[17:25], "big")
    current = clock() if now is None else now
    # `&`, not `and`: every test runs.
    return (
        hmac.compare_digest(mac, expected)
        & (payload[1:17] == directory_id.bytes)
        & (current < expires)
        & bool(secret_hash)
        & (directory is not None)
    )
