"""An hour under a steady mixed load (not in CI): memory stays flat, latency stays put, nothing fails, every
webhook is delivered once.

    .venv/bin/python -m bench.soak                       # 60 minutes after 5 of warm-up, slices of 5
    .venv/bin/python -m bench.soak --minutes 5 --slice-minutes 1 --warmup-seconds 30    # a short check

Roster in production shape (bench/systems.py: `python -m server.web` with granian, PostgreSQL, the Celery
worker, Redis as broker and as the rate limits' store, the limits at their defaults), a webhook receiver
(bench.receiver, its own process, checking every signature) and a load that never pauses:

- SCIM, `--scim-rate` requests per second spread over `--directories` directories (each well below its
  3000 per minute), what an identity provider sends: Okta's user creation, a user's name changed (PATCH),
  a member added to a group, a user read, a `userName eq` filter, a page of users, a user deactivated and,
  later, deleted. Each directory keeps at most `--pool` users: past it, deletions make room;
- REST, `--rest-rate` requests per second: the application's reads (a page of users, a directory, its
  changes feed).

Reported (and written to bench/results/soak-<stamp>.json):

- the PSS of every Roster process (web launcher and workers, Celery worker) after the warm-up and at the
  end, and its growth: a pass wants every process under `--max-growth` (10 %);
- per slice of `--slice-minutes`: requests, p50 and p99 of SCIM and of REST, errors;
- 5xx and transport errors (a pass wants none) and any other unexpected answer;
- webhooks: every event of every directory's changes feed arrived at the receiver, exactly once, signed
  (the receiver's event ids against the feeds' ids, one by one), and the feed says each was delivered.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import secrets
import signal
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from bench import systems
from bench.compare import RESULTS, log, receiver_start
from bench.httpclient import Client
from bench.procs import command_name, free_port, memory_kib, process_tree
from bench.stats import percentile
from bench.workload import GROUP_SCHEMA, PATCH_SCHEMA, okta_user

# SCIM operations and their weights in the mix.
SCIM_MIX = (
    ("create_user", 25),
    ("patch_name", 20),
    ("add_member", 15),
    ("get_user", 15),
    ("filter_username", 10),
    ("list_page", 5),
    ("deactivate", 5),
    ("delete", 5),
)
REST_MIX = (("users_page", 2), ("directory", 1), ("changes", 1))
# Keep-alive connections per directory (SCIM) and for the REST API.
CONNECTIONS = 4


@dataclass
class Directory:
    id: str
    scim: str
    secret: str
    tag: str
    users: list[str] = field(default_factory=list)
    inactive: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    groups: list[str] = field(default_factory=list)
    serial: itertools.count = field(default_factory=itertools.count)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Record:
    at: float  # seconds since the load started
    surface: str  # scim or rest
    op: str
    status: int
    seconds: float


class Load:
    """The mixed load, open-loop at fixed rates: one thread per surface, each request on its schedule."""

    def __init__(self, system: systems.System, directories: list[Directory], args: argparse.Namespace) -> None:
        self.system = system
        self.directories = directories
        self.args = args
        self.records: list[Record] = []
        self.problems: list[str] = []
        self.lock = threading.Lock()
        self.random = random.Random(20261128)
        self.started = 0.0
        self.skipped = 0  # requests not sent because the load fell more than a second behind

    def run(self, seconds: float) -> None:
        self.started = time.monotonic()
        threads = [
            threading.Thread(target=self._scim, args=(seconds,), name="soak-scim"),
            threading.Thread(target=self._rest, args=(seconds,), name="soak-rest"),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _schedule(self, rate: float, seconds: float) -> Any:
        """Yield at `rate` per second for `seconds`. A request that would start more than a second late
        (the server or this machine fell behind) is skipped and counted, so the load stays steady instead
        of catching up in a burst."""
        interval = 1.0 / rate
        next_at = self.started
        while next_at - self.started < seconds:
            pause = next_at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            elif pause < -1.0:
                with self.lock:
                    self.skipped += 1
                next_at += interval
                continue
            yield
            next_at += interval

    def _note(self, surface: str, op: str, status: int, seconds: float, expected: tuple[int, ...], body: bytes) -> None:
        with self.lock:
            self.records.append(Record(time.monotonic() - self.started, surface, op, status, seconds))
            if status not in expected and len(self.problems) < 20:
                self.problems.append(f"{surface} {op}: HTTP {status} {body[:200]!r}")

    def _scim(self, seconds: float) -> None:
        # Several keep-alive connections per directory, so that each web worker serves every kind of
        # request from the warm-up on (granian keeps a connection on the worker that accepted it).
        clients = {
            d.id: [Client(self.system.base_url, token=d.secret) for _ in range(CONNECTIONS)] for d in self.directories
        }
        ops, weights = zip(*SCIM_MIX, strict=True)
        for n, _ in enumerate(self._schedule(self.args.scim_rate, seconds)):
            directory = self.random.choice(self.directories)
            op = self.random.choices(ops, weights)[0]
            pool = clients[directory.id]
            try:
                self._scim_one(pool[n % CONNECTIONS], directory, op)
            except Exception as exc:  # noqa: BLE001 - a transport error is a finding, the load goes on
                self._note("scim", op, 0, 0.0, (), f"{type(exc).__name__}: {exc}".encode())
                pool[n % CONNECTIONS] = Client(self.system.base_url, token=directory.secret)
        for pool in clients.values():
            for client in pool:
                client.close()

    def _scim_one(self, client: Client, d: Directory, op: str) -> None:
        if (op != "create_user" and not d.users) or (op == "create_user" and len(d.users) >= self.args.pool):
            op = "delete" if d.users and op == "create_user" else "create_user"
        if op == "create_user":
            body = okta_user(d.tag, next(d.serial))
            response = client.request("POST", f"{d.scim}/Users", body)
            if response.status == 201:
                user_id = response.json()["id"]
                d.users.append(user_id)
                d.names[user_id] = body["userName"]
            self._note("scim", op, response.status, response.seconds, (201,), response.body)
        elif op == "patch_name":
            user_id = self.random.choice(d.users)
            patch = {"op": "replace", "path": "name.givenName", "value": f"Renamed{next(d.serial)}"}
            body = {"schemas": [PATCH_SCHEMA], "Operations": [patch]}
            response = client.request("PATCH", f"{d.scim}/Users/{user_id}", body)
            self._note("scim", op, response.status, response.seconds, (200, 204), response.body)
        elif op == "add_member":
            if len(d.groups) < 5:
                made = client.request(
                    "POST",
                    f"{d.scim}/Groups",
                    {"schemas": [GROUP_SCHEMA], "displayName": f"soak {d.tag} {len(d.groups)}"},
                )
                self._note("scim", "create_group", made.status, made.seconds, (201,), made.body)
                if made.status == 201:
                    d.groups.append(made.json()["id"])
                return
            value = [{"value": self.random.choice(d.users)}]
            body = {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "add", "path": "members", "value": value}]}
            response = client.request("PATCH", f"{d.scim}/Groups/{self.random.choice(d.groups)}", body)
            self._note("scim", op, response.status, response.seconds, (200, 204), response.body)
        elif op == "get_user":
            response = client.request("GET", f"{d.scim}/Users/{self.random.choice(d.users)}")
            self._note("scim", op, response.status, response.seconds, (200,), response.body)
        elif op == "filter_username":
            name = d.names[self.random.choice(d.users)]
            query = quote(f'userName eq "{name}"', safe="")
            response = client.request("GET", f"{d.scim}/Users?filter={query}")
            self._note("scim", op, response.status, response.seconds, (200,), response.body)
        elif op == "list_page":
            response = client.request("GET", f"{d.scim}/Users?startIndex=1&count=100")
            self._note("scim", op, response.status, response.seconds, (200,), response.body)
        elif op == "deactivate":
            user_id = d.users.pop(self.random.randrange(len(d.users)))
            body = {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "replace", "value": {"active": False}}]}
            response = client.request("PATCH", f"{d.scim}/Users/{user_id}", body)
            d.inactive.append(user_id)
            self._note("scim", op, response.status, response.seconds, (200, 204), response.body)
        else:  # delete: a deactivated user when there is one (the usual clean-up), else an active one
            user_id = d.inactive.pop(0) if d.inactive else d.users.pop(self.random.randrange(len(d.users)))
            d.names.pop(user_id, None)
            response = client.request("DELETE", f"{d.scim}/Users/{user_id}")
            self._note("scim", "delete", response.status, response.seconds, (204,), response.body)

    def _rest(self, seconds: float) -> None:
        clients = [Client(self.system.base_url, token=self.system.api_key) for _ in range(CONNECTIONS)]
        ops, weights = zip(*REST_MIX, strict=True)
        for n, _ in enumerate(self._schedule(self.args.rest_rate, seconds)):
            client = clients[n % CONNECTIONS]
            d = self.random.choice(self.directories)
            op = self.random.choices(ops, weights)[0]
            path = {
                "users_page": f"/api/v1/directory-sync/users?tenant=bench-{d.tag}&product=bench&directoryId={d.id}"
                "&pageLimit=100",
                "directory": f"/api/v1/directory-sync/{d.id}",
                "changes": f"/api/v1/directory-sync/{d.id}/changes?limit=100",
            }[op]
            try:
                response = client.request("GET", path)
            except Exception as exc:  # noqa: BLE001
                self._note("rest", op, 0, 0.0, (), f"{type(exc).__name__}: {exc}".encode())
                clients[n % CONNECTIONS] = Client(self.system.base_url, token=self.system.api_key)
                continue
            self._note("rest", op, response.status, response.seconds, (200,), response.body)
        for client in clients:
            client.close()


def memory_of(roots: dict[str, int]) -> dict[str, dict[str, Any]]:
    """PSS in KiB of every process of each named tree, by pid."""
    out: dict[str, dict[str, Any]] = {}
    for name, root in roots.items():
        for pid in process_tree([root]):
            out[str(pid)] = {"group": name, "command": command_name(pid), "pss_kib": memory_kib(pid)[1]}
    return out


def slices(records: list[Record], width: float) -> list[dict[str, Any]]:
    rows = []
    by_slice: dict[int, list[Record]] = defaultdict(list)
    for record in records:
        by_slice[int(record.at // width)].append(record)
    for index in sorted(by_slice):
        row: dict[str, Any] = {"slice": index + 1, "from_min": round(index * width / 60, 1)}
        for surface in ("scim", "rest"):
            mine = [r for r in by_slice[index] if r.surface == surface]
            latencies = [r.seconds for r in mine if r.status]
            row[surface] = {
                "requests": len(mine),
                "p50_ms": round(percentile(latencies, 50) * 1000, 2),
                "p99_ms": round(percentile(latencies, 99) * 1000, 2),
                "5xx": sum(1 for r in mine if r.status >= 500 or r.status == 0),
            }
        rows.append(row)
    return rows


def feed_ids(system: systems.System, directory_id: str) -> tuple[list[str], dict[str, int]]:
    """Every event id of a directory's changes feed, and the count of each delivery status."""
    client = Client(system.base_url, token=system.api_key)
    ids: list[str] = []
    states: dict[str, int] = defaultdict(int)
    after = 0
    while True:
        response = client.request("GET", f"/api/v1/directory-sync/{directory_id}/changes?after={after}&limit=1000")
        if response.status != 200:
            raise RuntimeError(f"the changes feed answered {response.status}: {response.body[:200]!r}")
        items = response.json()["data"]
        if not items:
            break
        for item in items:
            ids.append(item["id"])
            states[item["delivery"]["status"]] += 1
        after = items[-1]["sequence"]
    client.close()
    return ids, dict(states)


