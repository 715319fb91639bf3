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
from webhooks.models import EventState, WebhookEvent
from webhooks.services.outbox import sequence_take

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
    numbered: bool = False,
    previous_attributes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The contract §5 payload. A directory's own event is `numbered`: its "sequence" is filled in as it
    is recorded (PreparedEvents); dsync.* events have none. `previous_attributes` (user.updated and
    group.updated, contract §5.1) goes after `data`, beside it."""
    head = {"id": str(event_id or uuid.uuid4()), "event": event_type, "created_at": iso_utc(datetime.now(UTC))}
    if numbered:
        head["sequence"] = None
    payload = head | {
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


# Why an event of a directory without a webhook is recorded already closed: it is in the changes feed
# (an application may only pull), but nothing will ever send it.
NO_WEBHOOK = "directory has no webhook endpoint"


def body_parts(payload: dict[str, Any]) -> tuple[str, str]:
    """A directory event's JSON body around its sequence number: `prefix + str(n) + suffix` is the body,
    with "sequence" right after "created_at". The number is known only once the event is recorded (the
    PostgreSQL single statement joins the parts itself), and the body must be the exact bytes sent."""
    head = {key: payload[key] for key in ("id", "event", "created_at")}
    rest = {key: value for key, value in payload.items() if key not in head and key != "sequence"}
    return orjson.dumps(head).decode()[:-1] + ',"sequence":', "," + orjson.dumps(rest).decode()[1:]


class PreparedEvents:
    """A directory's events built but not yet written: `rows` are the outbox rows to insert, in recording
    order and parallel to `payloads` and `parts` (body_parts). Every directory records its events (they
    are its changes feed); without a webhook they are recorded `dropped` and no drain is asked for.

    They get their numbers as they are written: `numbered(last)` with the directory's counter after the
    write took them (webhooks.services.outbox.sequence_take, or the statement that wrote them)."""

    __slots__ = ("directory_id", "parts", "payloads", "rows", "send")

    def __init__(self, directory: Directory, events: list[EventSpec]) -> None:
        recorded = []
        for event_type, data, *previous in events:
            event_id = uuid.uuid4()
            payload = event_payload(
                directory=directory,
                event_type=event_type,
                data=data,
                event_id=event_id,
                numbered=True,
                previous_attributes=previous[0] if previous else None,
            )
            recorded.append((event_id, event_type, payload))
        self.directory_id = directory.id
        self.payloads = [payload for _id, _type, payload in recorded]
        self.parts = [body_parts(payload) for payload in self.payloads]
        self.rows = _outbox_events(directory, "directory", recorded)
        self.send = directory.has_webhook
        if not self.send:
            for row in self.rows:
                row.state, row.state_reason, row.finished_at = EventState.DROPPED, NO_WEBHOOK, row.created_at

    def numbered(self, last: int, indexes: list[int] | None = None) -> list[dict[str, Any]]:
        """Give the events written (all, or only those at `indexes`, in recording order) the numbers up to
        `last`, and return their payloads."""
        chosen = list(range(len(self.rows))) if indexes is None else indexes
        first = last - len(chosen) + 1
        for offset, i in enumerate(chosen):
            sequence = first + offset
            prefix, suffix = self.parts[i]
            self.rows[i].sequence = self.payloads[i]["sequence"] = sequence
            self.rows[i].body = f"{prefix}{sequence}{suffix}"
        return [self.payloads[i] for i in chosen]

    def written(self, last: int | None, indexes: list[int] | None = None) -> list[dict[str, Any]]:
        """Call once the statement that wrote the rows (all, or only those at `indexes`) has run, with the
        directory's counter after it (None when it wrote none): asks for delivery after commit and
        returns the payloads of the events that exist, with their numbers."""
        if last is None:
            return []
        payloads = self.numbered(last, indexes)
        if self.send and payloads:
            _kick_after_commit(self.directory_id, "directory", tuple(payload["event"] for payload in payloads))
        return payloads


def events_prepare(*, directory: Directory, events: list[EventSpec]) -> PreparedEvents:
    return PreparedEvents(directory, events)


def events_record(*, directory: Directory, events: list[EventSpec]) -> list[dict[str, Any]]:
    """Record a batch of events (EventSpec) for one directory; returns the contract §5 payloads.

    Must run inside the transaction that makes the change, as its last write: taking the numbers locks
    the directory's counter row until that transaction commits (docs/events.md). Delivery is asked for
    after commit when the directory has a webhook.
    """
    if not events:
        return []
    prepared = PreparedEvents(directory, events)
    payloads = prepared.written(sequence_take(directory.id, len(events)))
    WebhookEvent.objects.bulk_create(prepared.rows)
    return payloads


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
