"""Encryption at rest for SCIM and webhook secrets (contract §2 DB_ENCRYPTION_KEY).

Values are sealed with Fernet (AES-128-CBC + HMAC-SHA256, from `cryptography`) under a key derived
from DB_ENCRYPTION_KEY with HKDF-SHA256, so any string of enough entropy works as the setting.
Sealed values carry the prefix ``enc:v1:``; a value without it is read as clear text, so turning
encryption on later does not break existing rows (they are sealed on their next write).

`cryptography` is imported on the first seal or open, not with this module: processes that never meet an
encrypted value (no DB_ENCRYPTION_KEY) do not load it (its Rust library alone reads about 7 MB of PSS
across a node's processes). server.web imports it before the fork when the key is set, so the web workers
share it.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

PREFIX = "enc:v1:"


def load() -> None:
    """Import what sealing and opening use (server.web calls it before the fork when a key is set)."""
    from cryptography.fernet import Fernet  # noqa: F401
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF  # noqa: F401


@lru_cache(maxsize=4)
def _fernet(key: str) -> Fernet:
    from cryptography.fernet import Fernet
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"roster-db-encryption", info=b"fernet-v1").derive(
        key.encode()
    )
    return Fernet(base64.urlsafe_b64encode(derived))


def secret_digest(secret: str) -> str:
    """What is stored of a secret that is only ever compared, never shown again (an API key, a setup
    link's token), and looked up by: its SHA-256 digest in hex. The secrets hashed here carry 256 random
    bits, so a plain digest is enough (a slow hash is for guessable secrets such as passwords)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def seal(value: str) -> str:
    key = settings.DB_ENCRYPTION_KEY
    if not key:
        return value
    return PREFIX + _fernet(key).encrypt(value.encode()).decode()


@lru_cache(maxsize=4096)
def _open_cached(key: str, token: str) -> str:
    """A sealed value opened (remembered: every request reads its directory's secrets), or
    ImproperlyConfigured for one the key cannot open (not remembered: the cache keeps only results)."""
    from cryptography.fernet import InvalidToken

    try:
        return _fernet(key).decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise ImproperlyConfigured("A stored secret cannot be decrypted with the current DB_ENCRYPTION_KEY.") from exc


def unseal(stored: str) -> str:
    if not stored.startswith(PREFIX):
        return stored
    key = settings.DB_ENCRYPTION_KEY
    if not key:
        raise ImproperlyConfigured("A stored secret is encrypted but DB_ENCRYPTION_KEY is not set.")
    return _open_cached(key, stored[len(PREFIX) :])


class EncryptedTextField(models.TextField):
    """A text column holding a secret: sealed on the way in, opened on the way out."""

    def from_db_value(self, value, expression, connection):  # noqa: ANN001, ANN201
        if value is None:
            return value
        return unseal(value)

    def get_prep_value(self, value):  # noqa: ANN001, ANN201
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return seal(value)
