"""Fairness under a flood (contract §4.5): one directory floods, another sends steadily below its limit.

    .venv/bin/python -m bench.fairness                          # 30 s alone, then 30 s beside a flood of 16
    .venv/bin/python -m bench.fairness --seconds 60 --flood-connections 32 --steady-rate 20

Roster in production shape (bench/systems.py: `python -m server.web` with granian, PostgreSQL, the Celery
worker, Redis as broker and as the rate limits' store), with the rate limits at their defaults
(SCIM_RATE_LIMIT 3000 per minute per directory). Two directories:

- *steady* sends `--steady-rate` SCIM requests per second (alternately Okta's POST /Users and a GET of
  the user it made), from a process of its own, first alone for `--seconds`, then for as long again
- beside *flood*: `--flood-connections` keep-alive connections, each sending POST /Users as soon as the
  last answer came, with no pause and no regard for Retry-After, from another process.

Pass (exit 0) when the steady directory got no 429 and its p99 beside the flood is within
`--max-ratio` (3) of its p99 alone; the flood got 429s and no 5xx; and every user either was answered
201 for is stored (each directory's user count through SCIM once its bucket refilled, and for the steady
one every id it was given reads back). Prints one table, writes bench/results/fairness-<stamp>.json.
The load generator runs on the same machine: its flood process takes one core's worth of CPU itself.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import secrets
import signal
import sys
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from bench import systems
from bench.compare import RESULTS, log
from bench.httpclient import Client
from bench.procs import CpuMeter, postgres_backends, process_tree
from bench.stats import percentile
from bench.workload import okta_user

DEFAULT_REDIS_DB = 10


# --- the two clients, each in a process of its own (a flood of threads would hold the steady one's GIL) --


def steady_run(base: str, scim: str, secret: str, tag: str, rate: float, seconds: float, out: Any) -> None:
    """Alternately POST a user and GET it back, `rate` requests per second, for `seconds`; puts
    {latencies, statuses, created ids, problems} on `out`."""
    client = Client(base, token=secret)
    interval = 1.0 / rate
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    created: list[str] = []
    problems: list[str] = []
    serial = 0
    started = time.monotonic()
    next_at = started
    while next_at - started < seconds:
        pause = next_at - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        if serial % 2 == 0 or not created:
            body = okta_user(tag, serial)
            response = client.request("POST", f"{scim}/Users", body)
            if response.status == 201:
                created.append(response.json()["id"])
        else:
            response = client.request("GET", f"{scim}/Users/{created[-1]}")
            if response.status == 200 and response.json()["id"] != created[-1]:
                problems.append("a GET answered another user")
        serial += 1
        latencies.append(response.seconds)
        statuses[response.status] = statuses.get(response.status, 0) + 1
        if response.status >= 400 and len(problems) < 5:
            problems.append(f"HTTP {response.status}: {response.body[:200]!r}")
        next_at += interval
    client.close()
    out.put({"latencies": latencies, "statuses": statuses, "created": created, "problems": problems})


def flood_run(base: str, scim: str, secret: str, tag: str, connections: int, seconds: float, out: Any) -> None:
    """`connections` threads, each POSTing users back to back for `seconds`; puts the statuses, the
    latencies of the 429s and how many were created on `out`."""
    import threading

    stop = time.monotonic() + seconds
    lock = threading.Lock()
    statuses: dict[int, int] = {}
    refusal_latencies: list[float] = []
    retry_after: dict[str, int] = {}
    problems: list[str] = []

    def worker(k: int) -> None:
        client = Client(base, token=secret)
        serial = 0
        while time.monotonic() < stop:
            serial += 1
            try:
                response = client.request("POST", f"{scim}/Users", okta_user(f"{tag}-{k}", serial))
            except Exception as exc:  # noqa: BLE001 - a transport error is counted, the flood goes on
                with lock:
                    statuses[0] = statuses.get(0, 0) + 1
                    if len(problems) < 5:
                        problems.append(f"{type(exc).__name__}: {exc}")
                continue
            with lock:
                statuses[response.status] = statuses.get(response.status, 0) + 1
                if response.status == 429:
                    refusal_latencies.append(response.seconds)
                    value = response.headers.get("retry-after", "missing")
                    retry_after[value] = retry_after.get(value, 0) + 1
                elif response.status != 201 and len(problems) < 5:
                    problems.append(f"HTTP {response.status}: {response.body[:200]!r}")
        client.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.put(
        {
            "statuses": statuses,
            "refusal_p50_ms": round(percentile(refusal_latencies, 50) * 1000, 2),
            "refusal_p99_ms": round(percentile(refusal_latencies, 99) * 1000, 2),
            "retry_after": retry_after,
            "problems": problems,
        }
    )


def _spawn(target: Any, *args: Any) -> tuple[Any, Any]:
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=target, args=(*args, queue))
    process.start()
    return process, queue


def _collect(process: Any, queue: Any, timeout: float) -> dict[str, Any]:
    result = queue.get(timeout=timeout)
    process.join(10)
    return result


# --- checks ----------------------------------------------------------------------------------------------


def stored_total(base: str, scim: str, secret: str) -> int:
    """The directory's user count through SCIM, once its bucket let the request in (waiting Retry-After)."""
    client = Client(base, token=secret)
    try:
        for _ in range(20):
            response = client.request("GET", f"{scim}/Users?count=0")
            if response.status == 200:
                return int(response.json()["totalResults"])
            time.sleep(int(response.headers.get("retry-after", "1")))
        raise RuntimeError(f"the user count was refused 20 times: HTTP {response.status}")
    finally:
        client.close()


