"""PostgreSQL stopped for 5 s while identity providers write: 503s, recovery, convergence, exactly once."""

from __future__ import annotations

import collections
import json
import threading
import time
from typing import Any

import pytest

from tests.faults.conftest import Stack
from tests.faults.stack import WEBHOOK_TIMEOUT, received_ids, receiver_running, scim_client, user_body, wait_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(240)]

OUTAGE_SECONDS = 5.0
IDP_THREADS = 3
# Seconds each IdP thread waits between requests: a steady push (about 25 changes/s in all) that the
# 2-core machine drains as it comes, so what is measured is the outage, not a backlog.
PACE = 0.1
SCIM_ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


class Idp:
    """An identity provider's pushes from a few threads: each creates users one after another, retrying
    a failed create until it gets 201 or 409 (as Okta and Entra do), then PATCHes the user once."""

    def __init__(self, stack: Stack, directory_id: str, secret: str) -> None:
        self.roster = stack.roster
        self.directory_id = directory_id
        self.secret = secret
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.answers: list[dict[str, Any]] = []  # every response (or transport error)
        self.created: dict[str, str] = {}  # userName -> id, from the 201
        self.settled: set[str] = set()  # userNames that got 201 or 409
        self.attempted: set[str] = set()
        self.patched_ok: collections.Counter[str] = collections.Counter()  # user id -> 2xx PATCHes

    def _record(self, kind: str, resp: Any, error: str | None = None) -> None:
        entry: dict[str, Any] = {"kind": kind, "at": time.monotonic(), "error": error}
        if resp is not None:
            entry.update(
                status=resp.status,
                content_type=resp.headers.get("content-type", ""),
                retry_after=resp.headers.get("retry-after"),
                body=resp.body[:2000],
            )
        with self.lock:
            self.answers.append(entry)

    def _send(self, client: Any, kind: str, method: str, path: str, body: Any) -> Any:
        try:
            resp = client.request(method, path, body, content_type="application/scim+json")
        except Exception as exc:  # noqa: BLE001 - a transport failure is a result worth counting
            self._record(kind, None, type(exc).__name__)
            client.close()
            return None
        self._record(kind, resp)
        time.sleep(PACE)
        return resp

    def run(self, number: int) -> None:
        client = scim_client(self.roster, self.secret, timeout=20)
        base = f"/api/scim/v2.0/{self.directory_id}/Users"
        i = 0
        while not self.stop.is_set():
            name = f"db-{number}-{i}@example.com"
            i += 1
            with self.lock:
                self.attempted.add(name)
            user_id = None
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                resp = self._send(client, "create", "POST", base, user_body(name))
                if resp is not None and resp.status == 201:
                    user_id = resp.json()["id"]
                    with self.lock:
                        self.created[name] = user_id
                        self.settled.add(name)
                    break
                if resp is not None and resp.status == 409:
                    with self.lock:
                        self.settled.add(name)
                    break
                time.sleep(0.2)
            if user_id is None:
                continue
            patch = {
                "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                "Operations": [{"op": "replace", "path": "name.givenName", "value": f"patched-{i}"}],
            }
            resp = self._send(client, "patch", "PATCH", f"{base}/{user_id}", patch)
            if resp is not None and 200 <= resp.status < 300:
                with self.lock:
                    self.patched_ok[user_id] += 1
        client.close()


