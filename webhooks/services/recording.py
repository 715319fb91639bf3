"""Recording webhook events in the outbox, in the caller's transaction, and asking for delivery after
commit: one kick per (directory, target) per transaction, not one per event (contract §5).

What an event says is built here (`event_payload`); how it is written and numbered is the outbox's
(webhooks.services.outbox); asking for its drain is webhooks.services.draining's `kick`."""

from __future__ import annotations

import functools
import uuid
import weakref
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import transaction

# Imported as modules, so that a test can replace a kick (draining.kick) for every caller at once.
import webhooks.services.draining as draining
import webhooks.services.outbox as outbox
from core import metrics
from core.timefmt import iso_utc
from directories.models import Directory
from webhooks.services.outbox import PreparedEvents

# An event to record: (event_type, data), or (event_type, data, previous_attributes) for `user.updated`
# and `group.updated` (contract §5.1), or (event_type, data, previous_attributes or None, more) where `more`
# holds further top-level fields of the payload (an approved held change's `held_since`, contract §4.2).
EventSpec = (
    tuple[str, dict[str, Any]]
    | tuple[str, dict[str, Any], dict[str, Any]]
    | tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, Any]]
)


def event_payload(
    *,
    directory: Directory,
    event_type: str,
    data: dict[str, Any],
    numbered: bool = False,
    previous_attributes: dict[str, Any] | None = None,
    more: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The contract §5 payload. A directory's own event is `numbered`: its "sequence" is filled in as it
    is recorded (PreparedEvents); dsync.* events have none. `previous_attributes` (user.updated and
    group.updated, contract §5.1) goes after `data`, beside it, and `more` after that."""
    head = {"id": str(uuid.uuid4()), "event": event_type, "created_at": iso_utc(datetime.now(UTC))}
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
    if more:
        payload.update(more)
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
            draining.kick(directory_id, target)
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


def events_prepare(*, directory: Directory, events: list[EventSpec]) -> PreparedEvents:
    """A directory's events (EventSpec) built for the outbox, to be written by a statement of the caller's
    (scim.storage's single statements compose `PreparedEvents.insert_sql`), then `events_written`."""
    return PreparedEvents(
        directory,
        [
            event_payload(
                directory=directory,
                event_type=event_type,
                data=data,
                numbered=True,
                previous_attributes=rest[0] if rest else None,
                more=rest[1] if len(rest) > 1 else None,
            )
            for event_type, data, *rest in events
        ],
    )


def events_written(
    prepared: PreparedEvents, last: int | None, indexes: list[int] | None = None
) -> list[dict[str, Any]]:
    """Call once the statement that wrote the events of `prepared` (all, or only those at `indexes`) has
    run, with the directory's counter after it (None when it wrote none): numbers them, asks for their
    delivery after commit, and returns their payloads."""
    if last is None:
        return []
    return _kicked(prepared, prepared.numbered(last, indexes))


def _kicked(prepared: PreparedEvents, payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Also without a webhook of its own: the drain matches the events against the webhook endpoints
    # (contract §5.2), which the request never looks at.
    if payloads:
        _kick_after_commit(prepared.directory_id, "directory", tuple(payload["event"] for payload in payloads))
    return payloads


def events_record(*, directory: Directory, events: list[EventSpec]) -> list[dict[str, Any]]:
    """Record a batch of events (EventSpec) for one directory; returns the contract §5 payloads.

    Must run inside the transaction that makes the change, as its last write: taking the numbers locks
    the directory's counter row until that transaction commits (docs/events.md). Delivery is asked for
    after commit when the directory has a webhook.
    """
    if not events:
        return []
    prepared = events_prepare(directory=directory, events=events)
    return _kicked(prepared, outbox.events_insert(prepared))


def event_record(*, directory: Directory, event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    return events_record(directory=directory, events=[(event_type, data)])[0]


def directory_event_record(*, directory: Directory, event_type: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """Record a dsync.* event for the global WEBHOOK_URL receiver, when one is configured."""
    if not settings.WEBHOOK_URL:
        return None
    payload = event_payload(directory=directory, event_type=event_type, data=data)
    outbox.global_event_insert(directory.id, payload)
    _kick_after_commit(directory.id, "global", (event_type,))
    return payload
