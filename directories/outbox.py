"""What the directory writes need from the webhook outbox, handed in by webhooks at start-up.

webhooks builds on this app (its models and services read directories), so nothing here imports it:
webhooks.apps hands its services in (`outbox_set`), as it hands webhooks.services.draining its publisher. The directory
services (directories.services) and the SCIM activity services (directories.activity) record their
dsync.* events through `outbox()`; the Directory's `events` summary (contract §5.1) is read through it; the
deprovision guard (directories.guard) records the numbered events of the held changes it applies.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DirectoryOutbox:
    """Record a dsync.* event in the caller's transaction, forget a deleted directory's events for its
    own webhook, read where directories' changes feeds stand, and record a directory's own (numbered)
    events."""

    event_record: Callable[..., object]  # (directory=, event_type=, data=)
    events_delete: Callable[..., None]  # (directory_id=)
    # (directory_ids=) -> {directory id: (last sequence given, 0 if none; oldest kept, None if none)},
    # one query for any number of directories; a directory that does not exist is left out.
    feed_heads: Callable[..., dict[uuid.UUID, tuple[int, int | None]]]
    # (directory=, events=) -> their payloads: the directory's events, numbered, as the transaction's last
    # write (webhooks.services.events_record; `events` as its EventSpec).
    changes_record: Callable[..., list[dict[str, Any]]]


_outbox: DirectoryOutbox | None = None


def outbox_set(outbox: DirectoryOutbox) -> None:
    global _outbox
    _outbox = outbox


def outbox() -> DirectoryOutbox:
    if _outbox is None:
        raise RuntimeError("no webhook outbox: webhooks.apps did not run (is 'webhooks' installed?)")
    return _outbox


def feed_heads(directory_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, tuple[int, int | None]]:
    return outbox().feed_heads(directory_ids=directory_ids)
