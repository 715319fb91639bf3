"""Several nodes and rolling restarts (contract §7.1): two web servers and two Celery workers on one
PostgreSQL and one broker answer alike at once, deliver each event once, and a SIGTERM loses nothing.

Node A is the fault suite's Roster; node B is a second web server (2 workers) and a second Celery worker,
separate processes with the same settings, as a second machine would run them.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bench.httpclient import Client
from tests.faults.conftest import Stack
from tests.faults.stack import (
    ADMIN_ROOT_TOKEN,
    METRICS_TOKEN,
    Roster,
    received_ids,
    receiver_running,
    scim_client,
    user_body,
    wait_for,
)
from tests.webhooks.feedrows import assert_gap_free_polls

pytestmark = [pytest.mark.faults, pytest.mark.timeout(300)]

ADMIN = "/auditlog/admin/v1"
SCIM_CT = "application/scim+json"


@pytest.fixture(scope="module")
def nodes(stack: Stack) -> Iterator[tuple[Roster, Roster]]:
    node_b = stack.roster.other_node(stack.logs / "node-b")
    node_b.start()
    try:
        yield stack.roster, node_b
    finally:
        node_b.stop()


def _admin(roster: Roster) -> dict[str, Any]:
    client = _with_header(roster, f"token={ADMIN_ROOT_TOKEN}")
    resp = client.request(
        "POST", f"{ADMIN}/user/_login", {"claims": {"upstreamToken": "x", "email": "ops@example.com"}}
    )
    client.close()
    assert resp.status == 200, resp.body[:300]
    return resp.json()


def _with_header(roster: Roster, authorization: str) -> Client:
    client = Client(roster.base_url, token="x")
    client._fixed = client._fixed.replace("Authorization: Bearer x\r\n", f"Authorization: {authorization}\r\n")
    return client


def _statuses(roster: Roster, authorization: str, path: str, times: int = 6) -> set[int]:
    """`times` requests on new connections, so that both web workers of the node answer some."""
    seen = set()
    for _ in range(times):
        client = _with_header(roster, authorization)
        seen.add(client.request("GET", path).status)
        client.close()
    return seen


def test_a_change_on_one_node_is_seen_identically_on_the_other_at_once(nodes: tuple[Roster, Roster]) -> None:
    node_a, node_b = nodes
    with receiver_running(slow_seconds=0) as receiver:
        directory_id, secret = node_a.directory_create("nodes", receiver.url("/ok"))
        users = f"/api/scim/v2.0/{directory_id}/Users"
        assert _statuses(node_b, f"Bearer {secret}", users) == {200}  # node B's workers have seen the secret

        # A secret rotation on A: the old secret stops on B at once, the new one works there.
        session = _admin(node_a)
        admin_header = (
            f"id={session['adminToken']['id']} token={session['adminToken']['token']} admin_token={ADMIN_ROOT_TOKEN}"
        )
        rotate = _with_header(node_a, admin_header).request("POST", f"{ADMIN}/directories/{directory_id}/scim-secret")
        assert rotate.status == 200, rotate.body[:300]
        new_secret = rotate.json()["data"]["scim"]["secret"]
        assert _statuses(node_b, f"Bearer {secret}", users) == {401}
        assert _statuses(node_b, f"Bearer {new_secret}", users) == {200}

        # An admin token disabled on A is refused by every worker of B, which had verified it before.
        made = _with_header(node_a, admin_header).request("POST", f"{ADMIN}/token")
        assert made.status == 201, made.body[:300]
        token = made.json()["data"]
        other_header = f"id={token['id']} token={token['token']} admin_token={ADMIN_ROOT_TOKEN}"
        assert _statuses(node_b, other_header, f"{ADMIN}/directories") == {200}
        disabled = _with_header(node_a, admin_header).request(
            "PATCH", f"{ADMIN}/token/{token['id']}", {"disabled": True}
        )
        assert disabled.status == 200, disabled.body[:300]
        assert _statuses(node_b, other_header, f"{ADMIN}/directories") == {401}

        # A directory setting changed on A (deactivated, then active again) applies on B at once.
        rest = node_a.client()
        assert rest.request("PATCH", f"/api/v1/directory-sync/{directory_id}", {"deactivated": True}).status == 200
        assert _statuses(node_b, f"Bearer {new_secret}", users) == {403}
        assert rest.request("PATCH", f"/api/v1/directory-sync/{directory_id}", {"deactivated": False}).status == 200
        assert _statuses(node_b, f"Bearer {new_secret}", users) == {200}

        # A user created on A reads the same on B: the SCIM resource, the list's total, the REST user.
        scim_a, scim_b = scim_client(node_a, new_secret), scim_client(node_b, new_secret)
        created = scim_a.request("POST", users, user_body("both@nodes.example"), content_type=SCIM_CT)
        assert created.status == 201
        user_id = created.json()["id"]
        assert scim_b.request("GET", f"{users}/{user_id}").json() == scim_a.request("GET", f"{users}/{user_id}").json()
        assert scim_b.request("GET", users).json() == scim_a.request("GET", users).json()
        rest_user = f"/api/v1/directory-sync/users/{user_id}?tenant=faults-nodes&product=faults"
        assert node_b.client().request("GET", rest_user).json() == rest.request("GET", rest_user).json()

        # Writes on both nodes, drained by both workers: every event delivered exactly once.
        for i in range(20):
            client = scim_a if i % 2 else scim_b
            assert client.request("POST", users, user_body(f"n{i}@nodes.example"), content_type=SCIM_CT).status == 201
        assert node_a.settle([directory_id], timeout=60), node_a.events_open(directory_id)
        received = received_ids(receiver, directory_id)
        deliveries = node_a.deliveries(directory_id)
        assert len(received) == len(set(received)) == 21, collections.Counter(received).most_common(3)
        assert len(deliveries) == 21 and all(delivered for _id, delivered, _e, _s in deliveries)
        for client in (scim_a, scim_b, rest):
            client.close()


def _lock_user(database_url: str, user_id: str) -> psycopg.Connection:
    conn = psycopg.connect(database_url)
    conn.execute("SELECT 1 FROM directories_directoryuser WHERE id = %s FOR UPDATE", (user_id,))
    return conn


def test_a_rolling_restart_answers_no_5xx_and_leaves_no_event_sending(nodes: tuple[Roster, Roster]) -> None:
    node_a, node_b = nodes
    with receiver_running(slow_seconds=0.1) as receiver:
        directory_id, secret = node_a.directory_create("rolling", receiver.url("/slow"))
        users = f"/api/scim/v2.0/{directory_id}/Users"

        # 1. A request in flight when its node is told to stop is answered: a PATCH held on a row lock.
        user_id = (
            scim_client(node_a, secret)
            .request("POST", users, user_body("held@r.example"), content_type=SCIM_CT)
            .json()["id"]
        )
        lock = _lock_user(node_a.database_url, user_id)
        answer: dict[str, Any] = {}

        def patch() -> None:
            body = {
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [{"op": "replace", "path": "active", "value": False}],
            }
            answer["status"] = (
                scim_client(node_a, secret).request("PATCH", f"{users}/{user_id}", body, content_type=SCIM_CT).status
            )

        held = threading.Thread(target=patch)
        held.start()
        time.sleep(1.0)
        web = node_a.web
        os.kill(web.pid, signal.SIGTERM)
        time.sleep(1.5)
        lock.commit()
        lock.close()
        held.join(30)
        assert answer == {"status": 200}
        assert web.proc.wait(40) == 0
        web.stop()

        # 2. Under load on both nodes: node A's web server restarts, then node A's worker, mid-delivery.
        statuses: list[int] = []
        stop = threading.Event()

        def load() -> None:
            i = 0
            while not stop.is_set():
                for node in (node_a, node_b):  # a load balancer: the next node when one refuses
                    client = scim_client(node, secret, timeout=30)
                    try:
                        resp = client.request("POST", users, user_body(f"load{i}@r.example"), content_type=SCIM_CT)
                    except OSError:
                        continue  # refused or reset before an answer: nothing was processed, try the other
                    finally:
                        client.close()
                    statuses.append(resp.status)
                    break
                i += 1
                time.sleep(0.1)  # an identity provider's pace, so the backlog drains within the test

        node_a.web_start()  # back after the first scenario
        loader = threading.Thread(target=load)
        loader.start()
        try:
            time.sleep(2)
            assert Roster.terminate(node_a.web) == 0  # granian finishes what it serves, then exits 0
            node_a.web_start()
            time.sleep(2)
            assert wait_for(lambda: len(received_ids(receiver, directory_id)) >= 3, 30)
            assert Roster.terminate(node_a.worker) == 0  # Celery's warm shutdown: the attempt under way ends
            node_a.worker_start()
            time.sleep(2)
        finally:
            stop.set()
            loader.join(60)
        assert statuses and all(status < 500 for status in statuses), collections.Counter(statuses)
        assert set(statuses) <= {201, 409}  # 409: a retry of a create another node had committed
        # Nothing is left `sending` by the restarts: the sweep only delivers what was put back pending.
        assert node_a.settle([directory_id], timeout=90), node_a.events_open(directory_id)
        deliveries = node_a.deliveries(directory_id)
        outcomes = collections.Counter("delivered" if d[1] else d[2] for d in deliveries)
        received = received_ids(receiver, directory_id)
        assert outcomes.get("WorkerLost", 0) == 0 and set(outcomes) == {"delivered"}, outcomes
        assert len(received) == len(set(received)) == len(deliveries)
        assert len({d[0] for d in deliveries}) == len(deliveries)
        with contextlib.suppress(Exception):
            metrics = Client(node_b.base_url, token=METRICS_TOKEN).request("GET", "/metrics")
            print(
                f"\nrolling restart: {collections.Counter(statuses)} answers, {len(received)} events delivered once; "
                f"node B /metrics {metrics.status}"
            )
        assert Path(node_a.logs / "metrics" / "web").is_dir()


def test_concurrent_writes_on_two_nodes_give_one_gap_free_feed(nodes: tuple[Roster, Roster]) -> None:
    """Contract §5.1 across processes: eight clients write one directory's users through both nodes' web
    servers while a reader polls the changes feed of either node from the last sequence it saw. Every
    read is the contiguous run from after+1, and the feed ends as exactly 1..N, N the acknowledged writes."""
    node_a, node_b = nodes
    with receiver_running(slow_seconds=0) as receiver:
        directory_id, secret = node_a.directory_create("feed", receiver.url("/ok"))
        users = f"/api/scim/v2.0/{directory_id}/Users"
        feed = f"/api/v1/directory-sync/{directory_id}/changes"
        statuses: list[int] = []
        failures: list[BaseException] = []
        polls: list[tuple[int, list[int]]] = []
        writers_done = threading.Event()

        def write(index: int) -> None:
            client = scim_client(node_a if index % 2 else node_b, secret)
            try:
                for n in range(4):
                    created = client.request(
                        "POST", users, user_body(f"f{index}-{n}@feed.example"), content_type=SCIM_CT
                    )
                    statuses.append(created.status)
                    if created.status != 201:
                        continue
                    for r in range(3):
                        patch = {
                            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                            "Operations": [{"op": "replace", "path": "name.givenName", "value": f"g{index}-{n}-{r}"}],
                        }
                        path = f"{users}/{created.json()['id']}"
                        statuses.append(client.request("PATCH", path, patch, content_type=SCIM_CT).status)
            except BaseException as exc:
                failures.append(exc)
            finally:
                client.close()

        def read() -> None:
            clients = [node_a.client(), node_b.client()]
            after, turn = 0, 0
            try:
                while True:
                    finished = writers_done.is_set()  # one more full pass once the writers are done
                    resp = clients[turn % 2].request("GET", f"{feed}?after={after}&limit=7")
                    turn += 1
                    assert resp.status == 200, resp.body[:300]
                    sequences = [item["sequence"] for item in resp.json()["data"]]
                    polls.append((after, sequences))
                    if sequences:
                        after = sequences[-1]
                    elif finished:
                        return
            except BaseException as exc:
                failures.append(exc)
            finally:
                for client in clients:
                    client.close()

        writers = [threading.Thread(target=write, args=(i,)) for i in range(8)]
        reader = threading.Thread(target=read)
        reader.start()
        for thread in writers:
            thread.start()
        for thread in writers:
            thread.join(120)
        writers_done.set()
        reader.join(120)

        assert failures == []
        assert statuses and all(status in (200, 201) for status in statuses), collections.Counter(statuses)
        acknowledged = len(statuses)
        assert_gap_free_polls(polls, acknowledged)
        for node in (node_a, node_b):
            client = node.client()
            body = client.request("GET", f"{feed}?limit=1000").json()
            client.close()
            assert [item["sequence"] for item in body["data"]] == list(range(1, acknowledged + 1))
            assert body["events"]["last_sequence"] == acknowledged
