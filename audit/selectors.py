"""Reads of the audit trail: the admin API's `GET /audit` and the portal's audit page list it through here."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet

from audit.models import AuditEntry
from core.ids import uuid_or_none


def audit_list(*, actor: Any = None, action: str | None = None, directory_id: Any = None) -> QuerySet[AuditEntry]:
    """The audit trail, newest first. `actor` is an admin (AdminUser), an admin id, an email (any case) or
    the actor an entry names in its details (an API key's name, `setup-link:<id>`, `manage.py (<user>)`);
    `action` an exact action name; `directory_id` a directory UUID. An id that cannot match gives none."""
    qs = AuditEntry.objects.all()
    if actor:
        if isinstance(actor, get_user_model()):
            qs = qs.filter(actor=actor)
        elif (actor_id := uuid_or_none(actor)) is not None:
            qs = qs.filter(actor_id=actor_id)
        else:
            # By email: the address stored on the entry keeps working after the admin row is gone. Or by the
            # name an entry gives its actor in its details.
            name = str(actor).strip()
            qs = qs.filter(Q(actor_email__iexact=name) | Q(details__actor=name))
    if action:
        qs = qs.filter(action=action)
    if directory_id:
        pk = uuid_or_none(directory_id)
        if pk is None:
            return AuditEntry.objects.none()
        qs = qs.filter(directory_id=pk)
    return qs.order_by("-created_at", "-id")


def audit_actions() -> list[str]:
    """Every action name the trail holds, sorted: the portal's filter offers them."""
    return sorted(AuditEntry.objects.order_by().values_list("action", flat=True).distinct())
