"""Without a broker (the embedded default): drains run in a small, bounded pool of daemon threads in this
process, one drain per key at a time. A kick for a key whose drain is queued or running here sets its
dirty flag, and the drain checks the flag under the lock before it exits.

Chosen over running the delivery in `on_commit` because that would hold the identity provider's response
for up to WEBHOOK_TIMEOUT per event (exactly the Jackson defect contract §8 names), and over a thread per
event because a fixed pool bounds concurrency and database connections. Each job closes its own thread's
database connections when done, which also keeps SQLite's file locks short. When IN_PROCESS_BACKLOG keys
are already queued, the events are left `pending` for the sweep instead of growing memory without bound.
The trade-off, documented in docs/deployment.md: events queued in memory when the process is killed stay
`pending` until `manage.py webhooks_sweep` runs.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait

from django.db import connections

from core.requestid import scope_bound
from webhooks.services.drains import Drain, Key

logger = logging.getLogger("roster.webhooks")

IN_PROCESS_WORKERS = 4
IN_PROCESS_BACKLOG = 1000  # keys with a drain queued or running in this process

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_in_flight: set[Future] = set()
_dirty: dict[Key, bool] = {}  # keys with a drain queued or running here -> kicked since it last looked


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=IN_PROCESS_WORKERS, thread_name_prefix="roster-webhook")
        return _executor


def in_process_kick(key: Key) -> bool:
    with _lock:
        if key in _dirty:
            _dirty[key] = True  # its drain looks again before it exits
            return True
        if len(_dirty) >= IN_PROCESS_BACKLOG:
            logger.warning("in-process webhook backlog full; events of directory %s stay pending for the sweep", key[0])
            return False
        _dirty[key] = False
    try:
        _submit(key)
    except BaseException:
        with _lock:
            _dirty.pop(key, None)
        raise
    return True


def _submit(key: Key) -> None:
    future = _pool().submit(_run_in_process, key)
    with _lock:
        _in_flight.add(future)
    future.add_done_callback(_forget)


def _forget(future: Future) -> None:
    with _lock:
        _in_flight.discard(future)


def _run_in_process(key: Key) -> None:
    with scope_bound(directory_id=key[0]):  # its log lines name the directory
        _drain_in_process(key)


def _drain_in_process(key: Key) -> None:
    drain = Drain(key)
    registered = True  # this job's entry in _dirty; once given up, a new drain may own the key
    try:
        while True:
            with _lock:
                _dirty[key] = False
            if drain.run():
                with _lock:
                    _dirty[key] = True  # the next job starts with a claim whatever happens meanwhile
                _submit(key)  # at the back of the queue: other directories get their turn
                registered = False
                return
            with _lock:
                if not _dirty[key]:  # no kick since the last claim: nothing committed is left for us
                    del _dirty[key]
                    registered = False
                    return
    except Exception:
        logger.exception("in-process drain of directory %s crashed; its events stay pending for the sweep", key[0])
    finally:
        if registered:
            with _lock:
                _dirty.pop(key, None)
        connections.close_all()  # this pool thread's connections only (they are thread-local)
        drain.log()


def drain(timeout: float | None = None) -> bool:
    """Wait for the in-process drains queued so far (and those they hand over to); True when all
    finished. Used by the management commands (so `webhooks_sweep` without a broker delivers before
    exiting) and by tests."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with _lock:
            pending = {f for f in _in_flight if not f.done()}
        if not pending:
            return True
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            return False
        futures_wait(pending, timeout=remaining)
