"""Each web process's SCIM health counters: kept in memory, written to the database in batches.

A SCIM request adds to its directory's `Counters` here, after its answer is decided (a lock and a few
dictionary operations; no database), and a background thread writes what gathered every
SCIM_HEALTH_FLUSH_SECONDS: one transaction per directory that had requests
(`services.scim_health_merge`), which adds the batch to the row in SQL under the row's lock, so the
batches of every process and node add up. A SCIM request therefore never waits on its health, and the
health a reader sees lags by at most one interval (plus the flush itself).

Also written: what is left when the process exits normally (a gunicorn worker stopping or recycled, a
test run ending: `atexit`), and whatever a caller asks for with `flush()` (the test suite, with
SCIM_HEALTH_FLUSH_SECONDS = 0, which starts no thread). A batch that cannot be written (the database
is down) is kept and tried again with the next one. What a process killed outright (SIGKILL, the
out-of-memory killer) had not written yet is lost: at most one interval of counters, never a request's
data. A forked child starts empty and starts its own thread on its first request.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import uuid

from django.conf import settings
from django.db import close_old_connections, connections

from directories.activity.services import scim_health_merge
from directories.activity.state import Counters

logger = logging.getLogger("roster.scim")

# How long the exit waits for a flush the background thread has under way, before writing the rest.
EXIT_WAIT_SECONDS = 5.0


class Tally:
    def __init__(self) -> None:
        self._forked()

    def _forked(self) -> None:
        """A fresh state: at start, and in a forked child (the parent's batches are the parent's to write,
        and its lock may have been held by a thread the child does not have)."""
        self._lock = threading.Lock()
        self._pending: dict[uuid.UUID, Counters] = {}
        self._started = False
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None

    def record(self, directory_id: uuid.UUID, *, at: int, status: int, kind: str, mark: bytes | None = None) -> None:
        """Add one request to the directory's counters (state.Counters.add)."""
        with self._lock:
            counters = self._pending.get(directory_id)
            if counters is None:
                counters = self._pending[directory_id] = Counters()
            counters.add(at=at, status=status, kind=kind, mark=mark)
            if not self._started:
                self._start()

    def _start(self) -> None:
        self._started = True
        atexit.register(self._exit)
        interval = float(settings.SCIM_HEALTH_FLUSH_SECONDS)
        if interval > 0:
            self._flusher = threading.Thread(target=self._run, args=(interval,), name="scim-health-flush", daemon=True)
            self._flusher.start()

    def _run(self, interval: float) -> None:
        try:
            while not self._stop.wait(interval):
                # This thread's own database connection, kept as a request's is (CONN_MAX_AGE), dropped when broken.
                close_old_connections()
                try:
                    self.flush()
                finally:
                    close_old_connections()
        finally:
            connections.close_all()  # this thread's connections only (they are per thread)

    def stop(self) -> None:
        """Stop the background thread (it writes nothing more); the test suite's, for a thread it started."""
        self._stop.set()
        if self._flusher is not None:
            self._flusher.join(EXIT_WAIT_SECONDS)

    def flush(self) -> int:
        """Write every batch gathered so far; returns how many directories' batches were written."""
        with self._lock:
            batch, self._pending = self._pending, {}
        failed: dict[uuid.UUID, Counters] = {}
        problem = ""
        for directory_id, counters in batch.items():
            try:
                scim_health_merge(directory_id=directory_id, counters=counters)
            except Exception as exc:  # noqa: BLE001 - any failure keeps the batch for the next flush
                failed[directory_id] = counters
                problem = type(exc).__name__
        if failed:
            logger.warning(
                "SCIM health: the counters of %d director%s not written (%s); kept for the next flush",
                len(failed),
                "y" if len(failed) == 1 else "ies",
                problem,
            )
            now_us = time.time_ns() // 1000
            with self._lock:
                for directory_id, counters in failed.items():
                    counters.hours = counters.recent_hours(now_us)  # older hours would be dropped anyway
                    kept = self._pending.setdefault(directory_id, Counters())
                    kept.merge(counters)
        return len(batch) - len(failed)

    def discard(self) -> None:
        """Forget every batch not written yet (the test suite, between tests)."""
        with self._lock:
            self._pending = {}

    def _exit(self) -> None:
        self.stop()
        try:
            self.flush()
        finally:
            close_old_connections()


_tally = Tally()
os.register_at_fork(after_in_child=_tally._forked)

record = _tally.record
flush = _tally.flush
discard = _tally.discard
