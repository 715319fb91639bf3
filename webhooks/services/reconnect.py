"""Riding out a lost database connection in the drain.

A drain's statements run in autocommit on one thread-local connection. When PostgreSQL restarts, fails
over or terminates the backend, that connection is dead, and Django does not replace it by itself: every
later statement on it fails too. What a drain writes after its attempts (their outcomes, or putting back
the events it did not attempt) must not be lost to a short outage, because a row left `sending` is
reported "worker lost" by the sweep even when the receiver answered 200. So these writes, which only
touch rows still `sending` and are therefore idempotent, are run again on a new connection, with a
short backoff, for up to RECORD_RETRY seconds.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import DatabaseError, InterfaceError, OperationalError, connection

logger = logging.getLogger("roster.webhooks")

T = TypeVar("T")

# Errors that mean the connection (or the server behind it) is gone, as Django raises them. Some other
# failures share OperationalError (a lock timeout, a deadlock); running an idempotent write again is
# right for those too.
CONNECTION_ERRORS = (OperationalError, InterfaceError)

# Seconds a drain keeps trying to record outcomes (and to put events back) through a lost connection:
# long enough for a restart or a failover of a few seconds, and short enough that a drain still
# retrying is never taken for a dead one by the sweep (see delivery.sending_stale_after).
RECORD_RETRY = 30.0
# Pauses between tries; the last one repeats until RECORD_RETRY is spent.
BACKOFF = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)


def reconnect() -> None:
    """Drop this thread's connection after a connection-level error, so the next statement opens a new
    one. Closing a connection the server already dropped may raise: it is gone either way."""
    with contextlib.suppress(DatabaseError):
        connection.close()


def ride_out(
    operation: Callable[[], T],
    *,
    what: str,
    deadline: float,
    undo: Callable[[], None] | None = None,
) -> T:
    """Run `operation`; when it fails on a lost connection, reconnect and run it again, with backoff,
    until it succeeds or `deadline` (time.monotonic()) would pass, then raise its last error.

    `undo`, when given, runs (riding out the same way) after each lost try, before the next: for an
    operation that may have committed although its answer never arrived. Inside a caller's transaction
    nothing is retried: that transaction is lost with its connection, and only its owner can redo it."""
    delays = iter(BACKOFF)
    while True:
        try:
            return operation()
        except CONNECTION_ERRORS as exc:
            if connection.in_atomic_block:
                raise
            reconnect()
            if undo is not None:
                ride_out(undo, what=f"undoing {what}", deadline=deadline)
            delay = next(delays, BACKOFF[-1])
            if time.monotonic() + delay > deadline:
                raise
            # The class only: a connection error's message may carry the server's address.
            logger.warning("database connection lost while %s (%s); trying again", what, type(exc).__name__)
            time.sleep(delay)
