"""Writes of the admin side. Every admin action goes through audit_record."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from adminauth.models import AdminUser, AuditEntry

# Keys whose values must never reach the audit trail, whatever the caller passes in `details`.
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
    clean = {k: v for k, v in (details or {}).items() if not any(s in k.lower() for s in _SECRET_KEYS)}
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