def deliveries_settle(system: systems.System, directories: list[Directory], receiver_port: int, wait: float) -> None:
    """Wait until the receiver has as many events as the feeds hold, or `wait` seconds without progress."""
    receiver = Client(f"http://127.0.0.1:{receiver_port}")
    last, last_change = -1, time.monotonic()
    while time.monotonic() - last_change < wait:
        expected = sum(len(feed_ids(system, d.id)[0]) for d in directories)
        got = sum(receiver.request("GET", f"/stats/roster/{d.tag}").json()["received"] for d in directories)
        if got >= expected:
            break
        if got != last:
            last, last_change = got, time.monotonic()
        time.sleep(2)
    receiver.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=60.0, help="how long the load runs (after the warm-up)")
    parser.add_argument("--slice-minutes", type=float, default=5.0, help="latency is reported per slice")
    # 5 minutes: a web worker grows until it has served every kind of request (bench/README.md, "Soak").
    parser.add_argument("--warmup-seconds", type=float, default=300.0, help="load before the first memory reading")
    parser.add_argument("--scim-rate", type=float, default=40.0, help="SCIM requests per second, all directories")
    parser.add_argument("--rest-rate", type=float, default=5.0, help="REST requests per second")
    parser.add_argument("--directories", type=int, default=4)
    parser.add_argument("--pool", type=int, default=2000, help="users kept per directory at most")
    parser.add_argument("--max-growth", type=float, default=10.0, help="percent of PSS a process may grow")
    parser.add_argument("--database", default="roster_soak")
    parser.add_argument("--redis-db", type=int, default=9)
    systems.web_arguments_add(parser)
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.scim_rate <= 0 or args.rest_rate <= 0 or args.directories < 1:
        parser.error("--minutes, --scim-rate, --rest-rate and --directories must be positive")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    logs = RESULTS / f"logs-soak-{stamp}"
    webhook_secret = secrets.token_urlsafe(32)
    receiver_port = free_port()
    receiver = receiver_start(receiver_port, webhook_secret, logs=logs)
    opts = systems.options_at_default_limits(args, database=args.database, redis_db=args.redis_db)
    log(f"starting Roster on :{opts.port}, the receiver on :{receiver_port}...")
    system = systems.roster_start(opts, logs=logs)
    try:
        directories = []
        for i in range(args.directories):
            tag = f"soak{i}-{secrets.token_hex(3)}"
            hook = f"http://127.0.0.1:{receiver_port}/roster/{tag}"
            scim, secret = systems.roster_directory_create(
                system, tag=tag, webhook_url=hook, webhook_secret=webhook_secret
            )
            directories.append(Directory(scim.rstrip("/").rpartition("/")[2], scim, secret, tag))
        roots = {"web": system.services[0].pid, "celery": system.services[1].pid}

        log(f"warm-up: {args.warmup_seconds:g} s")
        Load(system, directories, args).run(args.warmup_seconds)
        before = memory_of(roots)
        log(f"load: {args.minutes:g} min at {args.scim_rate:g} SCIM + {args.rest_rate:g} REST requests/s")
        load = Load(system, directories, args)
        load.random.seed(1)
        series: list[dict[str, dict[str, Any]]] = []
        stop = threading.Event()

        def sample() -> None:  # every process's PSS at the end of each slice, to tell a plateau from a climb
            while not stop.wait(args.slice_minutes * 60):
                series.append(memory_of(roots))

        sampler = threading.Thread(target=sample, name="soak-memory", daemon=True)
        sampler.start()
        load.run(args.minutes * 60)
        stop.set()
        after = memory_of(roots)
        log("waiting for the last webhooks...")
        deliveries_settle(system, directories, receiver_port, wait=60)
        receiver_client = Client(f"http://127.0.0.1:{receiver_port}")
        events: dict[str, Any] = {"expected": 0, "received": 0, "missing": 0, "extra": 0, "duplicates": 0}
        events["invalid_signatures"] = 0
        states: dict[str, int] = defaultdict(int)
        for d in directories:
            ids, d_states = feed_ids(system, d.id)
            for state, n in d_states.items():
                states[state] += n
            got = set(receiver_client.request("GET", f"/ids/roster/{d.tag}").json())
            stats = receiver_client.request("GET", f"/stats/roster/{d.tag}").json()
            events["expected"] += len(ids)
            events["received"] += stats["received"]
            events["missing"] += len(set(ids) - got)
            events["extra"] += len(got - set(ids))
            events["duplicates"] += stats["duplicates"]
            events["invalid_signatures"] += stats["invalid"]
        events["feed_states"] = dict(states)
        receiver_client.close()
    finally:
        system.stop()
        receiver.stop()

    processes = []
    for pid, start in before.items():
        end = after.get(pid)
        if end is None:
            processes.append({**start, "pid": pid, "end_pss_kib": None, "growth_pct": None})
            continue
        growth = (end["pss_kib"] - start["pss_kib"]) / start["pss_kib"] * 100 if start["pss_kib"] else 0.0
        slices_mb = [round(m[pid]["pss_kib"] / 1024, 1) for m in series if pid in m]
        row = {**start, "pid": pid, "end_pss_kib": end["pss_kib"], "growth_pct": round(growth, 1)}
        processes.append({**row, "per_slice_mb": slices_mb})
    table = slices(load.records, args.slice_minutes * 60)
    errors = sum(1 for r in load.records if r.status >= 500 or r.status == 0)
    checks = {
        f"every process's PSS grew less than {args.max_growth:g} %": all(
            p["growth_pct"] is not None and p["growth_pct"] < args.max_growth for p in processes
        ),
        "no 5xx and no transport error": errors == 0,
        "no other unexpected answer": not load.problems,
        "every event delivered exactly once, signed": events["missing"] == 0
        and events["extra"] == 0
        and events["duplicates"] == 0
        and events["invalid_signatures"] == 0
        and events["received"] == events["expected"],
    }
    result = {
        "args": vars(args),
        "requests": len(load.records),
        "skipped": load.skipped,
        "processes": processes,
        "slices": table,
        "errors_5xx": errors,
        "problems": load.problems,
        "events": events,
        "checks": checks,
    }
    out = RESULTS / f"soak-{stamp}.json"
    out.write_text(json.dumps(result, indent=2))

    print()
    print("| process | PSS after warm-up, MB | PSS at the end, MB | growth | PSS at each slice's end, MB |")
    print("|---|---:|---:|---:|---|")
    for p in processes:
        end = "gone" if p["end_pss_kib"] is None else f"{p['end_pss_kib'] / 1024:.1f}"
        each = ", ".join(f"{mb:g}" for mb in p.get("per_slice_mb", []))
        name = f"{p['group']} {p['command']} ({p['pid']})"
        print(f"| {name} | {p['pss_kib'] / 1024:.1f} | {end} | {p['growth_pct']} % | {each} |")
    print()
    print("| slice | from min | SCIM requests | SCIM p50 / p99 ms | REST requests | REST p50 / p99 ms | 5xx |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for row in table:
        s, r = row["scim"], row["rest"]
        print(
            f"| {row['slice']} | {row['from_min']} | {s['requests']} | {s['p50_ms']} / {s['p99_ms']} | "
            f"{r['requests']} | {r['p50_ms']} / {r['p99_ms']} | {s['5xx'] + r['5xx']} |"
        )
    print()
    planned = round((args.scim_rate + args.rest_rate) * args.minutes * 60)
    print(f"requests: {len(load.records)} sent of {planned} planned; {load.skipped} skipped (more than 1 s late)")
    print(
        f"events: {events['expected']} in the feeds, {events['received']} received, {events['missing']} missing, "
        f"{events['extra']} extra, {events['duplicates']} duplicates, {events['invalid_signatures']} badly signed; "
        f"feed states {events['feed_states']}"
    )
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    if load.problems:
        print("first problems:", *load.problems[:5], sep="\n  ")
    log(f"results: {out}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
