"""A Celery worker SIGKILLed while it drains a backlog to a slow receiver (0.5 s per event)."""

from __future__ import annotations

import collections
import math

import pytest

from tests.faults.conftest import Stack
from tests.faults.stack import received_ids, receiver_running, scim_create_users, wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180)]

LATENCY = 0.5  # seconds the receiver takes per event
BACKLOG = 20


def test_worker_killed_mid_batch(stack: Stack) -> None:
    roster, redis = stack.roster, stack.redis
    with receiver_running(slow_seconds=LATENCY) as receiver:
        directory_id, secret = roster.directory_create("kill", receiver.url("/slow"))
        # A backlog: the events are committed while no worker runs, then a worker drains them.
        roster.worker.stop()
        roster.worker = None
        scim_create_users(roster, directory_id, secret, BACKLOG, "kill")
        roster.worker_start()
        assert wait_for(lambda: len(received_ids(receiver, directory_id)) >= 3, 60), "the drain did not start"
        roster.worker_kill()
        sent_before_kill = len(received_ids(receiver, directory_id))
        open_at_kill = roster.events_open(directory_id)

        # The dead drain's claims would be reported after sending_stale_after() and its Redis key would
        # expire after key_ttl() (about 70 s each with a 2 s timeout): both are aged now instead.
        aged = roster.claims_age(directory_id)
        for key in redis.client().scan_iter(f"*drain:{directory_id}*"):
            redis.client().delete(key)
        roster.worker_start()
        assert roster.settle([directory_id], timeout=60), roster.events_open(directory_id)

        deliveries = roster.deliveries(directory_id)
        received = received_ids(receiver, directory_id)
        outcome = collections.Counter("delivered" if d[1] else d[2] for d in deliveries)
        per_event = collections.Counter(d[0] for d in deliveries)
        lost = outcome.get("WorkerLost", 0)
        allowed = max(1, math.ceil(1.0 / LATENCY))
        print(
            f"\nworker killed after {sent_before_kill} of {BACKLOG} events reached a {LATENCY:g} s receiver "
            f"(open at the kill: {open_at_kill}, claims aged: {aged}): outcomes {dict(outcome)}, "
            f"{len(received)} received, {len(received) - len(set(received))} duplicates; "
            f"{lost} lost, at most {allowed} promised"
        )
        assert len(per_event) == BACKLOG and max(per_event.values()) == 1, per_event
        assert set(outcome) <= {"delivered", "WorkerLost"}, outcome
        assert len(received) == len(set(received)), "an event was delivered twice"
        delivered_ids = {d[0] for d in deliveries if d[1]}
        assert delivered_ids <= set(received)
        assert lost <= allowed
