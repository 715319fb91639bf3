"""Recording the audit trail. Call `audit_record` inside the transaction of the change it records, so the
entry and the change commit or roll back together."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from audit.actors import Actor
from audit.models import AuditEntry

# Keys whose values must never reach the audit trail, whatever the caller passes in `details` (a boolean
# is no secret: `static_secret_enabled: false` says which way a switch went).
_SECRET_KEYS = ("secret", "token", "password", "key")


def audit_details_clean(details: dict[str, Any] | None) -> dict[str, Any]:
    return {
        k: v for k, v in (details or {}).items() if isinstance(v, bool) or not any(s in k.lower() for s in _SECRET_KEYS)
    }


def audit_record(
    *,
    actor: Actor,
    action: str,
    target_type: str = "",
    target_id: str | UUID = "",
    directory_id: UUID | None = None,
    details: dict[str, Any] | None = None,
) -> AuditEntry:
    """Record one action. `details` is for non-secret context (e.g. which fields changed); the actor's
    surface and name are added as `via` and `actor`, and what the actor says of itself (`Actor.details`)."""
    admin = actor.admin
    return AuditEntry.objects.create(
        actor=admin,
        actor_email=admin.email if admin is not None else "",
        action=action,
        target_type=target_type,
        target_id=str(target_id) if target_id else "",
        directory_id=directory_id,
        client_ip=actor.client_ip,
        details={"via": actor.via, "actor": actor.name, **audit_details_clean({**actor.details, **(details or {})})},
    )
