"""Kicks and drains: get committed outbox events drained, by a Celery task per directory with a broker, else
by an in-process pool.

Events are delivered by *drains*, one per (directory, target) key: a drain claims that key's pending
events in batches, oldest first, and sends them in order (webhooks.services.delivery). One drain per key
keeps a directory's events in order, and a slow receiver holds up only its own directory's drain.

`kick(directory_id, target)` runs from `transaction.on_commit`, once per transaction and key, inside
the SCIM request that made the change, so it must be cheap and must never raise. What it does:

- **Redis broker** (`redis://`, `rediss://`): one round trip to the broker's Redis, a script that does
  `SET <prefix>:drain:<dir>:<target> 1 NX PX <ttl>` and, only when the key already exists (a drain is
  queued or running), pushes a wake-up for it. Only a kick whose SET succeeded publishes the
  `webhooks.drain` task, so a busy directory costs one publish per drain, not one per event.
  The drain owns the key until it gives it up:

      loop: claim+send batches until a claim finds nothing (or a short batch, see below)
            wait up to LINGER for a wake-up; if one came, sleep GATHER and loop
            DEL the key; claim once more (the re-check); nothing: exit
            otherwise SET NX again: won, loop as owner; lost, send the batch and exit

  Why no committed event is stranded: its kick runs after its commit. Either the kick's SET succeeds,
  and the task it publishes claims after the commit; or the key existed, so a drain owned it at that
  moment and will DEL it later. Every drain's DEL is followed by a claim, which therefore comes after
  the commit and finds the event (or it was already claimed). When that re-check finds events, the
  drain either owns the key again and keeps claiming until empty, or lost the SET to a newer kick,
  whose drain owns the key and claims after the event's commit. A drain also may stop early after a
  batch shorter than its limit: the claim saw every pending event then, and any event committed after
  it kicks while the key is held, which wakes the drain. The LINGER wait keeps a drain alive across
  the short gaps of a steady stream, so the stream costs one publish, not one per gap.
  The owner refreshes the key's expiry while it works; a drain that is killed leaves a key that expires
  after key_ttl(), after which the sweep's kick starts a new drain (its `sending` events are reported
  "worker lost" as before). The sweep kicks exactly like a commit does, only ignoring the breaker: it
  does not publish over a held key, because a held key belongs to a drain that will claim those events
  itself, and a second drain would put two workers on one slow receiver and give up the order.
  A failed SET or publish opens a small circuit breaker: after a failure, kicks are skipped for
  BROKER_COOLDOWN seconds, so a broker that times out rather than refuses costs one request one connect
  timeout, not every request every time. The events wait in the outbox for the sweep, which ignores
  the breaker. Nothing here ever raises into the request.

- **Other brokers** (RabbitMQ): every kick publishes `webhooks.drain`; drains of one key may then
  overlap, which the claim makes safe (each event is claimed once) but not ordered across batches.

- **No broker** (the embedded default): a small, bounded pool of daemon threads in this process, one
  drain per key at a time: a kick for a key whose drain is queued or running here sets its dirty flag,
  and the drain checks the flag under the lock before it exits. Chosen over running the delivery in
  `on_commit` because that would hold the identity provider's response for up to WEBHOOK_TIMEOUT per
  event (exactly the Jackson defect contract §8 names), and over a thread per event because a fixed pool
  bounds concurrency and database connections. Each job closes its own thread's database connections
  when done, which also keeps SQLite's file locks short. When IN_PROCESS_BACKLOG keys are already
  queued, the events are left `pending` for the sweep instead of growing memory without bound. The
  trade-off, documented in docs/deployment.md: events queued in memory when the process is killed stay
  `pending` until `manage.py webhooks_sweep` runs.

A drain works for at most DRAIN_BUDGET seconds (or until its Celery worker begins a warm shutdown),
then hands its key over to a new task (or pool job) at the back of the queue, so directories share the
workers and a task stays far inside its time limit. Its first claim takes one event; then its batches
are sized from the receiver's latency (BATCH_WINDOW), so a slow receiver's events are claimed a few at a
time and a killed worker leaves at most about a second's worth of them `sending`.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import connections

# Imported as a module, so that a test can resize batches (delivery.BATCH_SIZE) for the drains too.
import webhooks.services.delivery as delivery
import webhooks.services.fanout as fanout
from core.requestid import scope_bound
from webhooks.drainflag import DrainFlag
from webhooks.services.delivery import CLAIM_HOLD, BatchResult

logger = logging.getLogger("roster.webhooks")

IN_PROCESS_WORKERS = 4
IN_PROCESS_BACKLOG = 1000  # keys with a drain queued or running in this process
BROKER_COOLDOWN = 10.0  # seconds without after-commit kicks after one failed
# Seconds a drain works before handing its key over to a new task (or pool job). Short enough that a
# worker's warm shutdown (which waits for running tasks) is not cut short by a container's grace period.
DRAIN_BUDGET = 10.0
BATCH_WINDOW = 1.0  # seconds of sending a batch is sized for, from the receiver's latency so far
LINGER = 0.25  # seconds an idle drain waits for a wake-up before giving up its key (Redis broker)
# Seconds a woken drain waits before it claims, so a steady stream is claimed a few events per batch:
# the claim, directory read, DELETE and wake-up then cost per batch what they would cost per event.
GATHER = 0.03
KEY_REFRESH = 5.0  # seconds between refreshes of the owned key's expiry

Key = tuple[str, str]  # (directory id, target)

_broker_down_until = 0.0  # time.monotonic() before which after-commit kicks are skipped


def kick(directory_id: UUID | str, target: str) -> None:
    """Called by transaction.on_commit once per transaction and (directory, target). Never raises."""
    key = (str(directory_id), target)
    try:
        if not settings.CELERY_BROKER_URL:
            _in_process_kick(key)
        elif time.monotonic() < _broker_down_until:
            logger.info("broker marked down; webhook events of directory %s stay pending for the sweep", key[0])
        else:
            _broker_kick(key)
    except Exception:
        # Anything at all: the change is committed and its events are safe in the outbox.
        logger.exception("webhook drain for directory %s not requested; its events stay pending for the sweep", key[0])


def kick_many(keys: Iterable[tuple[UUID | str, str]]) -> int:
    """The sweep's kick: ignores the breaker (this is how it learns the broker is back) and stops at
    the first failure, leaving the rest pending. Returns how many keys were handed to a drain (one
    requested now, or one already queued or running)."""
    done = 0
    for directory_id, target in keys:
        key = (str(directory_id), target)
        handed = _in_process_kick(key) if not settings.CELERY_BROKER_URL else _broker_kick(key)
        if not handed:
            break
        done += 1
    return done


# --- with a broker -------------------------------------------------------------------------------


def _broker_kick(key: Key) -> bool:
    """Ask for a drain of `key` through the broker; False when the broker failed."""
    flags = _drain_flag()
    if flags is not None:
        try:
            if not flags.claim_or_wake(*key, key_ttl()):
                return True  # a drain owns the key: it has been woken and will claim the new events
        except Exception as exc:  # noqa: BLE001 - redis errors of any kind: the broker is the same server
            _broker_failed(exc, key)
            return False
    if _publish(key):
        return True
    if flags is not None:
        _release(flags, key)  # best effort: else the next kicks would wait for the key to expire
    return False


def _broker_failed(exc: BaseException, key: Key) -> None:
    global _broker_down_until
    _broker_down_until = time.monotonic() + BROKER_COOLDOWN
    # kombu's OperationalError, redis' ConnectionError and friends; only the class, so no broker URL or
    # password is logged.
    logger.warning(
        "broker unavailable (%s); webhook events of directory %s stay pending for the sweep", type(exc).__name__, key[0]
    )


# How a drain is asked for through the broker: `publish(directory_id, target)`. webhooks.tasks, the one
# module that knows Celery, provides it, and the app's ready() hands it over (webhooks.apps), so this
# module never imports the task module that imports it.
Publisher = Callable[[str, str], None]
_publisher: Publisher | None = None


def publisher_set(publish: Publisher) -> None:
    global _publisher
    _publisher = publish


def _publish(key: Key) -> bool:
    global _broker_down_until
    try:
        if _publisher is None:
            raise RuntimeError("no drain publisher: webhooks.apps did not run (is 'webhooks' installed?)")
        _publisher(*key)
    except Exception as exc:  # noqa: BLE001
        _broker_failed(exc, key)
        return False
    _broker_down_until = 0.0
    return True


_drain_flags: dict[str, DrainFlag] = {}


def _drain_flag() -> DrainFlag | None:
    """The process's Redis client for the broker's Redis, or None when the broker is not Redis."""
    url = settings.CELERY_BROKER_URL
    if not url or not url.startswith(("redis://", "rediss://")):
        return None
    flags = _drain_flags.get(url)
    if flags is None:
        flags = _drain_flags[url] = DrainFlag(url)
    return flags


def key_ttl() -> float:
    """Expiry of a drain key: longer than a batch can take between two refreshes (see CLAIM_HOLD), its
    outcomes' recording riding out a lost database connection for RECORD_RETRY (30 s) included: the
    slack below (30 s, LINGER and KEY_REFRESH) covers it. Not made longer, because a longer expiry delays
    the new drain the sweep starts after a worker is killed."""
    return CLAIM_HOLD + float(settings.WEBHOOK_TIMEOUT) + LINGER + KEY_REFRESH + 30.0


class _Drain:
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
        matched = fanout.fanout(directory_id=self.key[0])
        result = delivery.events_batch_deliver(
            directory_id=self.key[0],
            target=self.key[1],
            limit=self.limit,
            stop_at=self.stop_at,
            should_stop=self.should_stop,
        )
        self.totals.add(result)
        if self.should_stop is None or not self.should_stop():
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


def drain_run(directory_id: str, target: str, *, should_stop: Callable[[], bool] | None = None) -> dict[str, int]:
    """The body of the `webhooks.drain` task: drain one key, coordinating through the broker's Redis
    when it is Redis. `should_stop` tells a drain that its worker is shutting down. Returns the totals."""
    with scope_bound(directory_id=directory_id):  # its log lines name the directory
        return _drain_run(directory_id, target, should_stop)


def _drain_run(directory_id: str, target: str, should_stop: Callable[[], bool] | None) -> dict[str, int]:
    drain = _Drain((str(directory_id), target), should_stop)
    flags = _drain_flag()
    try:
        if flags is None:
            # Non-Redis broker: every kick has its own task, so this one only drains what it finds.
            if drain.run():
                _publish(drain.key)  # hand over; on failure the rest waits for the sweep
        else:
            _drain_owned(drain, flags)
    finally:
        drain.log()
    totals = drain.totals
    return {"claimed": totals.claimed, "delivered": totals.delivered, "failed": totals.failed}


def _release(flags: DrainFlag, key: Key) -> None:
    try:
        flags.release(*key)
    except Exception as exc:  # noqa: BLE001 - the key expires by itself (key_ttl)
        logger.warning("could not release the drain key of directory %s (%s)", key[0], type(exc).__name__)


def _drain_owned(drain: _Drain, flags: DrainFlag) -> None:
    """Redis broker: this task owns the key (its kick set it) until it releases it; see the module
    docstring for why nothing committed is left behind."""
    key = drain.key
    owned = True
    refreshed = time.monotonic()

    def keep_key() -> None:
        nonlocal refreshed
        if time.monotonic() - refreshed >= KEY_REFRESH:
            try:
                flags.refresh(*key, key_ttl())
            except Exception:  # noqa: BLE001, S110 - it expires sooner than it should: at worst a second drain
                pass
            refreshed = time.monotonic()

    drain.between = keep_key
    try:
        while True:
            while True:
                if drain.run() or drain.stopping():
                    if _publish(key):  # hand the key over to a new task at the back of the queue
                        owned = False
                    return
                keep_key()
                try:
                    if not flags.wait_for_wake(*key, LINGER):
                        break
                except Exception:  # noqa: BLE001 - cannot wait: give the key up now
                    break
                time.sleep(GATHER)
            _release(flags, key)
            owned = False
            if not drain.batch().claimed:  # the re-check
                return
            try:
                owned = flags.claim_or_wake(*key, key_ttl())
            except Exception:  # noqa: BLE001
                owned = False
            if not owned:
                return  # a newer drain owns the key and claims everything after this batch
            refreshed = time.monotonic()
    finally:
        if owned:
            _release(flags, key)  # an exception: let the next kick start a new drain at once


# --- without a broker: the in-process pool -------------------------------------------------------

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


def _in_process_kick(key: Key) -> bool:
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
    drain = _Drain(key)
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
