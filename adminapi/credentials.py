"""Authentication of the admin API (contract §6).

Two credentials are accepted on every route but `_login`:

- `Authorization: id=<adminToken.id> token=<adminToken.token> admin_token=<ADMIN_ROOT_TOKEN>`, the
  parts in any order, separated by spaces (commas tolerated). The root token is compared in constant
  time, the admin token with bcrypt against its stored hash; a disabled token is refused.
- `Authorization: Bearer <JWT>`, HS256 only, signed with ADMIN_JWT_SECRET, `exp` required. A JWT
  issued by `_login` names its admin token (`tokenId`), and stops working when that token is disabled.

Anything else, including a header that cannot be parsed at all, is a 401 in the envelope, the same
bytes whatever the reason.

`actor_of` is the one place the admin API builds its Actor (audit.actors) from the request.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import uuid
from collections import OrderedDict
from threading import Lock

import bcrypt
from django.conf import settings
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from adminauth.models import AdminToken, AdminUser
from adminauth.throttle import failure_record, throttle_wait_seconds
from audit.actors import Actor
from core.bearer import bearer_token
from core.clientaddress import client_ip

_PARTS = ("id", "token", "admin_token")
_SEPARATORS = re.compile(r"[\s,]+")
# Every refusal is this one message, whatever was wrong (missing, malformed, unknown, expired, disabled):
# a 401 that differed by reason would tell a caller holding a stolen or guessed credential how close it
# came, e.g. that a token secret is right but the token disabled, or that a JWT's signature is genuine.
INVALID = "Invalid or missing admin credentials."


class AdminAuthFailed(exceptions.AuthenticationFailed):
    pass


class AdminThrottled(exceptions.Throttled):
    default_detail = "Too many failed attempts from this address. Try again later."

    def __init__(self, wait: int) -> None:
        super().__init__(wait=wait, detail=f"Too many failed attempts from this address. Retry in {wait} seconds.")


def actor_of(request: Request) -> Actor:
    """Who acts on an admin API request: the authenticated admin, or, on `_login` (no admin yet), the root
    token's holder, which the login service replaces with the admin it signs in. From the client's address
    as every surface decides it (TRUSTED_PROXY_COUNT)."""
    user = request.user
    if isinstance(user, AdminUser):
        return Actor(name=user.email, via="admin-api", admin=user, client_ip=client_ip(request))
    return Actor(name="root token", via="admin-api", client_ip=client_ip(request))


def root_token_matches(candidate: str | None) -> bool:
    root = settings.ADMIN_ROOT_TOKEN
    if not root or not candidate:
        return False
    return hmac.compare_digest(root.encode(), candidate.encode())


def parse_token_header(header: str) -> dict[str, str] | None:
    """`id=… token=… admin_token=…` as a dict, or None when any part is missing, empty, repeated or
    unknown. Values may contain `=` (base64 padding); only the first one splits key from value."""
    parts: dict[str, str] = {}
    for chunk in _SEPARATORS.split(header.strip()):
        if not chunk:
            continue
        key, eq, value = chunk.partition("=")
        key = key.lower()
        if not eq or key not in _PARTS or key in parts or not value:
            return None
        parts[key] = value
    return parts if set(parts) == set(_PARTS) else None


# bcrypt at the default cost is slow on purpose, which would make every admin API call that slow (kept
# for speed: bench/README.md, "Code kept for speed", "Admin token memo"). A
# process-local memo of (token id -> SHA-256 of secret and stored hash) skips it for a token this
# worker has already verified; the row is still read on every request, so disabling is immediate.
_VERIFIED: OrderedDict[uuid.UUID, bytes] = OrderedDict()
_VERIFIED_MAX = 1024
_VERIFIED_LOCK = Lock()


def _memo_digest(secret: bytes, token_bcrypt: str) -> bytes:
    return hashlib.sha256(secret + b"\0" + token_bcrypt.encode()).digest()


def _bcrypt_ok(token: AdminToken, secret: bytes) -> bool:
    digest = _memo_digest(secret, token.token_bcrypt)
    with _VERIFIED_LOCK:
        known = _VERIFIED.get(token.id)
    if known is not None and hmac.compare_digest(known, digest):
        return True
    try:
        ok = bcrypt.checkpw(secret, token.token_bcrypt.encode())
    except ValueError:
        # bcrypt 5 refuses inputs over 72 bytes and malformed stored hashes; either way: no match.
        return False
    if ok:
        with _VERIFIED_LOCK:
            _VERIFIED[token.id] = digest
            _VERIFIED.move_to_end(token.id)
            while len(_VERIFIED) > _VERIFIED_MAX:
                _VERIFIED.popitem(last=False)
    return ok


def _token_credentials(header: str, ip: str | None) -> tuple[AdminUser, AdminToken]:
    parts = parse_token_header(header)
    if parts is None:
        raise AdminAuthFailed(INVALID)
    # Checked before the root token is compared and before bcrypt: a throttled client learns
    # nothing from a right guess and costs no hashing.
    wait = throttle_wait_seconds(ip=ip)
    if wait:
        raise AdminThrottled(wait)
    if not root_token_matches(parts["admin_token"]):
        failure_record(ip=ip)
        raise AdminAuthFailed(INVALID)
    try:
        token_id = uuid.UUID(parts["id"])
        secret = parts["token"].encode()
    except (ValueError, UnicodeEncodeError):
        failure_record(ip=ip)
        raise AdminAuthFailed(INVALID) from None
    token = AdminToken.objects.select_related("user").filter(pk=token_id).first()
    if token is None or not _bcrypt_ok(token, secret):
        failure_record(ip=ip)
        raise AdminAuthFailed(INVALID)
    if token.disabled:
        raise AdminAuthFailed(INVALID)
    if not token.user.is_active:
        raise AdminAuthFailed(INVALID)
    return token.user, token


def jwt_claims(raw: str) -> dict:
    """Decoded claims of an admin JWT, or AdminAuthFailed. Only HS256 is accepted (so `alg: none` and
    RS/HS key-confusion tokens fail) and `exp`, `iat` and `userId` must be present."""
    # Imported at the first JWT, not with the module: PyJWT loads `cryptography`, which a deployment that
    # never signs in over the admin API need not map (core.crypto).
    import jwt

    try:
        claims = jwt.decode(
            raw,
            settings.ADMIN_JWT_SECRET,
            algorithms=["HS256"],
            options={"require": ["exp", "iat", "userId"]},
        )
    except (jwt.PyJWTError, ValueError, TypeError):
        raise AdminAuthFailed(INVALID) from None
    if not isinstance(claims, dict):
        raise AdminAuthFailed(INVALID)
    return claims


def _jwt_credentials(raw: str) -> tuple[AdminUser, AdminToken | None]:
    claims = jwt_claims(raw)
    try:
        user_id = uuid.UUID(str(claims["userId"]))
        token_id = uuid.UUID(str(claims["tokenId"])) if claims.get("tokenId") is not None else None
    except ValueError:
        raise AdminAuthFailed(INVALID) from None
    if token_id is not None:
        token = AdminToken.objects.select_related("user").filter(pk=token_id, user_id=user_id).first()
        if token is None or token.disabled:
            raise AdminAuthFailed(INVALID)
        user = token.user
    else:
        token = None
        user = AdminUser.objects.filter(pk=user_id).first()
        if user is None:
            raise AdminAuthFailed(INVALID)
    if not user.is_active:
        raise AdminAuthFailed(INVALID)
    return user, token


def admin_credentials_resolve(header: str | None, *, ip: str | None) -> tuple[AdminUser, AdminToken | None]:
    if not header or not header.strip():
        raise AdminAuthFailed(INVALID)
    token = bearer_token(header)
    if token is not None:
        return _jwt_credentials(token)
    # Anything else is read as the token parts, which refuse a Bearer header whose token is empty or
    # holds a space as well: "Bearer" is not one of them.
    return _token_credentials(header, ip)


class AdminAuthentication(authentication.BaseAuthentication):
    """request.user is the AdminUser; request.auth the AdminToken used (None for a JWT without one)."""

    def authenticate(self, request: Request) -> tuple[AdminUser, AdminToken | None]:
        return admin_credentials_resolve(request.META.get("HTTP_AUTHORIZATION"), ip=client_ip(request))

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="roster-admin"'
