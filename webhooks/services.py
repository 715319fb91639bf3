"""Recording webhook events in the outbox, in the caller's transaction (SPEC §5)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from functools import partial
from typing import Any

import orjson
from django.conf import settings
from django.db import transaction

from directories.models import Directory
from webhooks import dispatch
from webhooks.models import WebhookEvent


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def event_payload(*, directory: Directory, event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "event": event_type,
        "created_at": _now_iso(),
        "directory_id": str(directory.id),
        "tenant": directory.tenant,
        "product": directory.product,
        "data": data,
    }


def events_record(*, directory: Directory, events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Record a batch of (event_type, data) for one directory; returns the SPEC §5 payloads.

    Must run inside the transaction that makes the change. Rows are written only when the
    directory has a webhook; delivery is scheduled after commit.
    """
    payloads = [event_payload(directory=directory, event_type=t, data=d) for t, d in events]
    if payloads and directory.has_webhook:
        rows = [
            WebhookEvent(
                id=uuid.UUID(p["id"]),
                directory_id=directory.id,
                event_type=p["event"],
                target="directory",
                body=orjson.dumps(p).decode(),
            )
            for p in payloads
        ]
        WebhookEvent.objects.bulk_create(rows)
        for row in rows:
            transaction.on_commit(partial(dispatch.enqueue, row.id))
    return payloads


def event_record(*, directory: Directory, event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    return events_record(directory=directory, events=[(event_type, data)])[0]


def directory_event_record(*, directory: Directory, event_type: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """Record a dsync.* event for the global WEBHOOK_URL receiver, when one is configured."""
    if not settings.WEBHOOK_URL:
        return None
    payload = event_payload(directory=directory, event_type=event_type, data=data)
    row = WebhookEvent.objects.create(
        id=uuid.UUID(payload["id"]),
        directory_id=directory.id,
        event_type=event_type,
        target="global",
        body=orjson.dumps(payload).decode(),
    )
    transaction.on_commit(partial(dispatch.enqueue, row.id))
    return payload
