"""The audited form of a resend (contract §5.1): one more attempt of chosen events, queued together with
its audit entry, in one transaction. Every surface that resends goes through here: the REST API (the
actor is the API key), the admin API and the portal (the admin), `manage.py webhooks_resend` (the OS
user running it).

A refused resend (400, 409) queues nothing and leaves no entry: nothing happened.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from adminauth.models import AdminUser
from adminauth.services import audit_record
from directories.models import Directory
from webhooks.services import changes_resend

ACTION = "directory.events_resent"


def _ids_text(event_ids: list[Any]) -> list[str]:
    # Called once the service accepted them: each is a UUID or its text.
    return list(dict.fromkeys(str(uuid.UUID(str(value))) for value in event_ids))


def changes_resend_audited(
    *,
    directory: Directory,
    first: Any = None,
    last: Any = None,
    event_ids: Any = None,
    actor: AdminUser | None,
    actor_name: str,
    via: str,
    client_ip: str | None = None,
    details: dict[str, Any] | None = None,
) -> int:
    """Queue the resend and record who asked, in one transaction; returns how many events were queued.
    `actor` is the admin (None for an API key or the command), `actor_name` names whoever asked in the
    entry's details (an admin's email, an API key's name, the OS user), `via` the surface."""
    with transaction.atomic():
        queued = changes_resend(directory=directory, first=first, last=last, event_ids=event_ids, actor=actor_name)
        asked: dict[str, Any] = (
            {"event_ids": _ids_text(event_ids)} if event_ids is not None else {"from": first, "to": last}
        )
        audit_record(
            actor=actor,
            action=ACTION,
            target_type="directory",
            target_id=directory.id,
            directory_id=directory.id,
            client_ip=client_ip,
            details={
                "via": via,
                "actor": actor_name,
                "name": directory.name,
                **asked,
                "queued": queued,
                **(details or {}),
            },
        )
    return queued
