"""The deprovision guard in production shape (contract §4.2): a wave of parallel deletes against the web
server's worker processes trips it exactly at its limit, and an approval cut by a database outage either
commits whole with its events or not at all, and can be retried: nothing held is lost, every approved change
is delivered once, numbered after the others."""

from __future__ import annotations

import json
import threading
from typing import Any

import psycopg
import pytest

from tests.faults.conftest import Stack
from tests.faults.stack import received_ids, receiver_running, scim_client, scim_create_users, wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(240)]

USERS = 40
DELETES = 30
MAX_USERS = 10


def _parallel_deletes(stack: Stack, directory_id: str, secret: str, user_ids: list[str]) -> list[int]:
    """One DELETE per user, all at once, each on its own connection (the server spreads them over its
    worker processes); their statuses."""
    barrier = threading.Barrier(len(user_ids))
    statuses: list[int] = [0] * len(user_ids)

    def delete(i: int) -> None:
        client = scim_client(stack.roster, secret)
        barrier.wait()
        statuses[i] = client.request("DELETE", f"/api/scim/v2.0/{directory_id}/Users/{user_ids[i]}").status
        client.close()

    threads = [threading.Thread(target=delete, args=(i,), daemon=True) for i in range(len(user_ids))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return statuses


def _approve(stack: Stack, directory_id: str) -> Any:
    client = stack.roster.client(timeout=60)
    try:
        return client.request("POST", f"/api/v1/directory-sync/{directory_id}/held-changes/approve", {})
    finally:
        client.close()


def _counts(stack: Stack, directory_id: str) -> tuple[int, int, int]:
    """(users, held changes, numbered events) of the directory."""
    roster = stack.roster
    users = roster.query("SELECT count(*) FROM directories_directoryuser WHERE directory_id = %s", directory_id)
    held = roster.query("SELECT count(*) FROM directories_heldchange WHERE directory_id = %s", directory_id)
    events = roster.query(
        "SELECT count(*) FROM webhooks_webhookevent WHERE directory_id = %s AND target = 'directory'", directory_id
    )
    return users[0][0], held[0][0], events[0][0]


def test_a_wave_trips_at_the_limit_and_an_approval_survives_a_database_outage(stack: Stack) -> None:
    roster, pg = stack.roster, stack.pg
    with receiver_running(slow_seconds=0) as receiver:
        directory_id, secret = roster.directory_create("guard", receiver.url("/ok"))
        client = roster.client()
        setting = {"deprovision_guard": {"max_users": MAX_USERS, "max_percent": 1}}
        assert client.request("PATCH", f"/api/v1/directory-sync/{directory_id}", setting).status == 200
        client.close()
        user_ids = scim_create_users(roster, directory_id, secret, USERS, "guard")

        # 30 deletes at once on several processes: exactly 10 go through, 20 are held, all answered 204.
        statuses = _parallel_deletes(stack, directory_id, secret, user_ids[:DELETES])
        assert statuses == [204] * DELETES, statuses
        assert _counts(stack, directory_id) == (USERS - MAX_USERS, DELETES - MAX_USERS, USERS + MAX_USERS)
        remaining = {str(u) for (u,) in roster.query(
            "SELECT id FROM directories_directoryuser WHERE directory_id = %s", directory_id
        )}  # fmt: skip
        assert len(set(user_ids[:DELETES]) - remaining) == MAX_USERS
        assert roster.settle([directory_id], timeout=60)
        assert len(received_ids(receiver, directory_id)) == USERS + MAX_USERS

        # An approval held up by a lock on one of its users, then the database stops under it.
        held_user = roster.query(
            "SELECT user_id FROM directories_heldchange WHERE directory_id = %s ORDER BY position DESC LIMIT 1",
            directory_id,
        )[0][0]
        blocker = psycopg.connect(roster.database_url, connect_timeout=5)
        blocker.execute("SELECT 1 FROM directories_directoryuser WHERE id = %s FOR UPDATE", (held_user,))
        answer: dict[str, Any] = {}
        approving = threading.Thread(target=lambda: answer.setdefault("first", _approve(stack, directory_id)))
        approving.start()
        assert wait_for(
            lambda: roster.query("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")[0][0] > 0,
            30,
        ), "the approval never waited for the lock"
        pg.stop("fast")
        approving.join(60)
        pg.start()
        blocker.close()
        first = answer["first"]
        assert first.status == 503, (first.status, first.body[:300])
        assert json.loads(first.body)["data"] is None
        # Nothing of it committed: still 20 held, their users still there, no event numbered for them.
        assert _counts(stack, directory_id) == (USERS - MAX_USERS, DELETES - MAX_USERS, USERS + MAX_USERS)

        # Each web worker's first request since the outage meets its dead connection (a 503) and drops it:
        # probe until every worker has reconnected, as the database outage scenario does, so the retry
        # below and the scenarios after this one meet a live connection.
        probes: list[int] = []
        while len(probes) < 40 and probes[-10:] != [200] * 10:
            client = roster.client()
            probes.append(client.request("GET", "/healthz").status)
            client.close()
        assert probes[-10:] == [200] * 10, probes

        retried = _approve(stack, directory_id)
        assert retried.status == 200, (retried.status, retried.body[:300])
        assert retried.json()["data"] == {"approved": DELETES - MAX_USERS}
        assert _counts(stack, directory_id) == (USERS - DELETES, 0, USERS + DELETES)

        # Every approved deletion delivered once, with held_since, numbered right after the others.
        assert roster.settle([directory_id], timeout=60)
        with receiver.lock:
            payloads = [json.loads(request.body) for request in receiver.requests]
        mine = [p for p in payloads if p["directory_id"] == directory_id]
        assert len(mine) == len({p["id"] for p in mine}) == USERS + DELETES
        approved = [p for p in mine if "held_since" in p]
        assert len(approved) == DELETES - MAX_USERS and {p["event"] for p in approved} == {"user.deleted"}
        assert sorted(p["sequence"] for p in mine) == list(range(1, USERS + DELETES + 1))
        assert sorted(p["sequence"] for p in approved) == list(range(USERS + MAX_USERS + 1, USERS + DELETES + 1))
        client = roster.client()
        shown = client.request("GET", f"/api/v1/directory-sync/{directory_id}")
        client.close()
        assert shown.status == 200, (shown.status, shown.body[:300])
        guard = shown.json()["data"]["guard"]
        assert guard["state"] == "armed" and guard["held"] == 0 and guard["window_deprovisions"] == 0
