"""The JSON shapes of the admin API (contract §6): admin users, admin tokens, audit entries."""

from __future__ import annotations

from typing import Any

from adminauth.models import AdminToken, AdminUser
from audit.models import AuditEntry
from core.timefmt import iso_utc_or_none as iso_utc


def admin_user_data(user: AdminUser) -> dict[str, Any]:
    return {"email": user.email, "id": str(user.id), "timezone": user.timezone}


def admin_user_list_data(user: AdminUser) -> dict[str, Any]:
    return {
        **admin_user_data(user),
        "active": user.is_active,
        "createdAt": iso_utc(user.created_at),
        "lastLogin": iso_utc(user.last_login),
    }


def admin_token_data(token: AdminToken, *, secret: str | None = None) -> dict[str, Any]:
    """An admin token; `token` (the secret) only in the answer that created it, else absent."""
    data: dict[str, Any] = {"id": str(token.id), "userId": str(token.user_id), "tokenBcrypt": token.token_bcrypt}
    if secret is not None:
        data["token"] = secret
    data["disabled"] = token.disabled
    data["createdAt"] = iso_utc(token.created_at)
    return data


def audit_data(entry: AuditEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "createdAt": iso_utc(entry.created_at),
        "actor": {"id": str(entry.actor_id) if entry.actor_id else None, "email": entry.actor_email or None},
        "action": entry.action,
        "target": {"type": entry.target_type or None, "id": entry.target_id or None},
        "directoryId": str(entry.directory_id) if entry.directory_id else None,
        "clientIp": entry.client_ip,
        "details": entry.details,
    }
