"""Helpers of the changes feed and resend tests: numbered events written as the write side stores them
(the numbering itself is tested through the SCIM writes that give it), and reading the feed's answers."""

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


def _event_row(
    directory: Directory, sequence: int, state: str, created: datetime, event_type: str, data: dict[str, Any]
) -> WebhookEvent:
    """One numbered event of `directory` as the write side stores it (body with "sequence" after
    "created_at"); a finished one carries the outcome of one attempt (none for a drop)."""
    event_id = uuid.uuid4()
    payload = {
        "id": str(event_id),
        "event": event_type,
        "created_at": iso_utc(created),
        "sequence": sequence,
        "directory_id": str(directory.id),
        "tenant": directory.tenant,
        "product": directory.product,
        "data": data,
    }
    finished = state in (EventState.DELIVERED, EventState.FAILED, EventState.DROPPED)
    attempted = state in (EventState.DELIVERED, EventState.FAILED)
    return WebhookEvent(
        id=event_id,
        directory_id=directory.id,
        event_type=event_type,
        target="directory",
        body=orjson.dumps(payload).decode(),
        state=state,
        state_reason="HTTP 500" if state == EventState.FAILED else "",
        created_at=created,
        claimed_at=created if finished or state == EventState.SENDING else None,
        finished_at=created if finished else None,
        sequence=sequence,
        attempts=1 if attempted else 0,
        last_attempt_at=created if attempted else None,
        status_code={EventState.DELIVERED: 200, EventState.FAILED: 500}.get(state),
    )


def numbered(
    directory: Directory,
    sequences: list[int],
    *,
    state: str = EventState.DELIVERED,
    created_at: datetime | None = None,
    last: int | None = None,
) -> list[WebhookEvent]:
    """Events of `directory` with these numbers, all in `state`, and the directory's counter at `last`
    (default: the largest number)."""
    moment = created_at or timezone.now()
    rows = [
        _event_row(
            directory,
            sequence,
            state,
            moment + timedelta(microseconds=sequence),
            "user.created",
            {"id": f"user-{sequence}", "first_name": "Ann"},
        )
        for sequence in sequences
    ]
    WebhookEvent.objects.bulk_create(rows)
    top = last if last is not None else max(sequences, default=0)
    EventSequence.objects.update_or_create(directory_id=directory.id, defaults={"last": top})
    return rows


def feed_events(
    directory: Directory, states: list[str], *, start: int = 1, age: timedelta = timedelta(hours=1)
) -> list[WebhookEvent]:
    """One event per entry of `states`, numbered from `start`, recorded `age` ago, for the tests of
    what resends them. The directory's counter is moved past the last number (never back)."""
    recorded = timezone.now() - age
    rows = [
        _event_row(
            directory,
            start + i,
            state,
            recorded + timedelta(microseconds=i),
            "user.updated",
            {"id": str(uuid.uuid4()), "email": f"user{start + i}@example.com"},
        )
        for i, state in enumerate(states)
    ]
    WebhookEvent.objects.bulk_create(rows)
    counter, _ = EventSequence.objects.get_or_create(directory_id=directory.id)
    counter.last = max(counter.last, start + len(states) - 1)
    counter.save(update_fields=["last"])
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


def assert_gap_free_polls(polls: list[tuple[int, list[int]]], acknowledged: int) -> None:
    """What a feed poller saw while writers ran: every read is the contiguous run from its `after` + 1,
    and all reads together are exactly 1..acknowledged."""
    for after, sequences in polls:
        assert sequences == list(range(after + 1, after + 1 + len(sequences))), (after, sequences)
    assert [s for _after, sequences in polls for s in sequences] == list(range(1, acknowledged + 1))
