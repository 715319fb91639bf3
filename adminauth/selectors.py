"""Reads of the admin side: admin users and admin tokens (the audit trail's are audit.selectors)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from adminauth.models import AdminToken, AdminUser
from core.ids import uuid_or_none


def admin_user_list() -> QuerySet[AdminUser]:
    return AdminUser.objects.order_by("created_at", "id")


def admin_user_get(*, user_id: Any) -> AdminUser | None:
    pk = uuid_or_none(user_id)
    return None if pk is None else AdminUser.objects.filter(pk=pk).first()


def admin_user_get_by_email(*, email: str) -> AdminUser | None:
    return AdminUser.objects.filter(email_key=(email or "").strip().lower()).first()


def admin_token_get(*, token_id: Any) -> AdminToken | None:
    pk = uuid_or_none(token_id)
    return None if pk is None else AdminToken.objects.select_related("user").filter(pk=pk).first()


def admin_token_list(*, user: AdminUser | None = None) -> QuerySet[AdminToken]:
    qs = AdminToken.objects.select_related("user")
    if user is not None:
        qs = qs.filter(user=user)
    return qs.order_by("created_at", "id")
