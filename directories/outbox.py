"""What the directory writes need from the webhook outbox, handed in by webhooks at start-up.

webhooks builds on this app (its models and services read directories), so nothing here imports it:
webhooks.apps hands its services in (`outbox_set`), as it hands dispatch its publisher. The directory
services (directories.services) and the SCIM activity services (directories.activity) record their
dsync.* events through `outbox()`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class DirectoryOutbox:
    """Record a dsync.* event in the caller's transaction, and forget a deleted directory's events for
    its own webhook."""

    event_record: Callable[..., object]  # (directory=, event_type=, data=)
    events_delete: Callable[..., None]  # (directory_id=)


_outbox: DirectoryOutbox | None = None


def outbox_set(outbox: DirectoryOutbox) -> None:
    global _outbox
    _outbox = outbox


def outbox() -> DirectoryOutbox:
    if _outbox is None:
        raise RuntimeError("no webhook outbox: webhooks.apps did not run (is 'webhooks' installed?)")
    return _outbox