def every_id_reads_back(base: str, scim: str, secret: str, ids: list[str]) -> int:
    """How many of `ids` do not read back (0 when all are stored); paced under the directory's limit."""
    client = Client(base, token=secret)
    missing = 0
    for user_id in ids:
        while True:
            response = client.request("GET", f"{scim}/Users/{quote(user_id)}")
            if response.status != 429:
                break
            time.sleep(int(response.headers.get("retry-after", "1")))
        missing += response.status != 200
        time.sleep(0.025)
    client.close()
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="of each phase (alone, then beside the flood)")
    parser.add_argument("--steady-rate", type=float, default=10.0, help="the steady directory's requests per second")
    parser.add_argument("--flood-connections", type=int, default=16)
    parser.add_argument("--max-ratio", type=float, default=3.0, help="steady p99 beside the flood / alone")
    parser.add_argument("--database", default="roster_fairness")
    parser.add_argument("--redis-db", type=int, default=DEFAULT_REDIS_DB, help="the broker's and the limits' Redis")
    systems.web_arguments_add(parser)
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.steady_rate <= 0 or args.flood_connections < 1:
        parser.error("--seconds, --steady-rate and --flood-connections must be positive")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    logs = RESULTS / f"logs-fairness-{stamp}"
    opts = systems.options_at_default_limits(args, database=args.database, redis_db=args.redis_db)
    log(f"starting Roster (web server + celery) on :{opts.port}, limits at their defaults...")
    system = systems.roster_start(opts, logs=logs)
    try:
        hook = "http://127.0.0.1:9/hook"  # nothing listens: deliveries fail fast, off the request path
        steady_scim, steady_secret = systems.roster_directory_create(
            system, tag="steady", webhook_url=hook, webhook_secret=secrets.token_urlsafe(32)
        )
        flood_scim, flood_secret = systems.roster_directory_create(
            system, tag="flood", webhook_url=hook, webhook_secret=secrets.token_urlsafe(32)
        )
        web, worker = system.services[0].pid, system.services[1].pid
        meter_groups = {
            "web": lambda: process_tree([web]),
            "celery": lambda: process_tree([worker]),
            "postgres": lambda: postgres_backends(opts.database),
        }
        base = system.base_url

        log(f"alone: steady at {args.steady_rate:g}/s for {args.seconds:g} s")
        process, queue = _spawn(steady_run, base, steady_scim, steady_secret, "alone", args.steady_rate, args.seconds)
        alone = _collect(process, queue, args.seconds + 120)

        log(f"beside a flood of {args.flood_connections} connections, {args.seconds:g} s")
        meter = CpuMeter(meter_groups)
        meter.start()
        flood_process, flood_queue = _spawn(
            flood_run, base, flood_scim, flood_secret, "flood", args.flood_connections, args.seconds + 2
        )
        time.sleep(1.0)  # the flood is under way (its burst spent) before the steady one starts
        process, queue = _spawn(steady_run, base, steady_scim, steady_secret, "beside", args.steady_rate, args.seconds)
        beside = _collect(process, queue, args.seconds + 120)
        flood = _collect(flood_process, flood_queue, args.seconds + 120)
        cpu = meter.stop()

        log("checking what was stored...")
        time.sleep(7)  # both buckets refill (six seconds) before the reads
        flood_created = flood["statuses"].get(201, 0)
        flood_stored = stored_total(base, flood_scim, flood_secret)
        steady_ids = alone["created"] + beside["created"]
        steady_stored = stored_total(base, steady_scim, steady_secret)
        steady_missing = every_id_reads_back(base, steady_scim, steady_secret, steady_ids)
    finally:
        system.stop()

    p99_alone = percentile(alone["latencies"], 99) * 1000
    p99_beside = percentile(beside["latencies"], 99) * 1000
    ratio = p99_beside / p99_alone if p99_alone else float("inf")
    steady_429 = alone["statuses"].get(429, 0) + beside["statuses"].get(429, 0)
    flood_5xx = sum(n for status, n in flood["statuses"].items() if status >= 500 or status == 0)
    flood_total = sum(flood["statuses"].values())
    checks = {
        "steady got no 429": steady_429 == 0,
        f"steady p99 beside the flood within {args.max_ratio:g}x of alone": ratio <= args.max_ratio,
        "flood got 429s": flood["statuses"].get(429, 0) > 0,
        "flood got no 5xx (nor a lost connection)": flood_5xx == 0,
        "every 201 of the flood is stored": flood_stored == flood_created,
        "every 201 of the steady directory is stored and reads back": steady_stored == len(steady_ids)
        and steady_missing == 0,
    }
    row = {
        "args": vars(args),
        "steady_alone": {
            "requests": len(alone["latencies"]),
            "p50_ms": round(percentile(alone["latencies"], 50) * 1000, 2),
            "p99_ms": round(p99_alone, 2),
            "statuses": alone["statuses"],
        },
        "steady_beside_flood": {
            "requests": len(beside["latencies"]),
            "p50_ms": round(percentile(beside["latencies"], 50) * 1000, 2),
            "p99_ms": round(p99_beside, 2),
            "statuses": beside["statuses"],
        },
        "p99_ratio": round(ratio, 2),
        "flood": {
            **flood,
            "requests": flood_total,
            "per_second": round(flood_total / (args.seconds + 2), 1),
            "created": flood_created,
            "stored": flood_stored,
        },
        "steady_stored": steady_stored,
        "steady_created": len(steady_ids),
        "cpu_seconds_beside_flood": cpu,
        "checks": checks,
        "problems": alone["problems"] + beside["problems"],
    }
    out = RESULTS / f"fairness-{stamp}.json"
    out.write_text(json.dumps(row, indent=2))
    print()
    print("| figure | value |")
    print("|---|---:|")
    print(f"| steady p50 / p99 alone, ms | {row['steady_alone']['p50_ms']} / {row['steady_alone']['p99_ms']} |")
    beside_row = row["steady_beside_flood"]
    print(f"| steady p50 / p99 beside the flood, ms | {beside_row['p50_ms']} / {beside_row['p99_ms']} |")
    print(f"| p99 ratio | {row['p99_ratio']}x |")
    counts = f"{len(alone['latencies'])}, {len(beside['latencies'])}; {steady_429}"
    print(f"| steady requests (alone, beside) and 429s | {counts} |")
    print(f"| flood requests, per second | {flood_total}, {row['flood']['per_second']} |")
    print(f"| flood 201 / 429 / 5xx | {flood_created} / {flood['statuses'].get(429, 0)} / {flood_5xx} |")
    print(f"| flood 429 answered in p50 / p99, ms | {flood['refusal_p50_ms']} / {flood['refusal_p99_ms']} |")
    print(f"| flood stored / answered 201 | {flood_stored} / {flood_created} |")
    print(f"| CPU seconds beside the flood: web, celery, postgres | {cpu['web']}, {cpu['celery']}, {cpu['postgres']} |")
    print()
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    log(f"results: {out}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
