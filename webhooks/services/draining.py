"""The kick after commit and its circuit breaker: get committed outbox events drained, by a Celery task per
directory with a broker (webhooks.services.drain_task), else by the in-process pool
(webhooks.services.drain_pool). What a drain does: webhooks.services.drains.

`kick(directory_id, target)` runs from `transaction.on_commit`, once per transaction and key, inside
the SCIM request that made the change, so it must be cheap and must never raise. In the web server it
only hands the key to the process's kicker thread (webhooks.kicker), which does what follows outside the
request, once per key for all the writes handed to it meanwhile. What a kick does:

- **Redis broker** (`redis://`, `rediss://`): one round trip to the broker's Redis, a script that does
  `SET <prefix>:drain:<dir>:<target> 1 NX PX <ttl>` and, only when the key already exists (a drain is
  queued or running), pushes a wake-up for it. Only a kick whose SET succeeded publishes the
  `webhooks.drain` task, so a busy directory costs one publish per drain, not one per event.
  The drain owns the key until it gives it up (webhooks.services.drain_task, whose docstring has its
  loop).

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

- **No broker** (the embedded default): the in-process pool (webhooks.services.drain_pool).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from uuid import UUID

from django.conf import settings

from webhooks.drainflag import DrainFlag
from webhooks.kicker import Kicker
from webhooks.kicker import flush_at_exit as kicker_flush_at_exit
from webhooks.services.drain_pool import in_process_kick
from webhooks.services.drains import Key, key_ttl

logger = logging.getLogger("roster.webhooks")

BROKER_COOLDOWN = 10.0  # seconds without after-commit kicks after one failed

_broker_down_until = 0.0  # time.monotonic() before which after-commit kicks are skipped


def kick(directory_id: UUID | str, target: str) -> None:
    """Called by transaction.on_commit once per transaction and (directory, target). Never raises.
    In the web server, a kick through the broker is made by the process's kicker thread (webhooks.kicker)."""
    key = (str(directory_id), target)
    if _kicker is not None and settings.CELERY_BROKER_URL:
        try:
            _kicker.hand(key)
            return
        except Exception:  # noqa: BLE001 - no thread to be had: kick here, as without a kicker
            logger.exception("webhook kicker unavailable; kicking in the request")
    _kick_now(key)


def _kick_now(key: Key) -> None:
    try:
        if not settings.CELERY_BROKER_URL:
            in_process_kick(key)
        elif time.monotonic() < _broker_down_until:
            logger.info("broker marked down; webhook events of directory %s stay pending for the sweep", key[0])
        else:
            _broker_kick(key)
    except Exception:
        # Anything at all: the change is committed and its events are safe in the outbox.
        logger.exception("webhook drain for directory %s not requested; its events stay pending for the sweep", key[0])


_kicker: Kicker | None = None


def kicks_in_background() -> None:
    """Hand this process's after-commit kicks to a kicker thread (the web server calls this once)."""
    global _kicker
    if _kicker is None:
        _kicker = Kicker(_kick_now)  # type: ignore[arg-type]
        kicker_flush_at_exit(_kicker)


def kick_many(keys: Iterable[tuple[UUID | str, str]]) -> int:
    """The sweep's kick: ignores the breaker (this is how it learns the broker is back) and stops at
    the first failure, leaving the rest pending. Returns how many keys were handed to a drain (one
    requested now, or one already queued or running)."""
    done = 0
    for directory_id, target in keys:
        key = (str(directory_id), target)
        handed = in_process_kick(key) if not settings.CELERY_BROKER_URL else _broker_kick(key)
        if not handed:
            break
        done += 1
    return done


# --- with a broker -------------------------------------------------------------------------------


def _broker_kick(key: Key) -> bool:
    """Ask for a drain of `key` through the broker; False when the broker failed."""
    flags = drain_flag()
    if flags is not None:
        try:
            if not flags.claim_or_wake(*key, key_ttl()):
                return True  # a drain owns the key: it has been woken and will claim the new events
        except Exception as exc:  # noqa: BLE001 - redis errors of any kind: the broker is the same server
            _broker_failed(exc, key)
            return False
    if publish(key):
        return True
    if flags is not None:
        release(flags, key)  # best effort: else the next kicks would wait for the key to expire
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


def publish(key: Key) -> bool:
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


def drain_flag() -> DrainFlag | None:
    """The process's Redis client for the broker's Redis, or None when the broker is not Redis."""
    url = settings.CELERY_BROKER_URL
    if not url or not url.startswith(("redis://", "rediss://")):
        return None
    flags = _drain_flags.get(url)
    if flags is None:
        flags = _drain_flags[url] = DrainFlag(url)
    return flags


def release(flags: DrainFlag, key: Key) -> None:
    try:
        flags.release(*key)
    except Exception as exc:  # noqa: BLE001 - the key expires by itself (key_ttl)
        logger.warning("could not release the drain key of directory %s (%s)", key[0], type(exc).__name__)
