"""Rows of a directory's changes feed written straight to the outbox, for the tests of what reads or
resends them (the numbering itself is tested through the SCIM writes that give it)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import orjson
from django.utils import timezone

from directories.models import Directory
from webhooks.models import EventSequence, EventState, WebhookEvent


def feed_events(
    directory: Directory, states: list[str], *, start: int = 1, age: timedelta = timedelta(hours=1)
) -> list[WebhookEvent]:
    """One event per entry of `states`, numbered from `start`, recorded `age` ago; a finished one
    carries the outcome of one attempt. The directory's counter is moved past the last number."""
    recorded = timezone.now() - age
    rows = []
    for i, state in enumerate(states):
        event_id = uuid.uuid4()
        sequence = start + i
        created = recorded + timedelta(microseconds=i)
        payload = {
            "id": str(event_id),
            "event": "user.updated",
            "created_at": created.isoformat(),
            "sequence": sequence,
            "directory_id": str(directory.id),
            "tenant": directory.tenant,
            "product": directory.product,
            "data": {"id": str(uuid.uuid4()), "email": f"user{sequence}@example.com"},
        }
        finished = state in (EventState.DELIVERED, EventState.FAILED, EventState.DROPPED)
        rows.append(
            WebhookEvent(
                id=event_id,
                directory_id=directory.id,
                event_type="user.updated",
                target="directory",
                body=orjson.dumps(payload).decode(),
                state=state,
                state_reason="HTTP 500" if state == EventState.FAILED else "",
                created_at=created,
                claimed_at=created if finished or state == EventState.SENDING else None,
                finished_at=created if finished else None,
                sequence=sequence,
                attempts=1 if finished and state != EventState.DROPPED else 0,
                last_attempt_at=created if finished and state != EventState.DROPPED else None,
                status_code={EventState.DELIVERED: 200, EventState.FAILED: 500}.get(state),
            )
        )
    WebhookEvent.objects.bulk_create(rows)
    last = start + len(states) - 1
    counter, _ = EventSequence.objects.get_or_create(directory_id=directory.id)
    if counter.last < last:
        counter.last = last
        counter.save(update_fields=["last"])
    return rows
