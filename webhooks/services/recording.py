"""Recording webhook events in the outbox, in the caller's transaction, and asking for delivery after
commit: one kick per (directory, target) per transaction, not one per event (contract §5)."""

from __future__ import annotations

import functools
import logging
import uuid
import weakref
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import metrics
from core.timefmt import iso_utc
from directories.models import Directory
from webhooks import dispatch
from webhooks.models import WebhookEvent

logger = logging.getLogger("roster.webhooks")

_MICROSECOND = timedelta(microseconds=1)


# An event to record: (event_type, data), or (event_type, data, previous_attributes) for `user.updated`
# and `group.updated` (contract §5.1).
EventSpec = tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], dict[str, Any]]


def event_payload(
    *,
    directory: Directory,
    event_type: str,
    data: dict[str, Any],
    event_id: uuid.UUID | None = None,
    previous_attributes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    payload = {
        "id": str(event_id or uuid.uuid4()),
        "event": event_type,
        "created_at": iso_utc(datetime.now(UTC)),
        "directory_id": str(directory.id),
        "tenant": directory.tenant,
        "product": directory.product,
        "data": data,
    }
    if previous_attributes is not None:
        payload["previous_attributes"] = previous_attributes  # beside `data`, not inside it
    return payload


class _Kicks:
    """The kicks one transaction of one connection asks for. Every record registers its own
    after-commit callback (Django discards those of a savepoint that rolls back, together with its
    rows, and all of them when the transaction rolls back); the first callback to run marks the batch
    committed, and of the callbacks for one (directory, target) only the first kicks: a drain claims
    every pending event of the key, so a second kick would only cost a second broker round trip."""

    __slots__ = ("committed", "kicked")

    def __init__(self) -> None:
        self.committed = False
        self.kicked: set[tuple[uuid.UUID, str]] = set()

    def kick(self, directory_id: uuid.UUID, target: str, event_types: tuple[str, ...]) -> None:
        self.committed = True
        key = (directory_id, target)
        if key not in self.kicked:
            self.kicked.add(key)
            dispatch.kick(directory_id, target)
        metrics.events_recorded(event_types)  # after the commit: a rolled-back change counts nothing


# The open batch of each database connection (connections belong to one thread). A batch whose
# transaction rolled back ran no callback and kicked nothing, so the next transaction can use it.
_batches: weakref.WeakKeyDictionary[Any, _Kicks] = weakref.WeakKeyDictionary()


def _kick_after_commit(directory_id: uuid.UUID, target: str, event_types: tuple[str, ...]) -> None:
    """Ask for a drain of (directory, target) once the current transaction commits (at once in
    autocommit, where Django runs the callback immediately): one kick per transaction and key."""
    connection = transaction.get_connection()
    batch = _batches.get(connection)
    if batch is None or batch.committed:
        batch = _batches[connection] = _Kicks()
    transaction.on_commit(functools.partial(batch.kick, directory_id, target, event_types))


def _outbox_events(
    directory: Directory, target: str, events: list[tuple[uuid.UUID, str, dict[str, Any]]]
) -> list[WebhookEvent]:
    # Explicit created_at, one microsecond apart, so the events of one transaction are claimed in the order
    # they were recorded (ties on created_at would fall back to the random id).
    now = timezone.now()
    return [
        WebhookEvent(
            id=event_id,
            directory_id=directory.id,
            event_type=payload["event"],
            target=target,
            body=orjson.dumps(payload).decode(),
            created_at=now + i * _MICROSECOND,
        )
        for i, (event_id, _type, payload) in enumerate(events)
    ]


def _outbox_rows(directory: Directory, target: str, events: list[tuple[uuid.UUID, str, dict[str, Any]]]) -> None:
    WebhookEvent.objects.bulk_create(_outbox_events(directory, target, events))
    _kick_after_commit(directory.id, target, tuple(event_type for _id, event_type, _payload in events))


class PreparedEvents:
    """Events built but not yet written, for a service that writes them in the same SQL statement as its
    change (core.rows.statement_run): `rows` are the outbox rows to insert, in recording order
    and parallel to `payloads` (empty when the directory has no webhook)."""

    __slots__ = ("directory_id", "payloads", "rows")

    def __init__(self, directory: Directory, events: list[EventSpec]) -> None:
        recorded = []
        for event_type, data, *previous in events:
            event_id = uuid.uuid4()
            payload = event_payload(
                directory=directory,
                event_type=event_type,
                data=data,
                event_id=event_id,
                previous_attributes=previous[0] if previous else None,
            )
            recorded.append((event_id, event_type, payload))
        self.directory_id = directory.id
        self.payloads = [payload for _id, _type, payload in recorded]
        self.rows = _outbox_events(directory, "directory", recorded) if directory.has_webhook else []

    def written(self, indexes: list[int] | None = None) -> list[dict[str, Any]]:
        """Call once the statement that wrote the rows (all, or only those at `indexes`) has run: asks
        for delivery after commit and returns the payloads of the events that exist."""
        payloads = self.payloads if indexes is None else [self.payloads[i] for i in indexes]
        if self.rows and payloads:
            _kick_after_commit(self.directory_id, "directory", tuple(payload["event"] for payload in payloads))
        return payloads


def events_prepare(*, directory: Directory, events: list[EventSpec]) -> PreparedEvents:
    return PreparedEvents(directory, events)


def events_record(*, directory: Directory, events: list[EventSpec]) -> list[dict[str, Any]]:
    """Record a batch of events (EventSpec) for one directory; returns the contract §5 payloads.

    Must run inside the transaction that makes the change. Rows are written only when the
    directory has a webhook; delivery is asked for after commit.
    """
    prepared = PreparedEvents(directory, events)
    if prepared.rows:
        WebhookEvent.objects.bulk_create(prepared.rows)
    return prepared.written()


def event_record(*, directory: Directory, event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    return events_record(directory=directory, events=[(event_type, data)])[0]


def directory_event_record(*, directory: Directory, event_type: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """Record a dsync.* event for the global WEBHOOK_URL receiver, when one is configured."""
    if not settings.WEBHOOK_URL:
        return None
    event_id = uuid.uuid4()
    payload = event_payload(directory=directory, event_type=event_type, data=data, event_id=event_id)
    _outbox_rows(directory, "global", [(event_id, event_type, payload)])
    return payload
