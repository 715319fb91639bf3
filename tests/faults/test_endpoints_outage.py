"""Webhook endpoints through a broker outage (contract §5.2): the broker (Redis) is killed for
FAULTS_ENDPOINTS_DOWN_SECONDS (default 20) while an identity provider writes to a directory with two
matching endpoints and one that matches nothing; once it is back and the sweep has run, each matching
endpoint got every event exactly once and the other none."""

from __future__ import annotations

import collections
import json
import os
import time

import pytest

from tests.faults.conftest import Stack
from tests.faults.stack import receiver_running, users_created_while_down, wait_for

DOWN_SECONDS = float(os.environ.get("FAULTS_ENDPOINTS_DOWN_SECONDS", "20"))

pytestmark = [pytest.mark.faults, pytest.mark.timeout(DOWN_SECONDS + 180)]


def _endpoint(stack: Stack, body: dict) -> str:
    client = stack.roster.client()
    resp = client.request("POST", "/api/v1/webhook-endpoints", body)
    client.close()
    assert resp.status == 201, resp.body[:500]
    return resp.json()["data"]["id"]


def _open(stack: Stack, directory_id: str) -> int:
    """Events not matched yet, and endpoint deliveries not closed, of the directory."""
    rows = stack.roster.query(
        "SELECT (SELECT count(*) FROM webhooks_webhookevent WHERE directory_id = %s AND NOT fanned_out) + "
        "(SELECT count(*) FROM webhooks_endpointdelivery WHERE directory_id = %s AND state IN ('pending', 'sending'))",
        directory_id,
        directory_id,
    )
    return int(rows[0][0])


def test_broker_killed_with_endpoints(stack: Stack) -> None:
    roster, redis = stack.roster, stack.redis
    with receiver_running(slow_seconds=0) as receiver:
        directory_id, secret = roster.directory_create("endpoints", receiver.url("/own"))
        tenant = "faults-endpoints"
        _endpoint(stack, {"url": receiver.url("/all"), "events": ["*"]})
        _endpoint(stack, {"url": receiver.url("/tenant"), "tenant": tenant, "format": "standard"})
        _endpoint(stack, {"url": receiver.url("/other"), "tenant": "someone-else"})
        statuses = users_created_while_down(
            roster, redis, directory_id, secret, seconds=DOWN_SECONDS, prefix="endpoints"
        )
        writes = sum(statuses.values())
        assert set(statuses) == {201}, statuses
        assert roster.settle([directory_id], timeout=90, sweep_every=5), roster.events_open(directory_id)
        deadline = time.monotonic() + 90
        while _open(stack, directory_id) and time.monotonic() < deadline:
            roster.sweep()
            wait_for(lambda: not _open(stack, directory_id), 5, 0.25)
        assert _open(stack, directory_id) == 0
        with receiver.lock:
            requests = list(receiver.requests)
        by_path: dict[str, list[str]] = collections.defaultdict(list)
        for request in requests:
            payload = json.loads(request.body)
            if payload.get("directory_id") == directory_id:
                by_path[request.path.split("?")[0]].append(payload["id"])
        counts = {path: len(ids) for path, ids in by_path.items()}
        print(f"\nbroker down {DOWN_SECONDS:g} s: {writes} writes; received {counts}")
        for path in ("/own", "/all", "/tenant"):
            assert len(by_path[path]) == len(set(by_path[path])) == writes, path
        assert set(by_path["/all"]) == set(by_path["/tenant"]) == set(by_path["/own"])
        assert "/other" not in by_path
