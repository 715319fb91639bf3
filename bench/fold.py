"""CPU of folding the compare's events into history (contract §5.3): this process and its PostgreSQL backend.

    .venv/bin/python -m bench.fold                       # 2000 users, 50 groups, 3 rounds
    .venv/bin/python -m bench.fold --users 500 --rounds 5

History is folded off the request path (celery beat's `history.fold` every 30 s, and before each history
read), so `bench.compare`, which runs no beat, never sees it; on a deployment it is paid once per event
that a SCIM write makes. Each round makes a new directory and runs the compare's workload against it in
this process (the WSGI application called directly, as `bench.costs` does): `--users` creations, `--groups`
groups, one member add per user, a tenth of the users deactivated, then deleted. Then `history_catch_up`
folds every event of its feed, timed three ways: wall time, this process's CPU (`time.process_time`) and
the CPU of the PostgreSQL backend serving it (`/proc/<pid>/stat`), each per event. The least of the rounds
is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any

from bench import systems
from bench.workload import GROUP_SCHEMA, PATCH_SCHEMA

_TICK = os.sysconf("SC_CLK_TCK")


def _backend_cpu(pid: int) -> float:
    """Seconds of CPU (user and kernel) the PostgreSQL backend `pid` has used so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _events_make(users: int, groups: int) -> Any:
    """A new directory with the compare's workload run against it; returns the directory."""
    from bench.costs import Harness

    harness = Harness("baseline")
    try:
        group_ids = [harness.group_id]
        for i in range(1, groups):
            status, body = harness.call(
                "POST", f"{harness.base}/Groups", {"schemas": [GROUP_SCHEMA], "displayName": f"g{i}"}
            )
            group_ids.append(json.loads(body)["id"])
        for _ in range(users):
            harness.create_user()
        made = list(harness.user_ids)
        for i, user_id in enumerate(made):
            op = {"op": "add", "path": "members", "value": [{"value": user_id}]}
            harness.call(
                "PATCH",
                f"{harness.base}/Groups/{group_ids[i % groups]}",
                {"schemas": [PATCH_SCHEMA], "Operations": [op]},
            )
        gone = made[: max(users // 10, 1)]
        deactivate = {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "replace", "value": {"active": False}}]}
        for user_id in gone:
            harness.call("PATCH", f"{harness.base}/Users/{user_id}", deactivate)
        for user_id in gone:
            harness.call("DELETE", f"{harness.base}/Users/{user_id}")
        return harness.directory
    finally:
        harness.restore()


def fold_once(users: int, groups: int) -> dict[str, float]:
    from django.db import connection

    from history.services import history_catch_up

    directory = _events_make(users, groups)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    wall, cpu, pg = time.perf_counter(), time.process_time(), _backend_cpu(backend)
    events = history_catch_up(directory=directory)
    wall, cpu, pg = time.perf_counter() - wall, time.process_time() - cpu, _backend_cpu(backend) - pg
    per = 1000 / events
    return {
        "events": events,
        "events_per_second": round(events / wall),
        "wall_ms_per_event": round(wall * per, 4),
        "process_cpu_ms_per_event": round(cpu * per, 4),
        "postgres_cpu_ms_per_event": round(pg * per, 4),
        "cpu_ms_per_event": round((cpu + pg) * per, 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database", default="roster_fold")
    parser.add_argument("--redis-db", type=int, default=13)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    systems.roster_in_process(database=args.database, redis_db=args.redis_db)
    runs = []
    for n in range(args.rounds):
        run = fold_once(args.users, args.groups)
        runs.append(run)
        print(f"round {n + 1}: " + ", ".join(f"{k} {v}" for k, v in run.items()), flush=True)
    best = min(runs, key=lambda r: r["cpu_ms_per_event"])
    print("least: " + ", ".join(f"{k} {v}" for k, v in best.items()))
    import subprocess

    # Nothing consumes the kicks made here; drop them so no worker ever tries them.
    subprocess.run(["redis-cli", "-n", str(args.redis_db), "FLUSHDB"], capture_output=True, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
