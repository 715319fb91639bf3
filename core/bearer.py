"""The one reading of `Authorization: Bearer <token>` (RFC 6750 §2.1), for every surface that takes one:
SCIM (a directory's secret), the REST API (an API key), the admin API (a JWT) and /metrics.

A header this cannot read is no token, never an exception: each surface answers it with its own 401.
"""

from __future__ import annotations


def bearer_token(header: str | None) -> str | None:
    """The token of an Authorization header, or None: no header, another scheme, or a token that is
    empty or holds a space. The scheme is case-insensitive (RFC 7235 §2.1); space around the token is
    dropped, space inside it is refused (RFC 6750's b64token has none)."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    if not token or " " in token:
        return None
    return token
