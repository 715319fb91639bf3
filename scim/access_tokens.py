"""Access tokens of a directory's OAuth client (contract §4.3): their format, issuing and checking.

A token is self-contained, nothing is stored: `roster.` then, in hexadecimal, a version byte, the
directory's id (16 bytes), the expiry (seconds since the epoch, 8 bytes), the id of the client secret
that obtained it (16 bytes), 8 random bytes (so that two grants never give the same string) and a MAC of
those 49 bytes: keyed BLAKE2s (RFC 7693's keyed mode, a MAC in its own right) under a key derived, with
HMAC-SHA256, from the server's SECRET_KEY and the digest of that client secret (one entry of the
directory's `scim_oauth_secrets`):

- checking a token needs only the directory row that SCIM authentication reads anyway, no query of its
  own: the secret id the token names picks that secret's digest out of the row, then one keyed hash of
  49 bytes, the first time a process sees the token; the check is memoized by the token and the digest,
  so the identity provider's next requests with it cost a lookup (bench/README.md, "Other measured
  costs", has the cost beside the static secret's);
- revoking a client secret takes its entry out of the row, so every token it obtained fails on every
  node at the next request (no digest to check the MAC with), while the tokens of the directory's other
  secrets keep working; nothing in a process's memory can keep one working, since what is memoized is
  keyed by the digest read from the row on every request;
- a token never outlives the secret that obtained it: its expiry is capped at the secret's;
- the database alone cannot mint tokens (the key needs SECRET_KEY too), and SECRET_KEY alone cannot
  either (it needs the digest of a live secret).

Version 1 tokens (from before a directory could have several secrets) carry no secret id: they are
checked against the one secret carried over from then (`legacy` in its entry), until it is revoked.

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
from directories.oauthsecrets import secret_expires_epoch, secret_hash_by_id, secret_legacy_hash, secrets_live

PREFIX: Final = "roster."
_VERSION: Final = 2
_VERSION_1: Final = 1
_PAYLOAD_BYTES: Final = 1 + 16 + 8 + 16 + 8
_PAYLOAD_BYTES_1: Final = 1 + 16 + 8 + 8
_MAC_BYTES: Final = 32
# The length of every token: the prefix and 81 bytes in hexadecimal (the fastest text to read back).
TOKEN_LENGTH: Final = len(PREFIX) + 2 * (_PAYLOAD_BYTES + _MAC_BYTES)
# The length of a version 1 token (65 bytes), still checked against the directory's legacy secret.
TOKEN_LENGTH_1: Final = len(PREFIX) + 2 * (_PAYLOAD_BYTES_1 + _MAC_BYTES)
_KEY_CONTEXT: Final = b"roster/scim-oauth/access-token/v1:"
# Checked in place of a missing directory's, so that an unknown directory costs the same as a known one.
_NOBODY: Final = uuid.UUID(int=0)
_NO_SECRET_HASH: Final = "0" * 64

# The clock, in seconds since the epoch (tests move it).
clock = time.time


def lifetime() -> int:
    """Seconds an access token lives (SCIM_OAUTH_TOKEN_SECONDS, 3600…21600, checked when settings load)."""
    return int(settings.SCIM_OAUTH_TOKEN_SECONDS)


@lru_cache(maxsize=1024)
def _key(secret_key: str, secret_hash: str) -> bytes:
    """The MAC key of the tokens obtained with the client secret that has this digest. Memoized by both
    inputs: another client secret (or SECRET_KEY) is another key, never a remembered one."""
    return hmac.digest(force_bytes(secret_key), _KEY_CONTEXT + secret_hash.encode("ascii"), "sha256")


def _mac(secret_hash: str, payload: bytes) -> bytes:
    return hashlib.blake2s(payload, key=_key(settings.SECRET_KEY, secret_hash), digest_size=_MAC_BYTES).digest()


def _secret_key_changed(*, setting: str, **_: Any) -> None:
    """SECRET_KEY changed (only tests change settings at run time): forget every check made under the old one."""
    if setting == "SECRET_KEY":
        _mac_checked.cache_clear()


setting_changed.connect(_secret_key_changed, dispatch_uid="scim.access_tokens")


class Issued:
    """An access token just issued, and the seconds it lives (`expires_in`, RFC 6749 §5.1)."""

    __slots__ = ("expires_in", "token")

    def __init__(self, token: str, expires_in: int) -> None:
        self.token, self.expires_in = token, expires_in


def access_token_grant(*, directory: Directory, secret_id: str | None = None, now: float | None = None) -> Issued:
    """A token for `directory`'s OAuth client, obtained with its client secret `secret_id` (by default the
    newest unexpired one), valid lifetime() seconds from `now` (the clock's time) but never past the
    secret's expiry, or until that secret is revoked. The secret must exist and not have expired."""
    at = clock() if now is None else now
    live = secrets_live(directory.scim_oauth_secrets, at)
    entry = next((e for e in live if secret_id is None or e["id"] == secret_id), None)
    if entry is None:
        raise ValueError("the directory has no OAuth client secret by that id, unexpired: it issues no token")
    start = int(at)
    expires = min(start + lifetime(), secret_expires_epoch(entry))
    payload = (
        bytes([_VERSION])
        + directory.id.bytes
        + expires.to_bytes(8, "big")
        + uuid.UUID(entry["id"]).bytes
        + secrets.token_bytes(8)
    )
    return Issued(PREFIX + (payload + _mac(entry["hash"], payload)).hex(), expires - start)


def access_token_issue(*, directory: Directory, secret_id: str | None = None, now: float | None = None) -> str:
    """The token of `access_token_grant`."""
    return access_token_grant(directory=directory, secret_id=secret_id, now=now).token


def access_token_check(presented: str, directory: Directory | None, now: float | None = None) -> bool | None:
    """None when `presented` is not shaped like an access token (a SCIM secret never is: 43 url-safe
    characters, no dot), so it is checked as a static secret and never as a token. Else whether it is a
    token of `directory`'s OAuth client that has not expired, MACed with the key of a client secret the
    directory still has. An unknown directory, OAuth off, a revoked secret, a token of another directory
    and an expired one are all checked the same way, so the time taken does not tell which."""
    if not presented.startswith(PREFIX) or len(presented) not in (TOKEN_LENGTH, TOKEN_LENGTH_1):
        return None
    stored = directory.scim_oauth_secrets if directory is not None else None
    if len(presented) == TOKEN_LENGTH:
        secret_hash = secret_hash_by_id(stored, presented[_SECRET_ID_START:_SECRET_ID_END])
    else:
        secret_hash = secret_legacy_hash(stored)
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
# Where the secret id lies in a version 2 token's text: after the prefix, version, directory and expiry.
_SECRET_ID_START: Final = len(PREFIX) + 2 * (1 + 16 + 8)
_SECRET_ID_END: Final = _SECRET_ID_START + 32


@lru_cache(maxsize=4096)
def _mac_checked(presented: str, secret_hash: str) -> tuple[int, int]:
    """The directory id (as UUID.int) and expiry a token carries when its MAC is right under the key of
    this client secret's digest (and SECRET_KEY); _NOTHING otherwise. Memoized by those inputs, which is what
    makes an identity provider's next requests with the same token cost a lookup instead of a keyed hash:
    the digest is read from the directory's row on every request, so a revoked secret has no digest to
    check with, and the token is refused (bench/README.md, "OAuth token check memo"). SECRET_KEY is not a
    key of the memo (reading a Django setting costs about what the lookup does): a change of it clears it."""
    try:
        raw = bytes.fromhex(presented[len(PREFIX) :])
    except ValueError:  # not hexadecimal
        return _NOTHING
    size = _PAYLOAD_BYTES if raw[:1] == bytes([_VERSION]) else _PAYLOAD_BYTES_1
    if len(raw) != size + _MAC_BYTES or raw[0] not in (_VERSION, _VERSION_1):
        return _NOTHING
    payload, mac = raw[:size], raw[size:]
    expected = hashlib.blake2s(payload, key=_key(settings.SECRET_KEY, secret_hash), digest_size=_MAC_BYTES).digest()
    if not hmac.compare_digest(mac, expected):
        return _NOTHING
    return int.from_bytes(payload[1:17], "big"), int.from_bytes(payload[17:25], "big")
