"""The client secrets of a directory's OAuth client (contract §4.3), as its row keeps them.

`Directory.scim_oauth_secrets` is a list, newest first, of `{"id", "hash", "hint", "created_at",
"expires_at", "last_used_at"}` (timestamps in ISO 8601, UTC; `hash` the secret's SHA-256 digest, `hint`
its last 4 characters; `legacy` on the one secret carried over from when a directory had a single one).
They live on the directory's row, not in a table of their own, because SCIM authentication reads that row
on every request anyway: an access token names the secret that obtained it, and its check finds that
secret's digest here without a query of its own (scim/access_tokens.py). A revoked secret leaves the list.

These functions only read the list; the writes are services (directories.services.oauth_secrets).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

# At most this many unexpired secrets per directory (contract §4.3).
LIVE_MAX: Final = 5
# Expired secrets stay listed (their expiry tells what stopped); only this many of them are kept.
EXPIRED_KEPT: Final = 5


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def secret_expires_epoch(entry: dict[str, Any]) -> int:
    """The secret's expiry in seconds since the epoch."""
    return int(_instant(entry["expires_at"]).timestamp())


def secret_live(entry: dict[str, Any], now: float | datetime) -> bool:
    """Whether the secret has not expired at `now` (a datetime, or seconds since the epoch)."""
    at = now if isinstance(now, datetime) else datetime.fromtimestamp(now, UTC)
    return at < _instant(entry["expires_at"])


def secrets_live(stored: list[dict[str, Any]] | None, now: float | datetime) -> list[dict[str, Any]]:
    """The unexpired secrets, newest first."""
    return [entry for entry in stored or () if secret_live(entry, now)]


def secret_hash_by_id(stored: list[dict[str, Any]] | None, hex_id: str) -> str:
    """The digest of the secret whose id is `hex_id` (32 hexadecimal digits, as a token carries it); "" when
    the directory has no such secret (revoked, never made) or `hex_id` is not an id. Run on every SCIM
    request with a token: the id is put in its canonical text by slicing (parsing it as a UUID costs
    several times more), and anything that is not lowercase hexadecimal matches no stored id."""
    wanted = f"{hex_id[:8]}-{hex_id[8:12]}-{hex_id[12:16]}-{hex_id[16:20]}-{hex_id[20:]}"
    for entry in stored or ():
        if entry["id"] == wanted:
            return str(entry["hash"])
    return ""


def secret_legacy_hash(stored: list[dict[str, Any]] | None) -> str:
    """The digest of the secret carried over from the single-secret days (the key of version 1 tokens)."""
    for entry in stored or ():
        if entry.get("legacy"):
            return str(entry["hash"])
    return ""


def secret_public(entry: dict[str, Any]) -> dict[str, Any]:
    """A secret as the API lists it (contract §4.3): never its value or digest."""
    return {
        "id": entry["id"],
        "created_at": entry["created_at"],
        "expires_at": entry["expires_at"],
        "last_used_at": entry.get("last_used_at"),
        "hint": entry["hint"],
    }
