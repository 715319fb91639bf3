"""Where a web worker's memory comes from: /proc/<pid>/smaps_rollup of every web process over time.

    .venv/bin/python -m bench.memgrowth                    # 1 worker: after start, first request, 100 and 2000 users
    .venv/bin/python -m bench.memgrowth --workers 3

Starts Roster as `bench.compare` does (`python -m server.web`: the launcher imports the app, then granian
forks the workers; PostgreSQL `roster_bench` recreated, a Celery worker), then prints, for the launcher
and each worker, RSS, PSS, the pages still shared with the launcher (Shared_Dirty: the preloaded heap) and
the worker's own (Private_Dirty: pages it copied on write, plus what it allocated) at each step, and the
PSS of all of Roster's processes together (web and Celery). Memory that stops growing after the first
requests is the copied heap, not a leak. `--threads` sets GRANIAN_BLOCKING_THREADS, so shapes with fewer
workers and more threads can be priced too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench import systems
from bench.procs import process_tree, recreate_database
from bench.workload import Workload, WorkloadConfig

FIELDS = ("Rss", "Pss", "Shared_Clean", "Shared_Dirty", "Private_Clean", "Private_Dirty", "Anonymous")


def rollup(pid: int) -> dict[str, float]:
    """MB per smaps_rollup field of `pid` (Linux)."""
    values: dict[str, float] = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                values[parts[0].rstrip(":")] = int(parts[1]) / 1024
    return {name: round(values.get(name, 0.0), 1) for name in FIELDS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="threads running Roster in each worker")
    parser.add_argument("--sizes", default="100,2000", help="users per workload, run one after the other")
    args = parser.parse_args(argv)
    opts = systems.RosterOptions(web_workers=args.workers, extra_env={"GRANIAN_BLOCKING_THREADS": str(args.threads)})
    recreate_database(opts.database)
    logs = systems.ROOT / "bench" / "results" / "memgrowth-logs"
    logs.mkdir(parents=True, exist_ok=True)
    roster = systems.roster_start(opts, logs=Path(logs))
    web = roster.services[0].pid
    print("| step | process | " + " | ".join(FIELDS) + " |")
    print("|---|---|" + "---:|" * len(FIELDS))

    def show(step: str) -> None:
        for pid in process_tree([web]):
            role = "launcher" if pid == web else f"worker {pid}"
            print(f"| {step} | {role} | " + " | ".join(f"{v:.1f}" for v in rollup(pid).values()) + " |", flush=True)
        total = sum(rollup(pid)["Pss"] for pid in process_tree(roster.pids()))
        print(f"| {step} | all of Roster (web + Celery) | | {total:.1f} |" + " |" * (len(FIELDS) - 2), flush=True)

    try:
        show("started")
        # The webhook goes nowhere (port 9, discard); deliveries fail and are retried later, which the
        # web processes do not see.
        scim_path, secret = roster.directory_create(
            tag="memgrowth", webhook_url="http://127.0.0.1:9/hook", webhook_secret="memgrowth-" * 4
        )
        show("first request (directory create)")
        for size in (int(s) for s in args.sizes.split(",") if s):
            config = WorkloadConfig(users=size, groups=10, concurrency=2, list_passes=1)
            workload = Workload(base_url=roster.base_url, scim_path=scim_path, scim_secret=secret, config=config)
            try:
                workload.run()
            finally:
                workload.close()
            show(f"after the {size}-user workload")
    finally:
        roster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
