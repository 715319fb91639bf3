"""Helpers of the changes feed tests: numbered events written as the write side stores them, and
reading the feed's answers."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta
from typing import Any

import orjson
from django.utils import timezone

from core.timefmt import iso_utc
from directories.models import Directory
from webhooks.models import EventSequence, EventState, WebhookEvent

ISO_MS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")


def numbered(
    directory: Directory,
    sequences: list[int],
    *,
    state: str = EventState.DELIVERED,
    created_at: datetime | None = None,
    last: int | None = None,
) -> list[WebhookEvent]:
    """Events of `directory` with these numbers, as the write side stores them (body with "sequence"
    after "created_at"), and the directory's counter at `last` (default: the largest number)."""
    moment = created_at or timezone.now()
    rows = []
    for sequence in sequences:
        event_id = uuid.uuid4()
        payload = {
            "id": str(event_id),
            "event": "user.created",
            "created_at": iso_utc(moment),
            "sequence": sequence,
            "directory_id": str(directory.id),
            "tenant": directory.tenant,
            "product": directory.product,
            "data": {"id": f"user-{sequence}", "first_name": "Ann"},
        }
        finished = state in (EventState.DELIVERED, EventState.FAILED, EventState.DROPPED)
        rows.append(
            WebhookEvent(
                id=event_id,
                directory_id=directory.id,
                event_type="user.created",
                target="directory",
                body=orjson.dumps(payload).decode(),
                state=state,
                created_at=moment + timedelta(microseconds=sequence),
                finished_at=moment if finished else None,
                sequence=sequence,
                attempts=1 if state in (EventState.DELIVERED, EventState.FAILED) else 0,
                last_attempt_at=moment if state in (EventState.DELIVERED, EventState.FAILED) else None,
                status_code={EventState.DELIVERED: 200, EventState.FAILED: 500}.get(state),
            )
        )
    WebhookEvent.objects.bulk_create(rows)
    top = last if last is not None else max(sequences, default=0)
    EventSequence.objects.update_or_create(directory_id=directory.id, defaults={"last": top})
    return rows


def feed_url(directory: Directory | str, query: str = "", alias: str = "directory-sync") -> str:
    directory_id = directory.id if isinstance(directory, Directory) else directory
    return f"/api/v1/{alias}/{directory_id}/changes" + (f"?{query}" if query else "")


def sequences(response: Any) -> list[int]:
    assert response.status_code == 200, response.content
    return [item["sequence"] for item in response.json()["data"]]


def expired(response: Any) -> str:
    assert response.status_code == 410, response.content
    body = response.json()
    assert body["data"] is None and body["error"]["code"] == 410
    return body["error"]["message"]
