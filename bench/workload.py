"""The provisioning workload of issue 7, phase by phase, against any SCIM 2.0 server.

Phases (each timed on its own: requests/s, p50/p95/p99, errors):

1. create_users    POST /Users, Okta's body, N times
2. create_groups   POST /Groups with `members: []`, G times
3. add_members     PATCH /Groups/<g> `{"op":"add","path":"members","value":[{"value":<user>}]}`,
                   one request per user (Okta pushes group membership one member at a time)
4. filter_username GET /Users?filter=userName eq "<userName>", every user; exactly that user back
5. list_users      GET /Users?startIndex=..&count=<page> over the whole directory, `passes` times;
                   every created id seen exactly once per pass, totalResults == N
6. deactivate      PATCH /Users/<id> `{"op":"replace","value":{"active":false}}` for N/10 users
7. delete          DELETE /Users/<id> for the same N/10 users (deprovisioning after deactivation)
8. check_404       GET /Users/<id> of each deleted user answers 404

A phase is a list of independent requests handed to `concurrency` threads, each with its own
keep-alive connection; a request whose status or content is wrong counts as an error.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from bench.httpclient import Client, Response
from bench.stats import PhaseResult, percentile

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"

# (response, error message or None); the latency recorded is the response's.
Outcome = tuple[Response, str | None]


@dataclass
class WorkloadConfig:
    users: int = 2000
    groups: int = 50
    concurrency: int = 8
    page_size: int = 100
    list_passes: int = 3
    # Jackson caps totalResults at its page limit: its value is reported, not checked.
    totals_capped: bool = False
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8])


def okta_user(tag: str, i: int) -> dict[str, Any]:
    """The body Okta sends on user push (its SCIM 2.0 reference, 'Create the user')."""
    email = f"bench.{tag}.{i}@example.com"
    return {
        "schemas": [USER_SCHEMA],
        "userName": email,
        "name": {"givenName": f"Given{i}", "familyName": f"Family{i}"},
        "emails": [{"primary": True, "value": email, "type": "work"}],
        "displayName": f"Given{i} Family{i}",
        "locale": "en-US",
        "externalId": f"00u{tag}{i:07d}",
        "groups": [],
        "active": True,
    }


def _body(resp: Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return None


def run_phase(
    name: str,
    count: int,
    work: Callable[[Client, int], Outcome],
    clients: list[Client],
) -> PhaseResult:
    """Run `work(client, i)` for i in range(count) on len(clients) threads and time it."""
    result = PhaseResult(name=name, concurrency=len(clients))
    counter = itertools.count()  # next() on itertools.count is atomic under the GIL
    lock = threading.Lock()
    per_thread: list[list[float]] = [[] for _ in clients]

    def worker(k: int) -> None:
        client = clients[k]
        latencies = per_thread[k]
        while True:
            i = next(counter)
            if i >= count:
                return
            try:
                resp, problem = work(client, i)
            except Exception as exc:  # a transport error is an error of this request, not of the run
                with lock:
                    result.error(f"#{i}: {type(exc).__name__}: {exc}")
                continue
            latencies.append(resp.seconds)
            if problem:
                with lock:
                    result.error(f"#{i}: {problem}")

    threads = [threading.Thread(target=worker, args=(k,), name=f"{name}-{k}") for k in range(len(clients))]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.seconds = time.perf_counter() - started
    for latencies in per_thread:
        result.latencies.extend(latencies)
    return result


def _expect(resp: Response, *statuses: int) -> str | None:
    if resp.status in statuses:
        return None
    return f"HTTP {resp.status} (expected {'/'.join(map(str, statuses))}): {resp.body[:200]!r}"


class Workload:
    def __init__(self, *, base_url: str, scim_path: str, scim_secret: str, config: WorkloadConfig) -> None:
        self.config = config
        self.scim = scim_path.rstrip("/")
        self.clients = [Client(base_url, token=scim_secret) for _ in range(config.concurrency)]
        n = config.users
        self.user_ids: list[str | None] = [None] * n
        self.user_names = [okta_user(config.tag, i)["userName"] for i in range(n)]
        self.group_ids: list[str | None] = [None] * config.groups
        self.removed = range(0, n // 10)  # deactivated, then deleted
        self.last_request_at = 0.0  # time.time() when the last request of the workload answered
        self.last_write_at = 0.0  # ... and when the last request that makes events (delete) answered
        self.observed_totals: set[int] = set()

    def close(self) -> None:
        for c in self.clients:
            c.close()

    # -- phases ---------------------------------------------------------------------------------

    def _create_user(self, client: Client, i: int) -> Outcome:
        resp = client.request("POST", f"{self.scim}/Users", okta_user(self.config.tag, i))
        problem = _expect(resp, 201)
        body = _body(resp) if not problem else None
        if body is not None:
            if not isinstance(body, dict) or not body.get("id"):
                problem = "201 without an id"
            else:
                self.user_ids[i] = body["id"]
        return resp, problem

    def _create_group(self, client: Client, i: int) -> Outcome:
        body = {"schemas": [GROUP_SCHEMA], "displayName": f"Bench {self.config.tag} group {i}", "members": []}
        resp = client.request("POST", f"{self.scim}/Groups", body)
        problem = _expect(resp, 201)
        data = _body(resp) if not problem else None
        if data is not None:
            if not isinstance(data, dict) or not data.get("id"):
                problem = "201 without an id"
            else:
                self.group_ids[i] = data["id"]
        return resp, problem

    def _add_member(self, client: Client, i: int) -> Outcome:
        group_id = self.group_ids[i % self.config.groups]
        user_id = self.user_ids[i]
        if group_id is None or user_id is None:
            raise RuntimeError("group or user was not created")
        body = {
            "schemas": [PATCH_SCHEMA],
            "Operations": [
                {"op": "add", "path": "members", "value": [{"value": user_id, "display": self.user_names[i]}]}
            ],
        }
        resp = client.request("PATCH", f"{self.scim}/Groups/{group_id}", body)
        return resp, _expect(resp, 200, 204)

    def _filter_user(self, client: Client, i: int) -> Outcome:
        query = quote(f'userName eq "{self.user_names[i]}"', safe="")
        resp = client.request("GET", f"{self.scim}/Users?filter={query}")
        problem = _expect(resp, 200)
        if not problem:
            data = _body(resp) or {}
            found = [r.get("id") for r in data.get("Resources") or []]
            if found != [self.user_ids[i]]:
                problem = f"filter returned {found} instead of [{self.user_ids[i]}]"
        return resp, problem

    def _deactivate(self, client: Client, i: int) -> Outcome:
        body = {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "replace", "value": {"active": False}}]}
        resp = client.request("PATCH", f"{self.scim}/Users/{self.user_ids[self.removed[i]]}", body)
        problem = _expect(resp, 200, 204)
        if not problem and resp.status == 200:
            data = _body(resp) or {}
            if data.get("active") is not False:
                problem = f"after deactivation active is {data.get('active')!r}"
        return resp, problem

    def _delete(self, client: Client, i: int) -> Outcome:
        resp = client.request("DELETE", f"{self.scim}/Users/{self.user_ids[self.removed[i]]}")
        return resp, _expect(resp, 200, 204)

    def _check_gone(self, client: Client, i: int) -> Outcome:
        resp = client.request("GET", f"{self.scim}/Users/{self.user_ids[self.removed[i]]}")
        return resp, _expect(resp, 404)

    def _list_phase(self) -> PhaseResult:
        cfg = self.config
        n, size = cfg.users, cfg.page_size
        # One page past the end as well: it must come back empty.
        starts = list(range(1, n + size + 1, size))
        items = [(p, s) for p in range(cfg.list_passes) for s in starts]
        pages: dict[tuple[int, int], list[str]] = {}
        lock = threading.Lock()

        def fetch(client: Client, k: int) -> Outcome:
            p, start = items[k]
            resp = client.request("GET", f"{self.scim}/Users?startIndex={start}&count={size}")
            problem = _expect(resp, 200)
            if not problem:
                data = _body(resp) or {}
                ids = [r.get("id") for r in data.get("Resources") or []]
                total = data.get("totalResults")
                with lock:
                    pages[(p, start)] = ids
                    self.observed_totals.add(total)
                if not cfg.totals_capped and total != n:
                    problem = f"totalResults {total} != {n}"
                elif len(ids) > size:
                    problem = f"{len(ids)} resources for count={size}"
            return resp, problem

        result = run_phase("list_users", len(items), fetch, self.clients)
        expected = set(self.user_ids)
        for p in range(cfg.list_passes):
            seen = collections.Counter(i for s in starts for i in pages.get((p, s), []))
            missing = len(expected - set(seen))
            extra = len(set(seen) - expected)
            twice = sum(1 for c in seen.values() if c > 1)
            if missing or extra or twice:
                result.error(f"pass {p}: {missing} ids missing, {extra} unknown, {twice} seen more than once")
        if cfg.totals_capped:
            result.notes.append(f"totalResults capped (observed {sorted(t for t in self.observed_totals if t)})")
        return result

    # -- the whole run --------------------------------------------------------------------------

    def run(
        self,
        log: Callable[[str], None] = lambda _m: None,
        phase_hook: Callable[[str, str], None] | None = None,
    ) -> list[PhaseResult]:
        """Run every phase in order. `phase_hook(name, "start"|"end")` brackets each (the profiler)."""
        cfg = self.config
        n = cfg.users
        results: list[PhaseResult] = []

        def step(name: str, count: int, work: Callable[[Client, int], Outcome] | None) -> None:
            if phase_hook:
                phase_hook(name, "start")
            try:
                res = self._list_phase() if work is None else run_phase(name, count, work, self.clients)
            finally:
                if phase_hook:
                    phase_hook(name, "end")
            results.append(res)
            log(_line(res))

        step("create_users", n, self._create_user)
        step("create_groups", cfg.groups, self._create_group)
        if None in self.user_ids or None in self.group_ids:
            raise RuntimeError("some users or groups were not created; later phases would be meaningless")
        step("add_members", n, self._add_member)
        step("filter_username", n, self._filter_user)
        step("list_users", 0, None)
        step("deactivate", len(self.removed), self._deactivate)
        step("delete", len(self.removed), self._delete)
        self.last_write_at = time.time()
        step("check_404", len(self.removed), self._check_gone)
        self.last_request_at = time.time()
        return results

    def expected_events(self) -> dict[str, int]:
        """The webhook events contract §5 requires for this workload, by type (at least this many)."""
        k = len(self.removed)
        return {
            "user.created": self.config.users,
            "group.created": self.config.groups,
            "group.user_added": self.config.users,
            "user.updated": k,
            "user.deleted": k,
        }


def _line(res: PhaseResult) -> str:
    return (
        f"  {res.name:<16} c={res.concurrency} {res.requests:>6} req {res.rps:>8.1f}/s "
        f"p50 {res.ms(50):6.1f} p95 {res.ms(95):6.1f} p99 {res.ms(99):6.1f} ms  errors {res.errors}"
        + (f"  first: {res.error_samples[0]}" if res.error_samples else "")
    )


def totals(results: list[PhaseResult]) -> dict[str, float]:
    requests = sum(r.requests for r in results)
    seconds = sum(r.seconds for r in results)
    return {
        "requests": requests,
        "seconds": round(seconds, 3),
        "rps": round(requests / seconds, 1) if seconds else 0.0,
        "errors": sum(r.errors for r in results),
    }


# The phases whose requests change data (and make webhook events).
WRITE_PHASES = ("create_users", "create_groups", "add_members", "deactivate", "delete")


def write_p99_ms(results: list[PhaseResult]) -> float:
    """The p99 of every write request of a run, the write phases pooled."""
    latencies = [x for r in results if r.name in WRITE_PHASES for x in r.latencies]
    return round(percentile(latencies, 99) * 1000.0, 2)
