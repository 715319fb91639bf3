"""Writes of the admin side. Every admin action goes through audit_record.

The `admin_directory_*` functions are the audited form of the directory services: the admin API and
the portal both call them, so an action leaves the same single audit entry whichever surface it
came from. Audit entries name what changed, never a secret value.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import bcrypt
import jwt
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction

from adminauth.models import AdminToken, AdminUser, AuditEntry
from core.errors import RosterError, ValidationFailed
from directories import services as directory_services
from directories.models import Directory

PASSWORD_MIN_LENGTH = 8

# Keys whose values must never reach the audit trail, whatever the caller passes in `details` (a boolean
# is no secret: `static_secret_enabled: false` says which way a switch went).
_SECRET_KEYS = ("secret", "token", "password", "key")


def audit_record(
    *,
    actor: AdminUser | None,
    action: str,
    target_type: str = "",
    target_id: str | UUID = "",
    directory_id: UUID | None = None,
    client_ip: str | None = None,
    details: dict[str, Any] | None = None,
) -> AuditEntry:
    """Record one admin action. `details` is for non-secret context (e.g. which fields changed)."""
    clean = {
        k: v for k, v in (details or {}).items() if isinstance(v, bool) or not any(s in k.lower() for s in _SECRET_KEYS)
    }
    return AuditEntry.objects.create(
        actor=actor,
        actor_email=actor.email if actor else "",
        action=action,
        target_type=target_type,
        target_id=str(target_id) if target_id else "",
        directory_id=directory_id,
        client_ip=client_ip,
        details=clean,
    )


# --- audited directory actions (admin API and portal) ---------------------------------------------


def admin_directory_create(*, actor: AdminUser | None, client_ip: str | None, data: dict[str, Any]) -> Directory:
    with transaction.atomic():
        directory = directory_services.directory_create(data=data)
        audit_record(
            actor=actor,
            action="directory.created",
            target_type="directory",
            target_id=directory.id,
            directory_id=directory.id,
            client_ip=client_ip,
            details={
                "name": directory.name,
                "tenant": directory.tenant,
                "product": directory.product,
                "type": directory.type,
                "webhook": bool(directory.webhook_url),
            },
        )
    return directory


# The flags whose new values an update's audit entry states (flags are not secrets).
UPDATE_FLAGS = ("log_webhook_events", "deactivated", "log_scim_requests", "scim_static_secret_enabled")


def directory_update_action(changed: list[str], directory: Directory) -> str:
    """The audit action of one update, on every surface. One update leaves exactly one entry; when the
    update changes only one of the flags the portal offers as a separate switch, the entry carries that
    switch's own name, so `?action=directory.webhook_logging_toggled` finds the toggles an auditor looks
    for. A mixed update is "directory.updated" and its details still say the flags' new values."""
    if changed == ["log_webhook_events"]:
        return "directory.webhook_logging_toggled"
    if changed == ["log_scim_requests"]:
        return "directory.scim_logging_toggled"
    if changed == ["deactivated"]:
        return "directory.deactivated" if directory.deactivated else "directory.activated"
    if changed == ["scim_static_secret_enabled"]:
        # Contract §4.3: every switch of the static SCIM secret is audited under its own name.
        return "directory.scim_static_secret_toggled"
    return "directory.updated"


def directory_update_details(changed: list[str], directory: Directory) -> dict[str, Any]:
    """What an update's audit entry says: the fields changed, the new values of the flags among them,
    the new name and the new guard setting."""
    details: dict[str, Any] = {"fields": changed}
    for flag in UPDATE_FLAGS:
        if flag in changed:
            details[flag] = getattr(directory, flag)
    if "name" in changed:
        details["name"] = directory.name
    if "deprovision_guard" in changed:
        details["deprovision_guard"] = directory.deprovision_guard
    if "scim_rate_limit" in changed:
        details["scim_rate_limit"] = directory.scim_rate_limit
    return details


def admin_directory_update(
    *, actor: AdminUser | None, client_ip: str | None, directory: Directory, data: dict[str, Any]
) -> Directory:
    """Apply a partial update; one audit entry naming the changed fields, none when nothing changed."""
    with transaction.atomic():
        directory, changed = directory_services.directory_update(directory=directory, data=data)
        if changed:
            audit_record(
                actor=actor,
                action=directory_update_action(changed, directory),
                target_type="directory",
                target_id=directory.id,
                directory_id=directory.id,
                client_ip=client_ip,
                details=directory_update_details(changed, directory),
            )
    return directory


def admin_directory_delete(*, actor: AdminUser | None, client_ip: str | None, directory: Directory) -> None:
    directory_id = directory.id
    details = {"name": directory.name, "tenant": directory.tenant, "product": directory.product}
    with transaction.atomic():
        directory_services.directory_delete(directory=directory)
        # The entry keeps the directory id after the row is gone: the trail outlives its targets.
        audit_record(
            actor=actor,
            action="directory.deleted",
            target_type="directory",
            target_id=directory_id,
            directory_id=directory_id,
            client_ip=client_ip,
            details=details,
        )


