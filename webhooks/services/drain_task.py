"""The `webhooks.drain` task's body (`drain_run`): drain one (directory, target) key through the broker.

With a Redis broker the drain owns the key on the broker's Redis (its kick set it, webhooks.services.draining)
until it gives it up:

    loop: claim+send batches until a claim finds nothing (or a short batch, see webhooks.services.drains)
          wait up to LINGER for a wake-up; if one came, sleep GATHER and loop
          DEL the key; claim once more (the re-check); nothing: exit
          otherwise SET NX again: won, loop as owner; lost, send the batch and exit

Why that strands no committed event is in webhooks.services.draining's docstring. With another broker
(RabbitMQ) every kick has its own task, which only drains what it finds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# Imported as modules, so that a test can replace a publish (draining.publish) or LINGER for the drains too.
import webhooks.services.draining as draining
from core.requestid import scope_bound
from webhooks.drainflag import DrainFlag
from webhooks.services import drains
from webhooks.services.drains import KEY_REFRESH, Drain, key_ttl

# Seconds a woken drain waits before it claims, so a steady stream is claimed a few events per batch:
# the claim, directory read, DELETE and wake-up then cost per batch what they would cost per event.
GATHER = 0.03


def drain_run(directory_id: str, target: str, *, should_stop: Callable[[], bool] | None = None) -> dict[str, int]:
    """The body of the `webhooks.drain` task: drain one key, coordinating through the broker's Redis
    when it is Redis. `should_stop` tells a drain that its worker is shutting down. Returns the totals."""
    with scope_bound(directory_id=directory_id):  # its log lines name the directory
        return _drain_run(directory_id, target, should_stop)


def _drain_run(directory_id: str, target: str, should_stop: Callable[[], bool] | None) -> dict[str, int]:
    drain = Drain((str(directory_id), target), should_stop)
    flags = draining.drain_flag()
    try:
        if flags is None:
            # Non-Redis broker: every kick has its own task, so this one only drains what it finds.
            if drain.run():
                draining.publish(drain.key)  # hand over; on failure the rest waits for the sweep
        else:
            _drain_owned(drain, flags)
    finally:
        drain.log()
    totals = drain.totals
    return {"claimed": totals.claimed, "delivered": totals.delivered, "failed": totals.failed}


def _drain_owned(drain: Drain, flags: DrainFlag) -> None:
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
                    if draining.publish(key):  # hand the key over to a new task at the back of the queue
                        owned = False
                    return
                keep_key()
                try:
                    if not flags.wait_for_wake(*key, drains.LINGER):
                        break
                except Exception:  # noqa: BLE001 - cannot wait: give the key up now
                    break
                time.sleep(GATHER)
            draining.release(flags, key)
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
            draining.release(flags, key)  # an exception: let the next kick start a new drain at once
