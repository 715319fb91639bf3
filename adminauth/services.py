"""Writes of the admin side: admin users (created, their password and timezone set), their tokens (made,
disabled) and their sign-ins (the admin API's `_login`, the portal's sign-in and sign-out). Each records its
audit entry in its own transaction, from the Actor the surface hands in.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import bcrypt
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction

from adminauth.models import AdminToken, AdminUser
from audit.actors import Actor
from audit.services import audit_record
from core.errors import RosterError, ValidationFailed

PASSWORD_MIN_LENGTH = 8


def email_normalize(value: Any) -> str:
    """Validate an admin email and return it trimmed; ValidationFailed otherwise."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationFailed("claims.email is required.", field="email")
    email = value.strip()
    local, at, domain = email.rpartition("@")
    # The lowercase form is stored too (email_key, 320 characters) and can be longer than the email:
    # "İ".lower() is two characters. Measured as sent only, 300 "İ" passed here and overflowed the
    # column on PostgreSQL (a 500); SQLite does not enforce lengths, so only PostgreSQL showed it.
    if not at or not local or not domain or " " in email or max(len(email), len(email.lower())) > 320:
        raise ValidationFailed("claims.email must be an email address.", field="email")
    return email


def admin_user_get_or_create(*, email: str) -> tuple[AdminUser, bool]:
    """The admin with this email (compared case-insensitively), created on first sight."""
    email = email_normalize(email)
    user, created = AdminUser.objects.get_or_create(
        email_key=email.lower(), defaults={"email": email, "password": make_password(None)}
    )
    return user, created


def _bcrypt_hash(token: str) -> str:
    return bcrypt.hashpw(token.encode(), bcrypt.gensalt(rounds=settings.ADMIN_BCRYPT_COST)).decode()


def _token_issue(user: AdminUser) -> tuple[AdminToken, str]:
    token = secrets.token_urlsafe(32)  # 43 characters, well under bcrypt's 72-byte input limit
    return AdminToken.objects.create(user=user, token_bcrypt=_bcrypt_hash(token)), token


def admin_token_create(*, actor: Actor) -> tuple[AdminToken, str]:
    """Another admin token for the acting admin; returns the row and the secret, shown only once."""
    with transaction.atomic():
        row, token = _token_issue(actor.admin)
        audit_record(actor=actor, action="token.created", target_type="admin_token", target_id=row.id)
    return row, token


def admin_token_disable(*, token: AdminToken, actor: Actor) -> AdminToken:
    """Disable a token. Disabling is final (a leaked token must not come back); no entry if already off."""
    with transaction.atomic():
        updated = AdminToken.objects.filter(pk=token.pk, disabled=False).update(disabled=True)
        token.disabled = True
        if updated:
            audit_record(
                actor=actor,
                action="token.disabled",
                target_type="admin_token",
                target_id=token.id,
                details={"owner": token.user.email if token.user_id else ""},
            )
    return token


def admin_tokens_disable_all(*, user: AdminUser, actor: Actor) -> int:
    """Disable every enabled token of `user` (ops: a lost laptop); one audit entry, returns the count."""
    with transaction.atomic():
        count = AdminToken.objects.filter(user=user, disabled=False).update(disabled=True)
        if count:
            audit_record(
                actor=actor,
                action="token.disabled_all",
                target_type="admin_user",
                target_id=user.id,
                details={"owner": user.email, "count": count},
            )
    return count


def admin_jwt_issue(*, user: AdminUser, token: AdminToken, now: datetime | None = None) -> str:
    """An HS256 JWT for `user`. `tokenId` ties it to its admin token, so disabling the token (PATCH
    /token/<id> or `manage.py admintokens disable`) also ends the JWT before its `exp`."""
    now = now or datetime.now(UTC)
    claims = {
        "userId": str(user.id),
        "tokenId": str(token.id),
        "iat": int(now.timestamp()),
        "exp": int((now + timedelta(seconds=settings.ADMIN_JWT_LIFETIME_SECONDS)).timestamp()),
    }
    import jwt  # imported at the first sign-in: PyJWT loads `cryptography` (see core.crypto)

    return jwt.encode(claims, settings.ADMIN_JWT_SECRET, algorithm="HS256")