def admin_directory_scim_secret_rotate(
    *, actor: AdminUser | None, client_ip: str | None, directory: Directory, grace_seconds: int = 0
) -> Directory:
    """Rotate the SCIM secret, the previous one working `grace_seconds` more (contract §4.1)."""
    with transaction.atomic():
        directory = directory_services.directory_scim_secret_rotate(directory=directory, grace_seconds=grace_seconds)
        audit_record(
            actor=actor,
            action="directory.scim_secret_rotated",
            target_type="directory",
            target_id=directory.id,
            directory_id=directory.id,
            client_ip=client_ip,
            details={"grace_seconds": grace_seconds},
        )
    return directory


def admin_directory_previous_scim_secret_revoke(
    *, actor: AdminUser | None, client_ip: str | None, directory: Directory
) -> tuple[Directory, bool]:
    """Stop the previous SCIM secret now; audited when there was one to stop."""
    with transaction.atomic():
        directory, revoked = directory_services.directory_previous_scim_secret_revoke(directory=directory)
        if revoked:
            audit_record(
                actor=actor,
                action="directory.previous_scim_secret_revoked",
                target_type="directory",
                target_id=directory.id,
                directory_id=directory.id,
                client_ip=client_ip,
            )
    return directory, revoked


def admin_directory_scim_oauth_secret_rotate(
    *, actor: AdminUser | None, client_ip: str | None, directory: Directory
) -> tuple[Directory, str]:
    """A new client secret for the directory's OAuth client (contract §4.3); returns the directory and the
    secret, to show once. Audited, never with the secret."""
    with transaction.atomic():
        directory, secret, first = directory_services.directory_scim_oauth_secret_rotate(directory=directory)
        audit_record(
            actor=actor,
            action="directory.scim_oauth_secret_rotated",
            target_type="directory",
            target_id=directory.id,
            directory_id=directory.id,
            client_ip=client_ip,
            details={"first": first},
        )
    return directory, secret


def admin_directory_webhook_secret_rotate(
    *, actor: AdminUser | None, client_ip: str | None, directory: Directory
) -> Directory:
    with transaction.atomic():
        directory = directory_services.directory_webhook_secret_rotate(directory=directory)
        audit_record(
            actor=actor,
            action="directory.webhook_secret_rotated",
            target_type="directory",
            target_id=directory.id,
            directory_id=directory.id,
            client_ip=client_ip,
        )
    return directory


# --- admin users, tokens and login ----------------------------------------------------------------


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


def admin_token_create(*, actor: AdminUser, client_ip: str | None, audit: bool = True) -> tuple[AdminToken, str]:
    """Create an admin token for `actor`; returns the row and the secret, shown only once."""
    token = secrets.token_urlsafe(32)  # 43 characters, well under bcrypt's 72-byte input limit
    with transaction.atomic():
        row = AdminToken.objects.create(user=actor, token_bcrypt=_bcrypt_hash(token))
        if audit:
            audit_record(
                actor=actor,
                action="token.created",
                target_type="admin_token",
                target_id=row.id,
                client_ip=client_ip,
            )
    return row, token


def admin_token_disable(*, actor: AdminUser | None, client_ip: str | None, token: AdminToken) -> AdminToken:
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
                client_ip=client_ip,
                details={"owner": token.user.email if token.user_id else ""},
            )
    return token


def admin_tokens_disable_all(*, actor: AdminUser | None, client_ip: str | None, user: AdminUser) -> int:
    """Disable every enabled token of `user` (ops: a lost laptop); one audit entry, returns the count."""
    with transaction.atomic():
        count = AdminToken.objects.filter(user=user, disabled=False).update(disabled=True)
        if count:
            audit_record(
                actor=actor,
                action="token.disabled_all",
                target_type="admin_user",
                target_id=user.id,
                client_ip=client_ip,
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
    return jwt.encode(claims, settings.ADMIN_JWT_SECRET, algorithm="HS256")


def admin_login_record(*, email: str, client_ip: str | None) -> tuple[AdminUser, AdminToken, str, str]:
    """The work of a successful `_login` (root token already checked): find or create the admin,
    issue an admin token and a JWT, record one "admin.login" entry. Returns (user, token row,
    token secret, jwt)."""
    email = email_normalize(email)
    with transaction.atomic():
        user, created = admin_user_get_or_create(email=email)
        if not user.is_active:
            # A disabled admin stays out, even with the root token: re-enable with `manage.py createadmin`.
            raise RosterError("This admin is disabled.", status=403)
        row, secret = admin_token_create(actor=user, client_ip=client_ip, audit=False)
        user.last_login = datetime.now(UTC)
        user.save(update_fields=["last_login"])
        audit_record(
            actor=user,
            action="admin.login",
            target_type="admin_user",
            target_id=user.id,
            client_ip=client_ip,
            details={"created": created},
        )
    return user, row, secret, admin_jwt_issue(user=user, token=row)


def admin_user_timezone_set(
    *, actor: AdminUser | None, client_ip: str | None, user: AdminUser, timezone_name: Any
) -> AdminUser:
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
            client_ip=client_ip,
            details={"from": previous, "to": name, "email": user.email},
        )
    return user


def admin_user_create(
    *, email: str, password: str, actor: AdminUser | None = None, client_ip: str | None = None
) -> tuple[AdminUser, bool]:
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
            client_ip=client_ip,
            details={"email": user.email, "via": "manage.py"},
        )
    return user, created
