"""Hand committed outbox events to whatever delivers them: Celery with a broker, else an in-process pool.

`enqueue` runs from `transaction.on_commit`, i.e. inside the SCIM request that made the change, so it
must be fast and must never raise:

- With CELERY_BROKER_URL: publish the delivery task once, without Celery's publish retries and with
  short broker timeouts (config/celery.py). A failed publish is logged and the event stays `pending`
  in the outbox; the sweep (`webhooks.sweep` on beat, or `manage.py webhooks_sweep`) enqueues it when
  the broker is back. After a failure, on-commit publishes are skipped for BROKER_COOLDOWN seconds
  (a small circuit breaker), so a broker that times out rather than refuses costs one request one
  connect timeout, not every request every time. The sweep ignores the breaker.

- Without a broker (the embedded default): a small, bounded pool of daemon threads in this process.
  Chosen over running the delivery inline in `on_commit` because inline would hold the identity
  provider's response for up to WEBHOOK_TIMEOUT per event (exactly the Jackson defect SPEC §8 names),
  and over a subprocess or a thread per event because a fixed pool bounds concurrency and database
  connections. Each job closes its own thread's database connections when done, which also keeps
  SQLite's file locks short. When the backlog is full the event is left `pending` for the sweep
  instead of growing memory without bound. The trade-off, documented in the README: events queued
  in memory when the process is killed stay `pending` until `manage.py webhooks_sweep` runs.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from uuid import UUID

from django.conf import settings
from django.db import connections

logger = logging.getLogger("roster.webhooks")

IN_PROCESS_WORKERS = 4
IN_PROCESS_BACKLOG = 1000
BROKER_COOLDOWN = 10.0  # seconds without on-commit publishes after one failed

_broker_down_until = 0.0  # time.monotonic() before which on-commit publishes are skipped

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_in_flight: set[Future] = set()


def enqueue(event_id: UUID) -> None:
    """Called by transaction.on_commit for each new outbox event. Must never raise into the request."""
    try:
        if settings.CELERY_BROKER_URL:
            if time.monotonic() < _broker_down_until:
                logger.info("broker marked down; webhook event %s stays pending for the sweep", event_id)
                return
            _publish(event_id)
        else:
            _submit(event_id)
    except Exception:
        # Anything at all: the change is committed and its event is safe in the outbox.
        logger.exception("webhook event %s not enqueued; it stays pending for the sweep", event_id)


def enqueue_many(event_ids: list[UUID]) -> int:
    """The sweep's enqueue: ignores the breaker (this is how it learns the broker is back) and stops
    at the first failed publish, leaving the rest pending. Returns how many were handed over."""
    if not settings.CELERY_BROKER_URL:
        for event_id in event_ids:
            _submit(event_id)
        return len(event_ids)
    for done, event_id in enumerate(event_ids):
        if not _publish(event_id):
            return done
    return len(event_ids)


def _publish(event_id: UUID) -> bool:
    from webhooks.tasks import webhook_event_deliver  # the task module imports services, which import us

    global _broker_down_until
    try:
        webhook_event_deliver.apply_async(args=[str(event_id)], retry=False)
    except Exception as exc:
        _broker_down_until = time.monotonic() + BROKER_COOLDOWN
        # kombu's OperationalError and friends; only the class, so no broker URL or password is logged.
        logger.warning(
            "broker unavailable (%s); webhook event %s stays pending for the sweep", type(exc).__name__, event_id
        )
        return False
    _broker_down_until = 0.0
    return True


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=IN_PROCESS_WORKERS, thread_name_prefix="roster-webhook")
        return _executor


def _submit(event_id: UUID) -> None:
    with _lock:
        backlog = len(_in_flight)
    if backlog >= IN_PROCESS_BACKLOG:
        logger.warning("in-process webhook backlog full; event %s stays pending for the sweep", event_id)
        return
    future = _pool().submit(_run_in_process, event_id)
    with _lock:
        _in_flight.add(future)
    future.add_done_callback(_forget)


def _forget(future: Future) -> None:
    with _lock:
        _in_flight.discard(future)


def _run_in_process(event_id: UUID) -> None:
    from webhooks.services import event_deliver

    try:
        event_deliver(event_id=event_id)
    except Exception:
        logger.exception("in-process delivery of webhook event %s crashed", event_id)
    finally:
        connections.close_all()  # this pool thread's connections only (they are thread-local)


def drain(timeout: float | None = None) -> bool:
    """Wait for in-process deliveries queued so far; True when all finished. Used by the management
    commands (so `webhooks_sweep` without a broker delivers before exiting) and by tests."""
    with _lock:
        pending = set(_in_flight)
    if not pending:
        return True
    _done, not_done = futures_wait(pending, timeout=timeout)
    return not not_done