def admin_login_record(*, email: str, actor: Actor) -> tuple[AdminUser, AdminToken, str, str]:
    """The work of a successful `_login` (root token already checked): find or create the admin, issue an
    admin token and a JWT, record one "admin.login" entry. `actor` is the surface's (no admin yet: the root
    token's holder); the entry names the admin who signed in. Returns (user, token row, token secret, jwt)."""
    email = email_normalize(email)
    with transaction.atomic():
        user, created = admin_user_get_or_create(email=email)
        if not user.is_active:
            # A disabled admin stays out, even with the root token: re-enable with `manage.py createadmin`.
            raise RosterError("This admin is disabled.", status=403)
        row, secret = _token_issue(user)
        user.last_login = datetime.now(UTC)
        user.save(update_fields=["last_login"])
        audit_record(
            actor=replace(actor, name=user.email, admin=user),
            action="admin.login",
            target_type="admin_user",
            target_id=user.id,
            details={"created": created},
        )
    return user, row, secret, admin_jwt_issue(user=user, token=row)


def admin_signin_record(*, actor: Actor) -> None:
    """The portal's sign-in of the acting admin (its password already checked and its session started)."""
    audit_record(actor=actor, action="admin.login", target_type="admin_user", target_id=actor.admin.pk)


def admin_signout_record(*, actor: Actor) -> None:
    """The portal's sign-out of the acting admin (recorded before its session ends)."""
    audit_record(actor=actor, action="admin.logout", target_type="admin_user", target_id=actor.admin.pk)


def admin_user_timezone_set(*, user: AdminUser, timezone_name: Any, actor: Actor) -> AdminUser:
    """Set an admin's timezone to a valid IANA name (checked against the zoneinfo database)."""
    if not isinstance(timezone_name, str) or not timezone_name.strip():
        raise ValidationFailed("timezone is required, an IANA name such as Europe/Paris.", field="timezone")
    name = timezone_name.strip()
    try:
        # ZoneInfo also accepts paths like "../x" on some platforms before failing; reject those early.
        if name.startswith(("/", ".")) or ".." in name:
            raise ValueError(name)
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValidationFailed(
            f"Unknown timezone {name!r}: use an IANA name such as Europe/Paris.", field="timezone"
        ) from None
    if user.timezone == name:
        return user
    with transaction.atomic():
        previous = user.timezone
        user.timezone = name
        user.save(update_fields=["timezone"])
        audit_record(
            actor=actor,
            action="admin.timezone_updated",
            target_type="admin_user",
            target_id=user.id,
            details={"from": previous, "to": name, "email": user.email},
        )
    return user


def admin_user_create(*, email: str, password: str, actor: Actor) -> tuple[AdminUser, bool]:
    """Create an admin, or set the password of an existing one (ops: `manage.py createadmin`).
    The password is what the portal signs in with; only Django's hash of it is stored."""
    if not password or len(password) < PASSWORD_MIN_LENGTH:
        raise ValidationFailed(f"The password needs at least {PASSWORD_MIN_LENGTH} characters.", field="password")
    try:
        # Also any validators the deployment configures in AUTH_PASSWORD_VALIDATORS.
        validate_password(password)
    except DjangoValidationError as exc:
        raise ValidationFailed(" ".join(exc.messages), field="password") from None
    with transaction.atomic():
        user, created = admin_user_get_or_create(email=email)
        user.set_password(password)
        user.is_active = True
        user.save(update_fields=["password", "is_active"])
        audit_record(
            actor=actor,
            action="admin.created" if created else "admin.password_set",
            target_type="admin_user",
            target_id=user.id,
            details={"email": user.email},
        )
    return user, created
