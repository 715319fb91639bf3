"""The audited form of resolving held changes (contract §4.2): approve or discard changes the deprovision
guard holds, and record who did it with the count, in one transaction. Every surface that resolves goes
through here: the REST API (the actor is the API key), the admin API and the portal (the admin),
`manage.py directories held` (the OS user running it).

A refused resolution (an unknown id: 400) changes nothing and leaves no entry: nothing happened.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from adminauth.models import AdminUser
from adminauth.services import audit_record
from directories.guard.services import held_changes_resolve
from directories.models import Directory

APPROVED = "directory.held_changes_approved"
DISCARDED = "directory.held_changes_discarded"


def held_changes_resolve_audited(
    *,
    directory: Directory,
    ids: list[uuid.UUID] | None,
    approve: bool,
    actor: AdminUser | None,
    actor_name: str,
    via: str,
    client_ip: str | None = None,
    details: dict[str, Any] | None = None,
) -> int:
    """Approve (or discard) the held changes `ids` (None: all) and record who asked; returns how many were
    approved (or discarded), those a change named brought along included. `actor` is the admin (None for
    an API key or the command), `actor_name` names whoever asked, `via` the surface."""
    with transaction.atomic():
        result = held_changes_resolve(directory=directory, ids=ids, approve=approve)
        audit_record(
            actor=actor,
            action=APPROVED if approve else DISCARDED,
            target_type="directory",
            target_id=directory.id,
            directory_id=directory.id,
            client_ip=client_ip,
            details={
                "via": via,
                "actor": actor_name,
                "name": directory.name,
                "asked": "all" if ids is None else [str(i) for i in ids],
                "count": result.count,
                "rearmed": result.rearmed,
                **(details or {}),
            },
        )
    return result.count
