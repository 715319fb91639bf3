"""Hand committed outbox events to whatever delivers them (Celery, or in-process without a broker)."""

from __future__ import annotations

from uuid import UUID


def enqueue(event_id: UUID) -> None:
    """Called by transaction.on_commit for each new outbox event. Must never raise into the request."""
