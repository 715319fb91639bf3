"""One kind of SCIM request, over and over, against Roster in production shape: CPU per request under load.

    .venv/bin/python -m bench.single                                   # get_404, 6000 requests, c=8, 3 rounds
    .venv/bin/python -m bench.single --op filter_username --concurrency 1
    .venv/bin/python -m bench.single --web-workers 1 --web-threads 2

`compare` gives CPU per request for the whole workload mix; `costs` gives one operation's CPU inside a
single process with no server and no load. This sits between the two: the same web server + PostgreSQL +
Celery stack as `compare`, one operation, and the CPU of each process group (user and kernel time) per
request, so a server setting or a change in the request path can be priced where it runs.

Operations: `get_404` (GET of a user id that does not exist), `filter_username` (GET /Users with
`filter=userName eq`, on users created first), `create_user` (Okta's POST /Users; each one also makes a
webhook event, delivered by the Celery worker to an address where nothing listens: the drain's
failures are part of the cost), `throttled_429` (the GET of `get_404` from a directory over its rate
limit: its `scim_rate_limit` set to 1500 a minute and its burst spent first, so nearly every request is
refused from memory, kept in the request log; about 25 a second get through). Rounds run back to back
on one server; the first round also warms the workers up, so compare the later ones.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import secrets
import signal
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from bench import systems
from bench.compare import RESULTS, log
from bench.httpclient import Client
from bench.procs import CpuMeter, free_port, postgres_backends, process_tree
from bench.workload import Outcome, okta_user, run_phase

OPS = ("get_404", "filter_username", "create_user", "throttled_429")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--op", choices=OPS, default="get_404")
    parser.add_argument("--requests", type=int, default=6000, help="per round")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=None, help="the web server's (default: a free one)")
    parser.add_argument("--database", default="roster_single")
    parser.add_argument("--redis-db", type=int, default=11)
    systems.web_arguments_add(parser)
    args = parser.parse_args(argv)
    if args.requests < 1 or args.concurrency < 1 or args.rounds < 1:
        parser.error("--requests, --concurrency and --rounds must be at least 1")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    logs = RESULTS / f"logs-single-{stamp}"
    opts = systems.RosterOptions(
        port=args.port or free_port(),
        database=args.database,
        redis_db=args.redis_db,
        web_workers=args.web_workers,
        extra_env=systems.web_env(args),
    )
    log(f"starting Roster (web server + celery) for {args.op} x {args.requests}, c={args.concurrency}...")
    system = systems.roster_start(opts, logs=logs)
    try:
        tag = secrets.token_hex(4)
        # Port 9 (discard): nothing listens, so deliveries fail fast and are retried later; fine here.
        scim, secret = systems.roster_directory_create(
            system, tag=tag, webhook_url="http://127.0.0.1:9/hook", webhook_secret=secrets.token_urlsafe(32)
        )
        clients = [Client(system.base_url, token=secret) for _ in range(args.concurrency)]
        names: list[str] = []
        serial = itertools.count()

        def check(resp: Any, status: int) -> Outcome:
            return resp, None if resp.status == status else f"HTTP {resp.status} (expected {status})"

        def create(client: Client, _i: int) -> Outcome:
            body = okta_user(tag, next(serial))
            resp = client.request("POST", f"{scim}/Users", body)
            if resp.status == 201:
                names.append(body["userName"])
            return check(resp, 201)

        def get_404(client: Client, _i: int) -> Outcome:
            return check(client.request("GET", f"{scim}/Users/{uuid.uuid4()}"), 404)

        def filter_username(client: Client, i: int) -> Outcome:
            query = quote(f'userName eq "{names[i % len(names)]}"', safe="")
            return check(client.request("GET", f"{scim}/Users?filter={query}"), 200)

        def throttled(client: Client, _i: int) -> Outcome:
            resp = client.request("GET", f"{scim}/Users/{uuid.uuid4()}")
            return resp, None if resp.status in (429, 404) else f"HTTP {resp.status} (expected 429)"

        ops = {"get_404": get_404, "filter_username": filter_username, "create_user": create}
        op = {**ops, "throttled_429": throttled}[args.op]
        if args.op == "throttled_429":
            directory_id = scim.rstrip("/").rpartition("/")[2]
            admin = Client(system.base_url, token=system.api_key)
            limited = admin.request("PATCH", f"/api/v1/directory-sync/{directory_id}", {"scim_rate_limit": 1500})
            admin.close()
            if limited.status != 200:
                raise RuntimeError(f"setting the directory's limit answered {limited.status}")
            while clients[0].request("GET", f"{scim}/Users/{uuid.uuid4()}").status != 429:
                pass  # its burst, spent
        if args.op == "filter_username":
            seeded = run_phase("seed", 2000, create, clients)
            if seeded.errors:
                raise RuntimeError(f"{seeded.errors} of the 2000 users to filter on were not created")
        web, worker = system.services[0].pid, system.services[1].pid
        groups: dict[str, Callable[[], list[int]]] = {
            "web": lambda: process_tree([web]),
            "celery": lambda: process_tree([worker]),
            "postgres": lambda: postgres_backends(opts.database),
            "load generator": lambda: [os.getpid()],
        }
        rounds: list[dict[str, Any]] = []
        for r in range(args.rounds):
            meter = CpuMeter(groups)
            meter.start()
            result = run_phase(args.op, args.requests, op, clients)
            used = meter.stop()
            n = args.requests
            row = {
                **result.summary(),
                "cpu_ms": {k: round(v * 1000 / n, 3) for k, v in used.items()},
                "kernel_ms": {k: round(v * 1000 / n, 3) for k, v in meter.kernel.items()},
            }
            rounds.append(row)
            cpu = ", ".join(f"{k} {row['cpu_ms'][k]:.3f} ({row['kernel_ms'][k]:.3f})" for k in groups)
            log(
                f"  round {r + 1}: {result.rps:.0f} req/s, p50 {result.ms(50):.1f} p99 {result.ms(99):.1f} ms, "
                f"{result.errors} errors; CPU ms per request (kernel): {cpu}"
                + (f"; first error: {result.error_samples[0]}" if result.error_samples else "")
            )
        for c in clients:
            c.close()
    finally:
        system.stop()
    out = RESULTS / f"single-{args.op}-{stamp}.json"
    out.write_text(json.dumps({"args": vars(args), "rounds": rounds}, indent=2))
    log(f"results: {out}")
    return 1 if any(r["errors"] for r in rounds) else 0


if __name__ == "__main__":
    sys.exit(main())
