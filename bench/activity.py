"""What recording a SCIM request costs after its answer (scim.http.activity), inside one process.

    .venv/bin/python -m bench.activity                       # 20,000 requests per case

On a fresh PostgreSQL database with production settings (DB_ENCRYPTION_KEY set), it times
`Exchange.record` for a request that was already answered, as process CPU per request
(time.process_time; the least loaded of 5 rounds) and wall time, and counts the SQL statements it sends
(none: the recorder writes in the background), then the background writes themselves:

- bare           building the exchange, not recording it (what every case below includes)
- health         a successful request, log_scim_requests off: the health counters in memory
- failed_401     a 401 for an existing directory: counters, and its log entry masked, capped and queued
- log_on         a successful user create with log_scim_requests on (a 1 KiB body): the same
- log_flush      writing queued entries, per entry, in batches of 200 (one INSERT each batch)
- health_flush   writing one directory's counters to its health row (once per directory and process
                 every SCIM_ACTIVITY_FLUSH_SECONDS, whatever the number of requests)
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from bench import systems
from bench.procs import recreate_database
from bench.workload import okta_user


def measure(fn: Callable[[], Any], repeats: int) -> tuple[float, float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(min(200, repeats)):
        fn()  # warm-up
    rounds = []
    k = max(1, repeats // 5)
    for _ in range(5):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(k):
            fn()
        rounds.append(((time.process_time() - cpu0) / k * 1e6, (time.perf_counter() - wall0) / k * 1e6))
    with CaptureQueriesContext(connection) as ctx:
        fn()
    cpu, wall = min(rounds)
    return cpu, wall, len(ctx.captured_queries)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20000)
    parser.add_argument("--database", default="roster_activity")
    parser.add_argument("--redis-db", type=int, default=13)  # nothing is published; the settings want a broker
    args = parser.parse_args(argv)
    env = systems.roster_env(systems.RosterOptions(database=args.database, redis_db=args.redis_db))
    env["LOG_LEVEL"] = "ERROR"
    env["SCIM_ACTIVITY_FLUSH_SECONDS"] = "0"  # the flush is timed on its own below
    recreate_database(args.database)
    os.environ.update(env)
    import django

    django.setup()
    import orjson
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from directories.activity import recorder
    from directories.activity.services import scim_health_merge, scim_log_write_many
    from directories.activity.state import AUTHENTICATED, Counters
    from directories.services import directory_create
    from scim.http.activity import Exchange

    actor = systems.service_actor(directory_create)
    quiet = directory_create(data={"tenant": "activity", "product": "bench"}, **actor)
    logged = directory_create(data={"tenant": "activity", "product": "bench", "log_scim_requests": True}, **actor)
    body = orjson.dumps({**okta_user("bench", 1), "password": "not-kept", "title": "t" * 600})
    answer = orjson.dumps({"id": "x", "userName": "bench.1@example.com", "meta": {"location": "y" * 200}})
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": f"/api/scim/v2.0/{quiet.id}/Users",
        "QUERY_STRING": "",
        "REMOTE_ADDR": "10.0.0.7",
        "HTTP_USER_AGENT": "Okta SCIM Client 1.0.0",
        "wsgi.input": io.BytesIO(),
    }

    def exchange(directory: Any, status: int, secret: str | None) -> Exchange:
        ex = Exchange(environ, "POST", str(directory.id), "bench-request-id")
        ex.seen.looked_up, ex.seen.directory, ex.seen.secret = True, directory, secret
        ex.request_body = body
        ex.answered(status, answer, None if status < 400 else {"detail": "Authentication failed.", "status": "401"})
        return ex

    def recorded(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> None:
            fn()
            recorder.discard()  # what the flush would take away; timed below on its own

        return run

    cases: dict[str, Callable[[], Any]] = {
        "bare": recorded(lambda: exchange(quiet, 201, quiet.scim_secret)),
        "health": recorded(lambda: exchange(quiet, 201, quiet.scim_secret).record()),
        "failed_401": recorded(lambda: exchange(quiet, 401, None).record()),
        "log_on": recorded(lambda: exchange(logged, 201, logged.scim_secret).record()),
    }
    print(f"{args.repeats} requests per case; microseconds per request")
    print("| case | CPU µs | wall µs | SQL statements |")
    print("|---|---:|---:|---:|")
    for name, fn in cases.items():
        cpu, wall, queries = measure(fn, args.repeats)
        print(f"| {name} | {cpu:.1f} | {wall:.1f} | {queries} |", flush=True)

    entry = exchange(logged, 201, logged.scim_secret).log_entry()
    batch_size = 200
    cpu, wall, queries = measure(lambda: scim_log_write_many(entries=[(logged.id, entry)] * batch_size), 250)
    print(
        f"| log_flush (per entry, batches of {batch_size}) | {cpu / batch_size:.1f} | {wall / batch_size:.1f} | ",
        end="",
    )
    print(f"{queries} per batch |")
    counters = Counters()
    now_us = time.time_ns() // 1000
    for i in range(1000):
        counters.add(at=now_us - i, status=200, kind=AUTHENTICATED)
    cpu, wall, queries = measure(lambda: scim_health_merge(directory_id=quiet.id, counters=counters), 500)
    print(f"| health_flush (one directory) | {cpu:.1f} | {wall:.1f} | {queries} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
