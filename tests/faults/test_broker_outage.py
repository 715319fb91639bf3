"""The broker (Redis) killed for FAULTS_BROKER_DOWN_SECONDS (default 60) while identity providers write."""

from __future__ import annotations

import os

import pytest

from tests.faults.conftest import Stack
from tests.faults.stack import received_ids, receiver_running, users_created_while_down

DOWN_SECONDS = float(os.environ.get("FAULTS_BROKER_DOWN_SECONDS", "60"))

pytestmark = [pytest.mark.faults, pytest.mark.timeout(DOWN_SECONDS + 180)]


def test_broker_killed(stack: Stack) -> None:
    roster, redis = stack.roster, stack.redis
    with receiver_running(slow_seconds=0) as receiver:
        directory_id, secret = roster.directory_create("broker", receiver.url("/ok"))
        statuses = users_created_while_down(roster, redis, directory_id, secret, seconds=DOWN_SECONDS, prefix="broker")
        writes = sum(statuses.values())
        assert roster.settle([directory_id], timeout=90, sweep_every=5), roster.events_open(directory_id)
        deliveries = roster.deliveries(directory_id)
        received = received_ids(receiver, directory_id)
        print(
            f"\nbroker down {DOWN_SECONDS:g} s: {writes} writes answered {dict(statuses)}; after the sweep "
            f"{sum(1 for d in deliveries if d[1])} of {len(deliveries)} events delivered, {len(received)} received, "
            f"{len(received) - len(set(received))} duplicates"
        )
        assert set(statuses) == {201}, statuses
        assert len(deliveries) == writes
        assert all(d[1] for d in deliveries)
        assert len(received) == len(set(received)) == writes
        assert {d[0] for d in deliveries} == set(received)
