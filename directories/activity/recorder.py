"""What each web process records of its SCIM requests, kept in memory and written in batches: the health
counters of each directory and the entries of its request log (contract §4.1).

A SCIM request, once answered, adds to its directory's `Counters` and may queue one log entry here (a
lock and a few list and dictionary operations; no database), and a background thread writes what
gathered every SCIM_ACTIVITY_FLUSH_SECONDS, sooner when many log entries wait:

- the log entries in one statement (`services.scim_log_write_many`: a COPY on PostgreSQL);
- each directory's counters in one transaction per directory (`services.scim_health_merge`), which adds
  them to its row under the row's lock, so the batches of every process and node add up.

So a SCIM request never waits on a database round trip for its health or its log entry, and neither
is written in the request's transaction; a burst of failed requests costs one statement, not one commit
each. What a reader sees lags by at most one interval (plus the write itself).

Also written: what is left when the process exits normally (a web worker stopping or replaced, a test
run ending: `atexit`, and multiprocessing's exit function for the web server's workers, which granian
starts with multiprocessing and which leave through `os._exit`, skipping `atexit`), and whatever a
caller asks for with `flush()` (the test suite, with SCIM_ACTIVITY_FLUSH_SECONDS = 0, which starts no
thread). What cannot be written because the database is unreachable is kept for the next flush (log
entries up to LOG_QUEUE_BYTES, then the newest are dropped and counted), and said at DEBUG only: every
request that meets the outage already logs its 503. A log entry the database refuses is dropped. Each
other problem is one WARNING line per flush, naming the error's class, never an entry's content. What a
process killed outright (SIGKILL, the out-of-memory killer) had not written yet is lost: at most one
interval of counters and log entries, never a request's data. A forked child starts empty and starts its
own thread.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing.util
import os
import threading
import time
import uuid
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connections

from core.outage import DATABASE_UNAVAILABLE
from directories.activity.services import scim_health_merge, scim_log_write_many
from directories.activity.state import Counters

logger = logging.getLogger("roster.scim")

# How long the exit waits for a flush the background thread has under way, before writing the rest.
EXIT_WAIT_SECONDS = 5.0
# Log entries waiting to be written, in bytes of their bodies: past this the newest are dropped (only
# when the database has been unreachable for a while, or the thread cannot keep up).
LOG_QUEUE_BYTES = 32 * 1024 * 1024
# This many waiting entries wake the thread before its interval ends.
LOG_FLUSH_SOONER = 500

LogEntry = tuple[uuid.UUID, dict[str, Any]]


def _size(entry: dict[str, Any]) -> int:
    return len(entry["request_body"]) + len(entry["response_body"]) + 512


class Recorder:
    def __init__(self) -> None:
        self._forked()

    def _forked(self) -> None:
        """A fresh state: at start, and in a forked child (the parent's batches are the parent's to write,
        and its lock may have been held by a thread the child does not have)."""
        self._lock = threading.Lock()
        self._pending: dict[uuid.UUID, Counters] = {}
        self._entries: list[LogEntry] = []
        self._entries_bytes = 0
        self._dropped = 0
        self._started = False
        self._exited = False
        self._stop = threading.Event()
        self._wake = threading.Event()
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

    def log(self, directory_id: uuid.UUID, entry: dict[str, Any]) -> None:
        """Queue one request-log entry (the field values of ScimLogEntry) for the next flush."""
        size = _size(entry)
        with self._lock:
            if self._entries_bytes + size > LOG_QUEUE_BYTES:
                self._dropped += 1
                return
            self._entries.append((directory_id, entry))
            self._entries_bytes += size
            sooner = len(self._entries) >= LOG_FLUSH_SOONER
            if not self._started:
                self._start()
        if sooner:
            self._wake.set()

    def _start(self) -> None:
        self._started = True
        atexit.register(self._exit)
        multiprocessing.util.Finalize(self, self._exit, exitpriority=10)
        interval = float(settings.SCIM_ACTIVITY_FLUSH_SECONDS)
        if interval > 0:
            self._flusher = threading.Thread(target=self._run, args=(interval,), name="scim-activity", daemon=True)
            self._flusher.start()

    def _run(self, interval: float) -> None:
        try:
            while not self._stop.is_set():
                self._wake.wait(interval)
                self._wake.clear()
                try:
                    # This thread's own database connection, kept as a request's is (CONN_MAX_AGE), dropped
                    # when broken.
                    close_old_connections()
                    self.flush()
                    close_old_connections()
                except Exception as exc:  # noqa: BLE001 - the thread must outlive any one flush
                    logger.warning("SCIM activity: flush failed (%s); next in %s s", type(exc).__name__, interval)
        finally:
            connections.close_all()  # this thread's connections only (they are per thread)

    def flush(self) -> int:
        """Write every log entry and every batch of counters gathered so far; returns how many rows
        were written (log entries, and directories whose counters were)."""
        with self._lock:
            entries, self._entries, self._entries_bytes = self._entries, [], 0
            batch, self._pending = self._pending, {}
            dropped, self._dropped = self._dropped, 0
        if dropped:
            logger.warning("SCIM request log: %d entries dropped, more were waiting than the queue holds", dropped)
        return self._log_flush(entries) + self._health_flush(batch)

    def _log_flush(self, entries: list[LogEntry]) -> int:
        if not entries:
            return 0
        try:
            return scim_log_write_many(entries=entries)
        except DATABASE_UNAVAILABLE as exc:
            with self._lock:  # kept for the next flush, as much as the queue holds
                for directory_id, entry in entries:
                    if self._entries_bytes + _size(entry) > LOG_QUEUE_BYTES:
                        self._dropped += 1
                        continue
                    self._entries.append((directory_id, entry))
                    self._entries_bytes += _size(entry)
            _kept(f"SCIM request log: {len(entries)} entries not written yet", exc)
            return 0
        except Exception:  # noqa: BLE001 - one entry the database refuses must not cost the others
            return self._log_each(entries)

    def _log_each(self, entries: list[LogEntry]) -> int:
        """The entries one by one (their batch was refused): each refused one is dropped."""
        written, problem = 0, ""
        for directory_id, entry in entries:
            try:
                written += scim_log_write_many(entries=[(directory_id, entry)])
            except Exception as exc:  # noqa: BLE001 - logged below, without the entry
                problem = type(exc).__name__
        if written < len(entries):
            logger.warning("SCIM request log: %d entries not written (%s)", len(entries) - written, problem)
        return written

    def _health_flush(self, batch: dict[uuid.UUID, Counters]) -> int:
        failed: dict[uuid.UUID, Counters] = {}
        problem: Exception | None = None
        for directory_id, counters in batch.items():
            try:
                scim_health_merge(directory_id=directory_id, counters=counters)
            except Exception as exc:  # noqa: BLE001 - any failure keeps the batch for the next flush
                failed[directory_id] = counters
                problem = exc
        if problem is not None:
            _kept(
                f"SCIM health: the counters of {len(failed)} director{'y' if len(failed) == 1 else 'ies'} not written",
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
        """Forget everything not written yet (the test suite, between tests)."""
        with self._lock:
            self._pending, self._entries, self._entries_bytes, self._dropped = {}, [], 0, 0

    def stop(self) -> None:
        """Stop the background thread (it writes nothing more); the test suite's, for a thread it started."""
        self._stop.set()
        self._wake.set()
        if self._flusher is not None:
            self._flusher.join(EXIT_WAIT_SECONDS)

    def _exit(self) -> None:
        if self._exited:
            return  # both exit paths ran (a process that is not a multiprocessing child)
        self._exited = True
        self.stop()
        try:
            self.flush()
        finally:
            close_old_connections()


def _kept(what: str, exc: Exception) -> None:
    """Say that something was kept for the next flush. An unreachable database is already one log line
    per request that meets it (their 503s, contract §7.1), so the recorder's retries add none above
    DEBUG; anything else is a WARNING."""
    level = logging.DEBUG if isinstance(exc, DATABASE_UNAVAILABLE) else logging.WARNING
    logger.log(level, "%s (%s); kept for the next flush", what, type(exc).__name__)


_recorder = Recorder()
os.register_at_fork(after_in_child=_recorder._forked)

record = _recorder.record
log = _recorder.log
flush = _recorder.flush
discard = _recorder.discard
