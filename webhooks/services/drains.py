"""One drain's run, whichever runs it: the broker's drain task (webhooks.services.drain_task) or the
in-process pool (webhooks.services.drain_pool).

Events are delivered by *drains*, one per (directory, target) key: a drain claims that key's pending
events in batches, oldest first, and sends them in order (webhooks.services.delivery). One drain per key
keeps a directory's events in order, and a slow receiver holds up only its own directory's drain.

A drain works for at most DRAIN_BUDGET seconds (or until its Celery worker begins a warm shutdown),
then hands its key over to a new task (or pool job) at the back of the queue, so directories share the
workers and a task stays far inside its time limit. Its first claim takes one event; then its batches
are sized from the receiver's latency (BATCH_WINDOW), so a slow receiver's events are claimed a few at a
time and a killed worker leaves at most about a second's worth of them `sending`.

With a Redis broker a drain owns its key on the broker's Redis while it works (webhooks.drainflag); the
key's expiry (`key_ttl`) and the times that bound it are here, shared by the kick that sets the key and
the drain that keeps it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings

# Imported as a module, so that a test can resize batches (delivery.BATCH_SIZE) for the drains too.
import webhooks.services.delivery as delivery
import webhooks.services.fanout as fanout
from webhooks.services.delivery import CLAIM_HOLD, BatchResult

logger = logging.getLogger("roster.webhooks")

# Seconds a drain works before handing its key over to a new task (or pool job). Short enough that a
# worker's warm shutdown (which waits for running tasks) is not cut short by a container's grace period.
DRAIN_BUDGET = 10.0
BATCH_WINDOW = 1.0  # seconds of sending a batch is sized for, from the receiver's latency so far
LINGER = 0.25  # seconds an idle drain waits for a wake-up before giving up its key (Redis broker)
KEY_REFRESH = 5.0  # seconds between refreshes of the owned key's expiry

Key = tuple[str, str]  # (directory id, target)


def key_ttl() -> float:
    """Expiry of a drain key: longer than a batch can take between two refreshes (see CLAIM_HOLD), its
    outcomes' recording riding out a lost database connection for RECORD_RETRY (30 s) included: the
    slack below (30 s, LINGER and KEY_REFRESH) covers it. Not made longer, because a longer expiry delays
    the new drain the sweep starts after a worker is killed."""
    return CLAIM_HOLD + float(settings.WEBHOOK_TIMEOUT) + LINGER + KEY_REFRESH + 30.0


class Drain:
    """One drain's run: its key, totals, budget and batch size."""

    def __init__(self, key: Key, should_stop: Callable[[], bool] | None = None) -> None:
        self.key = key
        self.totals = BatchResult()
        self.stop_at = time.monotonic() + DRAIN_BUDGET
        self.should_stop = should_stop
        # One event until the receiver's latency is known: a worker killed during the first attempt to a
        # slow receiver then leaves one event `sending` (reported "worker lost"), not a whole batch that
        # was never sent. A fast receiver costs one small claim per drain before full batches.
        self.limit = 1
        self.between: Callable[[], None] | None = None

    def batch(self) -> Any:
        """Claim and send one batch, sized so that sending it takes about BATCH_WINDOW: a slow
        receiver's events are claimed a few at a time, so a killed worker leaves few of them `sending`."""
        # The endpoints first match the events recorded since the last batch (contract §5.2); their
        # deliveries are sent after the directory's own, each key's drain sending those of its directory.
        since = fanout.enabled_since()
        matched = 0 if since is None else fanout.fanout(directory_id=self.key[0], since=since)
        result = delivery.events_batch_deliver(
            directory_id=self.key[0],
            target=self.key[1],
            limit=self.limit,
            stop_at=self.stop_at,
            should_stop=self.should_stop,
        )
        self.totals.add(result)
        # No endpoint was ever enabled: no delivery can be waiting (they come only from enabled revisions).
        if since is not None and (self.should_stop is None or not self.should_stop()):
            sent = fanout.endpoint_deliveries_send(directory_id=self.key[0], stop_at=self.stop_at)
            self.totals.endpoints += sent.delivered + sent.failed
            # The loop goes on while anything was claimed or matched: a batch "claims" its endpoint
            # deliveries and its matches too.
            result = dataclasses.replace(result, claimed=result.claimed + sent.claimed + matched)
        if result.attempted:
            per_event = result.sending_seconds / result.attempted
            fits = int(BATCH_WINDOW / per_event) if per_event > 0 else delivery.BATCH_SIZE
            self.limit = max(1, min(delivery.BATCH_SIZE, fits))
        return result

    def run(self) -> bool:
        """Claim and send batches until one comes back short of its limit (that claim saw every pending
        event), or the budget is spent or the worker stops; True in the latter case (hand the key over)."""
        while True:
            limit = self.limit
            result = self.batch()
            if result.claimed and (time.monotonic() >= self.stop_at or self.stopping()):
                return True
            if result.claimed < limit:
                return False
            if self.between is not None:
                self.between()

    def stopping(self) -> bool:
        return self.should_stop is not None and self.should_stop()

    def log(self) -> None:
        """One line per drain, not one per event (the per-event "delivered" line is DEBUG)."""
        totals = self.totals
        if totals.claimed:
            logger.info(
                "webhook drain of directory %s (%s): %d delivered, %d failed, %d dropped, %d put back",
                self.key[0],
                self.key[1],
                totals.delivered,
                totals.failed,
                totals.dropped,
                totals.released,
            )
