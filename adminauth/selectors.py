"""Reads of the admin side: admin users, admin tokens and the audit trail."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Q, QuerySet

from adminauth.models import AdminToken, AdminUser, AuditEntry


def _uuid(value: Any) -> uuid.UUID | None:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        return None


def audit_list(
    *, actor: AdminUser | str | uuid.UUID | None = None, action: str | None = None, directory_id: Any = None
) -> QuerySet[AuditEntry]:
    """The audit trail, newest first. `actor` is an AdminUser, an admin id, an email (any case) or the
    actor an entry names in its details (`setup-link:<id>`); `action` an exact action name;
    `directory_id` a directory UUID. An id that cannot match gives none."""
    qs = AuditEntry.objects.all()
    if actor:
        if isinstance(actor, AdminUser):
            qs = qs.filter(actor=actor)
        elif (actor_id := _uuid(actor)) is not None:
            qs = qs.filter(actor_id=actor_id)
        else:
            # By email: the address stored on the entry keeps working after the admin row is gone. Or by the
            # name an entry without an admin gives its actor (an API key's name, `setup-link:<id>`).
            name = str(actor).strip()
            qs = qs.filter(Q(actor_email__iexact=name) | Q(details__actor=name))
    if action:
        qs = qs.filter(action=action)
    if directory_id:
        pk = _uuid(directory_id)
        if pk is None:
            return AuditEntry.objects.none()
        qs = qs.filter(directory_id=pk)
    return qs.order_by("-created_at", "-id")


def admin_user_list() -> QuerySet[AdminUser]:
    return AdminUser.objects.order_by("created_at", "id")


def admin_user_get(*, user_id: Any) -> AdminUser | None:
    pk = _uuid(user_id)
    return None if pk is None else AdminUser.objects.filter(pk=pk).first()


def admin_user_get_by_email(*, email: str) -> AdminUser | None:
    return AdminUser.objects.filter(email_key=(email or "").strip().lower()).first()


def admin_token_get(*, token_id: Any) -> AdminToken | None:
    pk = _uuid(token_id)
    return None if pk is None else AdminToken.objects.select_related("user").filter(pk=pk).first()


def admin_token_list(*, user: AdminUser | None = None) -> QuerySet[AdminToken]:
    qs = AdminToken.objects.select_related("user")
    if user is not None:
        qs = qs.filter(user=user)
    return qs.order_by("created_at", "id")
