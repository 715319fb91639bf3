"""Access tokens of a directory's OAuth client (contract §4.3): their format, issuing and checking.

A token is self-contained, nothing is stored: `roster.` then, in hexadecimal, a version byte, the
directory's id (16 bytes), the expiry (seconds since the epoch, 8 bytes), 8 random bytes (so that two
grants never give the same string) and a MAC of those 33 bytes: keyed BLAKE2s (RFC 7693's keyed mode, a
MAC in its own right) under a key derived, with HMAC-SHA256, from the server's SECRET_KEY and the digest
of the directory's current client secret (`scim_oauth_secret_hash`):

- checking a token needs only the directory row that SCIM authentication reads anyway, no query of its
  own, and one keyed hash of 33 bytes, the first time a process sees the token; the check is memoized by
  the token and the digest, so the identity provider's next requests with it cost a lookup
  (bench/README.md, "Other measured costs", has the cost beside the static secret's);
- a new client secret changes the key, so every token issued before fails on every node at the next
  request, with no token table and nothing in a process's memory that could keep one working: what is
  memoized is keyed by the digest read from the row on every request, so a new digest is checked afresh;
- the database alone cannot mint tokens (the key needs SECRET_KEY too), and SECRET_KEY alone cannot
  either (it needs the digest of a live secret).

Why this format rather than a JWT or an opaque token in a table: docs/decisions.md ("OAuth client
credentials"). Changing SECRET_KEY ends every token (clients simply ask for a new one), as it ends sessions.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
import uuid
from functools import lru_cache
from typing import Any, Final

from django.conf import settings
from django.core.signals import setting_changed
from django.utils.encoding import force_bytes

from directories.models import Directory

PREFIX: Final = "roster."
EXPIRES_IN: Final = 3600  # seconds (contract §4.3)
_VERSION: Final = 1
_PAYLOAD_BYTES: Final = 1 + 16 + 8 + 8
_MAC_BYTES: Final = 32
# The length of every token: the prefix and 65 bytes in hexadecimal (the fastest text to read back).
TOKEN_LENGTH: Final = len(PREFIX) + 2 * (_PAYLOAD_BYTES + _MAC_BYTES)
_KEY_CONTEXT: Final = b"roster/scim-oauth/access-token/v1:"
# Checked in place of a missing directory's, so that an unknown directory costs the same as a known one.
_NOBODY: Final = uuid.UUID(int=0)
_NO_SECRET_HASH: Final = "0" * 64

# The clock, in seconds since the epoch (tests move it).
clock = time.time


@lru_cache(maxsize=1024)
def _key(secret_key: str, secret_hash: str) -> bytes:
    """The MAC key of the tokens of the client whose secret has this digest. Memoized by both inputs: a new
    client secret (or SECRET_KEY) is another key, never a remembered one."""
    return hmac.digest(force_bytes(secret_key), _KEY_CONTEXT + secret_hash.encode("ascii"), "sha256")


def _mac(secret_hash: str, payload: bytes) -> bytes:
    return hashlib.blake2s(payload, key=_key(settings.SECRET_KEY, secret_hash), digest_size=_MAC_BYTES).digest()


def _secret_key_changed(*, setting: str, **_: Any) -> None:
    """SECRET_KEY changed (only tests change settings at run time): forget every check made under the old one."""
    if setting == "SECRET_KEY":
        _mac_checked.cache_clear()


setting_changed.connect(_secret_key_changed, dispatch_uid="scim.tokens")


def access_token_issue(*, directory: Directory, now: float | None = None) -> str:
    """A token for `directory`'s OAuth client, valid EXPIRES_IN seconds from `now` (the clock's time), or
    until the client secret changes. The directory must have a client secret."""
    if not directory.scim_oauth_secret_hash:
        raise ValueError("the directory has no OAuth client secret: it issues no token")
    expires = int(clock() if now is None else now) + EXPIRES_IN
    payload = bytes([_VERSION]) + directory.id.bytes + expires.to_bytes(8, "big") + secrets.token_bytes(8)
    return PREFIX + (payload + _mac(directory.scim_oauth_secret_hash, payload)).hex()


def access_token_check(presented: str, directory: Directory | None, now: float | None = None) -> bool | None:
    """None when `presented` is not shaped like an access token (a SCIM secret never is: 43 url-safe
    characters, no dot), so it is checked as a static secret and never as a token. Else whether it is a
    token of `directory`'s OAuth client that has not expired, MACed with the key of its current client
    secret. An unknown directory, OAuth off, a token of another directory and an expired one are all
    checked the same way, so the time taken does not tell which."""
    if len(presented) != TOKEN_LENGTH or not presented.startswith(PREFIX):
        return None
    secret_hash = directory.scim_oauth_secret_hash if directory is not None else ""
    carried, expires = _mac_checked(presented, secret_hash or _NO_SECRET_HASH)
    directory_id = (directory.id if directory is not None else _NOBODY).int
    current = clock() if now is None else now
    # `&`, not `and`: every test runs. A token whose MAC is wrong carries _NOTHING, which matches no
    # directory (ids are not negative) and has expired.
    return (carried == directory_id) & (current < expires) & (secret_hash != "")


def access_token_valid(presented: str, *, directory: Directory | None, now: float | None = None) -> bool:
    """Whether `presented` is an unexpired token of `directory`'s OAuth client (`access_token_check`)."""
    return bool(access_token_check(presented, directory, now))


_NOTHING: Final = (-1, 0)


@lru_cache(maxsize=4096)
def _mac_checked(presented: str, secret_hash: str) -> tuple[int, int]:
    """The directory id (as UUID.int) and expiry a token carries when its MAC is right under the key of
    this client secret's digest (and SECRET_KEY); _NOTHING otherwise. Memoized by those inputs, which is what
    makes an identity provider's next requests with the same token cost a lookup instead of a keyed hash:
    the digest is read from the directory's row on every request, so a new client secret is another input,
    checked afresh and refused (bench/README.md, "OAuth token check memo"). SECRET_KEY is not a key of the
    memo (reading a Django setting costs about what the lookup does): a change of it clears the memo."""
    try:
        raw = bytes.fromhex(presented[len(PREFIX) :])
    except ValueError:  # not hexadecimal
        return _NOTHING
    if len(raw) != _PAYLOAD_BYTES + _MAC_BYTES or raw[0] != _VERSION:
        return _NOTHING
    payload, mac = raw[:_PAYLOAD_BYTES], raw[_PAYLOAD_BYTES:]
    expected = hashlib.blake2s(payload, key=_key(settings.SECRET_KEY, secret_hash), digest_size=_MAC_BYTES).digest()
    if not hmac.compare_digest(mac, expected):
        return _NOTHING
    return int.from_bytes(payload[1:17], "big"), int.from_bytes(payload[17:25], "big")