def test_database_stopped_under_write_load(stack: Stack) -> None:
    roster, pg = stack.roster, stack.pg
    with receiver_running(slow_seconds=0.5) as receiver:
        directory_id, secret = roster.directory_create("dbstop", receiver.url("/ok"))
        idp = Idp(stack, directory_id, secret)
        threads = [threading.Thread(target=idp.run, args=(n,), daemon=True) for n in range(IDP_THREADS)]
        log_from = len(roster.web_log())
        for thread in threads:
            thread.start()
        time.sleep(3)
        outage_start = time.monotonic()
        pg.stop("fast")
        time.sleep(OUTAGE_SECONDS)
        pg.start()
        outage_end = time.monotonic()
        time.sleep(5)
        idp.stop.set()
        for thread in threads:
            thread.join(90)
        assert not any(t.is_alive() for t in threads), "an IdP thread is stuck"

        answers = idp.answers
        statuses = collections.Counter(a.get("status", a["error"]) for a in answers)
        failed = [a for a in answers if a.get("status") not in (200, 201, 204, 409)]
        during = [a for a in answers if outage_start <= a["at"] <= outage_end + 1]
        print(
            f"\ndatabase stopped {OUTAGE_SECONDS:g} s under {IDP_THREADS} writers: {len(answers)} requests, "
            f"statuses {dict(statuses)}, {len(failed)} failed, {len(during)} answered during the outage"
        )
        # Full recovery: requests after the outage succeed again.
        after = [a for a in answers if a["at"] > outage_end + 3]
        assert after and all(a.get("status") in (200, 201, 409) for a in after), collections.Counter(
            a.get("status") for a in after
        )

        # The retrying IdP converges: exactly one user per userName it pushed.
        names = roster.user_names(directory_id)
        assert len(names) == len(set(names))
        assert idp.settled == idp.attempted, idp.attempted - idp.settled
        assert set(names) == idp.settled
        print(f"users: {len(idp.attempted)} userNames pushed, {len(names)} in the database")

        # Every committed change is delivered exactly once; every acknowledged one is among them.
        # Wait for the pending events to drain; then a claim still `sending` has no live attempt behind
        # it (the writers have stopped, the drains are idle), and it is aged past sending_stale_after()
        # so the sweep reports it now rather than in WEBHOOK_TIMEOUT + 90 s.
        wait_for(lambda: not roster.events_open(directory_id).get("pending"), 60, 0.5)
        time.sleep(2 * WEBHOOK_TIMEOUT)
        orphaned = roster.claims_age(directory_id)
        settled = roster.settle([directory_id], timeout=30)
        deliveries = roster.deliveries(directory_id)
        received = received_ids(receiver, directory_id)
        outcome = collections.Counter("delivered" if d[1] else d[2] for d in deliveries)
        print(
            f"webhooks: {len(deliveries)} events recorded ({dict(outcome)}), {len(received)} received, "
            f"{len(received) - len(set(received))} duplicates, {orphaned} claims left orphaned, "
            f"open rows left: {roster.events_open(directory_id)}"
        )
        assert settled, roster.events_open(directory_id)
        assert len(received) == len(set(received)), "an event was delivered twice"
        assert all(delivered for _id, delivered, _c, _s in deliveries), outcome
        assert {d[0] for d in deliveries} == set(received)
        by_user = collections.Counter()
        with receiver.lock:
            for request in receiver.requests:
                payload = json.loads(request.body)
                by_user[(payload["event"], payload["data"]["id"])] += 1
        for user_id in idp.created.values():
            assert by_user[("user.created", user_id)] == 1, user_id
        for user_id, count in idp.patched_ok.items():
            assert by_user[("user.updated", user_id)] >= count, user_id

        # During the outage: 503 in SCIM's error format with Retry-After; never a 500, HTML or a reset.
        assert failed, "no request met the outage: the scenario did not exercise it"
        for answer in failed:
            assert answer.get("status") == 503, answer
            assert answer["content_type"].startswith("application/scim+json"), answer
            assert answer["retry_after"] and answer["retry_after"].isdigit(), answer
            document = json.loads(answer["body"])
            assert document["schemas"] == [SCIM_ERROR] and document["status"] == "503", document

        # One log line per failed request at most, and no traceback.
        log = roster.web_log()[log_from:]
        lines = [line for line in log.splitlines() if line.strip()]
        print(f"web log: {len(lines)} lines for {len(failed)} failed requests, tracebacks: {log.count('Traceback')}")
        assert "Traceback" not in log
        assert len(lines) <= len(failed)

        # A web worker that no writer's connection reached since the restart still holds its dead
        # database connection: its next request is answered 503 (no health check per request,
        # CONN_HEALTH_CHECKS off) and drops it, and the one after reconnects. Probes on new connections,
        # which the kernel spreads over the workers: at most one 503 per worker, then only 200s.
        probes: list[int] = []
        while len(probes) < 40 and probes[-10:] != [200] * 10:
            client = roster.client()
            probes.append(client.request("GET", "/healthz").status)
            client.close()
        print(f"health probes after the outage: {probes}")
        assert probes[-10:] == [200] * 10, probes
        assert probes.count(503) <= 2 and set(probes) <= {200, 503}, probes
