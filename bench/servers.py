"""Roster's documented web server against the alternatives: same workload, same run.

    bash bench/servers.sh                                  # N=2000, G=50, c=8, 3 rounds
    bash bench/servers.sh --users 300 --rounds 1           # a quick check that everything runs

The servers, each in front of the same Roster (the virtualenv `bench/.servers-venv` that servers.sh
makes: requirements.txt plus gunicorn, so all of them run the same Django and libraries):

- `web`: the documented command, `python -m server.web` (granian, the app imported once by the launcher
  before granian forks the workers);
- `granian`: the plain `granian --interface wsgi` line with the same options, without the launcher: each
  worker imports Django on its own (what the launcher's preload saves, in memory);
- `gthread`: gunicorn's `gthread` worker with `--preload`, the same workers and `--threads` threads each.

Each is a whole Roster stack (web server + Celery worker, as bench.compare starts it) on its own
database and Redis db, all started before the first round. Every round runs bench.workload against
each server in turn (webhooks on, each run on a new directory), the order rotating between rounds;
the report takes the median of the rounds: req/s per phase, the p99 of every write request (POST,
PATCH, DELETE phases together), the web server's CPU time per request, and the peak PSS of each web
server (launcher or master, and workers) over the whole run. Results go to
bench/results/servers-<time>.json (git-ignored).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import signal
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import systems
from bench.compare import RESULTS, log, machine, merge_rounds, receiver_start, run_one
from bench.procs import MemorySampler, Service
from server import web

SERVERS = ("web", "granian", "gthread")


def web_command(server: str, *, bin_dir: Path, port: int, workers: int, threads: int) -> list[str]:
    """The web server's command line; `web` is the README's (threads through GRANIAN_BLOCKING_THREADS)."""
    if server == "web":
        return systems.web_command(systems.RosterOptions(port=port, web_workers=workers, bin_dir=bin_dir))
    if server == "gthread":
        return [
            str(bin_dir / "gunicorn"),
            "--worker-class",
            "gthread",
            "--threads",
            str(threads),
            "--workers",
            str(workers),
            "--preload",
            "--bind",
            f"127.0.0.1:{port}",
            "config.wsgi:application",
        ]
    # Roster's defaults for granian (server/web.py), the threads given here.
    options = web.granian_arguments(
        web.parse(["--bind", f"127.0.0.1:{port}", "--workers", str(workers)]), {"GRANIAN_BLOCKING_THREADS": ""}
    )
    return [str(bin_dir / "granian"), *options[:-1], "--blocking-threads", str(threads), options[-1]]


def server_start(server: str, index: int, *, args: argparse.Namespace, logs: Path) -> systems.System:
    port = args.port + index
    bin_dir = args.servers_venv / "bin"
    opts = systems.RosterOptions(
        port=port,
        database=f"roster_bench_{server}",
        redis_db=args.redis_db + index,
        web_workers=args.workers,
        celery_pool=args.celery_pool,
        celery_concurrency=args.celery_concurrency,
        # The threads of both granian lines; gunicorn: two masters at once would share its default
        # control socket (unused here).
        extra_env={"GRANIAN_BLOCKING_THREADS": str(args.threads), "GUNICORN_CMD_ARGS": "--no-control-socket"},
        bin_dir=bin_dir,
        web=web_command(server, bin_dir=bin_dir, port=port, workers=args.workers, threads=args.threads),
    )
    system = systems.roster_start(opts, logs=logs / server)
    system.name = server
    return system


def table(merged: dict[str, dict[str, Any]], memory: dict[str, float]) -> str:
    names = [s for s in SERVERS if s in merged]

    def row(label: str, cells: list[str]) -> str:
        return f"| {label} | " + " | ".join(cells) + " |"

    lines = [row("phase", [f"{n} req/s" for n in names]), "|---|" + "---:|" * len(names)]
    for phase in merged[names[0]]["phases"]:
        rps = [next(p for p in merged[n]["phases"] if p["phase"] == phase["phase"])["rps"] for n in names]
        lines.append(row(phase["phase"], [f"{r:.0f}" for r in rps]))
    lines += [
        row("**whole workload**", [f"**{merged[n]['total']['rps']:.0f}**" for n in names]),
        row("write p99 ms", [f"{merged[n]['write_p99_ms']:.1f}" for n in names]),
        row("web server CPU ms per request", [f"{merged[n]['web_cpu_ms']:.2f}" for n in names]),
        row("peak PSS, web server MB", [f"{memory.get(n, 0.0):.1f}" for n in names]),
        row("errors", [str(merged[n]["total"]["errors"]) for n in names]),
        "",
    ]
    for n in names:
        for w in merged[n]["webhooks_all"]:
            lines.append(
                f"- {n} webhooks: {w['received']} received, {w['valid']} valid, {w['expected_total']} expected "
                f"({'all types complete' if w['complete'] else 'INCOMPLETE'}), delivery lag {w['lag_s']} s"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--list-passes", type=int, default=3)
    parser.add_argument("--servers", default=",".join(SERVERS), help="comma list of " + ", ".join(SERVERS))
    parser.add_argument(
        "--workers", type=int, default=web.workers_default(), help="web processes (server.web's default)"
    )
    parser.add_argument("--threads", type=int, default=1, help="threads running Roster in each web process")
    parser.add_argument("--servers-venv", type=Path, default=systems.BENCH / ".servers-venv")
    parser.add_argument("--port", type=int, default=8123, help="first port; the servers take the next ones")
    parser.add_argument("--redis-db", type=int, default=12, help="first Redis db; the servers take the next ones")
    parser.add_argument("--receiver-port", type=int, default=8766)
    parser.add_argument("--celery-pool", default="threads", choices=["threads", "prefork", "solo"])
    parser.add_argument("--celery-concurrency", type=int, default=4)
    parser.add_argument("--webhook-wait", type=float, default=120.0)
    parser.add_argument("--webhook-quiet", type=float, default=15.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    args.servers_venv = args.servers_venv.resolve()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    wanted = [s.strip() for s in args.servers.split(",") if s.strip()]
    unknown = set(wanted) - set(SERVERS)
    if unknown:
        parser.error(f"unknown servers: {', '.join(sorted(unknown))}")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    logs = RESULTS / f"logs-servers-{stamp}"
    out = args.out or RESULTS / f"servers-{stamp}.json"
    RESULTS.mkdir(parents=True, exist_ok=True)
    webhook_secret = secrets.token_urlsafe(32)

    started = time.time()
    running: dict[str, systems.System] = {}
    sampler = MemorySampler()
    receiver: Service | None = None
    runs: list[dict[str, Any]] = []
    try:
        receiver = receiver_start(args.receiver_port, webhook_secret, logs=logs)
        for index, server in enumerate(wanted):
            log(f"starting Roster behind {server}...")
            running[server] = server_start(server, index, args=args, logs=logs)
            sampler.watch(server, [running[server].services[0].pid])  # the web server: launcher and workers
        sampler.start()
        for r in range(args.rounds):
            # Rotate who goes first, so no server always runs on a warmer (or busier) machine.
            for server in wanted[r % len(wanted) :] + wanted[: r % len(wanted)]:
                runs.append(
                    run_one(
                        running[server],
                        args=args,
                        concurrency=args.concurrency,
                        receiver_port=args.receiver_port,
                        webhook_secret=webhook_secret,
                        profiler=None,
                        receiver_pid=receiver.pid,
                    )
                )
    finally:
        sampler.stop()
        with contextlib.suppress(Exception):
            sampler.sample_once()
        for system in running.values():
            system.stop()
        if receiver:
            receiver.stop()

    merged: dict[str, dict[str, Any]] = {}
    for server in wanted:
        same = [run for run in runs if run["system"] == server]
        if same:
            merged[server] = merge_rounds(same)
            merged[server]["write_p99_ms"] = round(statistics.median(run["write_p99_ms"] for run in same), 2)
            merged[server]["web_cpu_ms"] = round(
                statistics.median(run["cpu_ms_per_request"].get("roster-web", 0.0) for run in same), 2
            )
    memory = {name: round(kib / 1024, 1) for name, kib in sampler.peak_pss.items()}
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python -m bench.servers " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine(),
        "users": args.users,
        "groups": args.groups,
        "concurrency": args.concurrency,
        "workers": args.workers,
        "threads": args.threads,
        "rounds": args.rounds,
        "seconds": round(time.time() - started, 1),
        "peak_pss_mb": memory,
        "peak_pss_split_mb": {
            name: [[cmd, round(kib / 1024, 1)] for cmd, kib in split] for name, split in sampler.peak_split.items()
        },
        "runs": runs,
    }
    out.write_text(json.dumps(report, indent=2))
    print()
    print(
        f"## Web servers — N={args.users}, G={args.groups}, c={args.concurrency}, {args.workers} workers × "
        f"{args.threads} thread(s), rounds={args.rounds} ({report['date']})"
    )
    print()
    if merged:
        print(table(merged, memory))
    print()
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
