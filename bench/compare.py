"""Roster against the Jackson reference, same workload, same machine, same run.

    .venv/bin/python -m bench.compare                       # N=2000, G=50, concurrency 8 then 1
    .venv/bin/python -m bench.compare --users 200 --concurrency 8 --systems jackson   # quick look
    bash bench/compare.sh --concurrency 8 --rounds 3 --repeat 3    # the final check: three compares, medians

Starts a webhook receiver, Roster in production shape (the README's commands: `python -m server.web` and
`python -m server.worker`, DEBUG off, PostgreSQL, a Celery worker on Redis) and Jackson (bench/.jackson,
`npm ci` on first use), each on a fresh database; runs the workload of bench.workload against both,
alternating which goes first; waits for every webhook; prints one table per concurrency with the
Roster/Jackson ratio per phase and overall, and the peak memory of each system (all its processes summed),
then a summary of the highest concurrency: the overall ratio, every phase's ratio, Roster's write p99, the
peak PSS of both systems and each system's CPU milliseconds per request (the system under test only:
Roster's web server, Celery worker and its PostgreSQL backends; Jackson's node and its PostgreSQL backends).
Each round also logs that CPU per request phase by phase ("CPU ms per request, <phase>": where the CPU goes
by request kind), kept in the results as `cpu_ms_per_request_by_phase`. `--repeat N` runs N whole
compares one after the other (fresh databases and processes each) and prints the median of each summary
figure. Results also go to bench/results/compare-<time>.json (git-ignored).
Everything stops by itself.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import systems
from bench.httpclient import Client
from bench.procs import CpuMeter, MemorySampler, Service, postgres_backends, process_tree, wait_http
from bench.profiling import PhaseProfiler, recording
from bench.stats import PhaseResult, median_summary
from bench.workload import Workload, WorkloadConfig, totals, write_p99_ms

RESULTS = systems.BENCH / "results"
# What `--busy` runs: a process that only burns CPU, as another tenant of the host would. It starts after
# both systems are up and stops before the report, so it shares the cores with the measured rounds only.
BUSY_LOOP = "while True: pass"


def log(message: str) -> None:
    print(message, flush=True)


def receiver_start(port: int, secret: str, *, logs: Path) -> Service:
    """The webhook receiver (bench.receiver, its own process), up and answering."""
    receiver = Service(
        "receiver",
        [sys.executable, "-m", "bench.receiver", "--port", str(port), f"--secret={secret}"],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=systems.ROOT,
        log=logs / "receiver.log",
    )
    wait_http("127.0.0.1", port, "/health", timeout=20, proc=receiver)
    return receiver


def wait_webhooks(
    receiver_port: int,
    key: str,
    expected: dict[str, int],
    *,
    since: float,
    since_write: float,
    max_wait: float,
    quiet: float,
) -> dict[str, Any]:
    """Poll the receiver until every expected event type has arrived, or deliveries stop coming."""
    client = Client(f"http://127.0.0.1:{receiver_port}")
    deadline = time.monotonic() + max_wait
    last_count, last_change = -1, time.monotonic()
    stats: dict[str, Any] = {}
    while time.monotonic() < deadline:
        stats = client.request("GET", f"/stats/{key}").json()
        if all(stats["by_type"].get(t, 0) >= n for t, n in expected.items()):
            break
        if stats["received"] != last_count:
            last_count, last_change = stats["received"], time.monotonic()
        elif time.monotonic() - last_change > quiet:
            break
        time.sleep(0.1)
    client.close()
    stats["expected"] = expected
    stats["expected_total"] = sum(expected.values())
    stats["complete"] = all(stats["by_type"].get(t, 0) >= n for t, n in expected.items())
    last = stats.get("last_at")
    # The measure: last webhook after the last request (check_404 reads come after the deletes).
    stats["lag_s"] = round(max(0.0, last - since), 3) if last else None
    # Stricter: last webhook after the last request that produced an event.
    stats["lag_after_last_write_s"] = round(last - since_write, 3) if last else None
    return stats


def run_one(
    system: systems.System,
    *,
    args: argparse.Namespace,
    concurrency: int,
    receiver_port: int,
    webhook_secret: str,
    profiler: PhaseProfiler | None,
    receiver_pid: int,
) -> dict[str, Any]:
    tag = secrets.token_hex(4)
    hook = f"http://127.0.0.1:{receiver_port}/{system.webhook_scheme}/{tag}"
    if system.name == "roster":
        scim_path, scim_secret = systems.roster_directory_create(
            system, tag=tag, webhook_url=hook, webhook_secret=webhook_secret
        )
    else:
        scim_path, scim_secret = system.directory_create(tag=tag, webhook_url=hook, webhook_secret=webhook_secret)
    config = WorkloadConfig(
        users=args.users,
        groups=args.groups,
        concurrency=concurrency,
        page_size=system.page_size,
        list_passes=args.list_passes,
        totals_capped=system.totals_capped,
        tag=tag,
    )
    workload = Workload(base_url=system.base_url, scim_path=scim_path, scim_secret=scim_secret, config=config)
    log(f"{system.name} c={concurrency} (directory {scim_path})")
    # CPU seconds of every process involved, from the first request until the last webhook arrived.
    groups = {svc.name: (lambda pid=svc.pid: process_tree([pid])) for svc in system.services}
    groups[f"postgres ({system.database})"] = lambda: postgres_backends(system.database)
    groups["webhook receiver"] = lambda: process_tree([receiver_pid])
    groups["load generator"] = lambda: [os.getpid()]
    meter = CpuMeter(groups)
    meter.start()
    prefix = f"{system.name}-c{concurrency}"
    phase_cpu: dict[str, dict[str, float]] = {}
    system_groups = {k: v for k, v in groups.items() if k not in _HARNESS}
    hooks = phase_cpu_hook(system_groups, phase_cpu, profiler.hooks(prefix) if profiler else None)
    with recording(profiler, f"{prefix}-celery", profiler.celery_pid if profiler else None):
        try:
            results = workload.run(log=log, phase_hook=hooks)
        finally:
            workload.close()
        webhooks = wait_webhooks(
            receiver_port,
            f"{system.webhook_scheme}/{tag}",
            workload.expected_events(),
            since=workload.last_request_at,
            since_write=workload.last_write_at,
            max_wait=args.webhook_wait,
            quiet=args.webhook_quiet,
        )
    cpu = meter.stop()
    requests = sum(r.requests for r in results)
    cpu_per_request = {k: round(v * 1000 / requests, 2) for k, v in cpu.items()} if requests else {}
    kernel_per_request = {k: round(v * 1000 / requests, 2) for k, v in meter.kernel.items()} if requests else {}
    log(
        "  CPU ms per request (of which kernel): "
        + ", ".join(f"{k} {v} ({kernel_per_request.get(k, 0.0)})" for k, v in cpu_per_request.items())
    )
    by_phase = phase_cpu_per_request(results, phase_cpu)
    for phase, shares in by_phase.items():
        log(f"  CPU ms per request, {phase}: " + ", ".join(f"{k} {v}" for k, v in shares.items()))
    log(
        f"  webhooks: {webhooks['received']} received, {webhooks['valid']} valid, "
        f"{webhooks['expected_total']} expected (complete={webhooks['complete']}), lag {webhooks['lag_s']} s "
        f"({webhooks['lag_after_last_write_s']} s after the last delete)"
        + (f", invalid: {webhooks['invalid_reasons']}" if webhooks["invalid"] else "")
    )
    return {
        "system": system.name,
        "concurrency": concurrency,
        "phases": [r.summary() for r in results],
        "total": totals(results),
        "write_p99_ms": write_p99_ms(results),
        "webhooks": webhooks,
        "cpu_seconds": cpu,
        "cpu_ms_per_request": cpu_per_request,
        "kernel_cpu_ms_per_request": kernel_per_request,
        "cpu_ms_per_request_by_phase": by_phase,
    }


def phase_cpu_hook(
    groups: dict[str, Callable[[], list[int]]],
    used: dict[str, dict[str, float]],
    inner: Callable[[str, str], None] | None,
) -> Callable[[str, str], None]:
    """A workload phase hook that puts the CPU seconds of each process group during each phase in `used`
    (and calls `inner`, the profiler's hook, when there is one). Webhooks a phase leaves to deliver are
    counted in the phase during which they are delivered."""
    meter = CpuMeter(groups)

    def hook(name: str, edge: str) -> None:
        if inner:
            inner(name, edge)
        if edge == "start":
            meter.start()
        else:
            used[name] = meter.stop()

    return hook


def phase_cpu_per_request(results: list[PhaseResult], used: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """CPU milliseconds per request of each process group, by phase."""
    return {
        r.name: {group: round(seconds * 1000 / r.requests, 2) for group, seconds in used[r.name].items()}
        for r in results
        if r.requests and r.name in used
    }


def merge_rounds(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median over rounds of the same system and concurrency."""
    merged = dict(runs[0])
    names = [p["phase"] for p in runs[0]["phases"]]
    merged["phases"] = [median_summary([next(p for p in r["phases"] if p["phase"] == n) for r in runs]) for n in names]
    rps = sorted(r["total"]["rps"] for r in runs)
    merged["total"] = dict(runs[0]["total"], rps=rps[len(rps) // 2], errors=sum(r["total"]["errors"] for r in runs))
    merged["webhooks_all"] = [r["webhooks"] for r in runs]
    merged["write_p99_ms"] = _median([r["write_p99_ms"] for r in runs])
    merged["cpu_ms_per_request"] = {
        key: _median([r["cpu_ms_per_request"].get(key, 0.0) for r in runs]) for key in runs[0]["cpu_ms_per_request"]
    }
    return merged


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return (
        ordered[len(ordered) // 2]
        if len(ordered) % 2
        else (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2
    )


# The processes that are not the system under test: they serve both systems alike.
_HARNESS = ("webhook receiver", "load generator")


def under_test_cpu_ms(run: dict[str, Any]) -> float:
    """CPU ms per request of the system under test: its server processes and its PostgreSQL backends."""
    return round(sum(v for k, v in run.get("cpu_ms_per_request", {}).items() if k not in _HARNESS), 2)


def summary(
    by_key: dict[tuple[str, int], dict[str, Any]], memory: dict[str, dict[str, Any]], concurrency: int
) -> dict[str, Any]:
    """The figures the speed bound is checked on, at one concurrency."""
    roster, jackson = by_key.get(("roster", concurrency)), by_key.get(("jackson", concurrency))
    out: dict[str, Any] = {"concurrency": concurrency}
    if roster and jackson and jackson["total"]["rps"]:
        out["ratio"] = round(roster["total"]["rps"] / jackson["total"]["rps"], 3)
        phases = {}
        for phase in roster["phases"]:
            other = next((p for p in jackson["phases"] if p["phase"] == phase["phase"]), None)
            if other and other["rps"]:
                phases[phase["phase"]] = round(phase["rps"] / other["rps"], 3)
        out["phase_ratios"] = phases
        if phases:
            lowest = min(phases, key=phases.__getitem__)
            out["lowest_phase"] = [lowest, phases[lowest]]
    for name, run in (("roster", roster), ("jackson", jackson)):
        if run:
            out[f"{name}_rps"] = run["total"]["rps"]
            out[f"{name}_write_p99_ms"] = run["write_p99_ms"]
            out[f"{name}_cpu_ms_per_request"] = under_test_cpu_ms(run)
        if name in memory:
            out[f"{name}_peak_pss_mb"] = memory[name]["peak_pss_mb"]
    return out


SUMMARY_ROWS = (
    ("Roster/Jackson, whole workload", "ratio", "{:.2f}×"),
    ("Roster req/s", "roster_rps", "{:.0f}"),
    ("Jackson req/s", "jackson_rps", "{:.0f}"),
    ("Roster write p99 ms", "roster_write_p99_ms", "{:.1f}"),
    ("Jackson write p99 ms", "jackson_write_p99_ms", "{:.1f}"),
    ("peak PSS Roster (web + worker) MB", "roster_peak_pss_mb", "{:.1f}"),
    ("peak PSS Jackson MB", "jackson_peak_pss_mb", "{:.1f}"),
    ("CPU ms per request, Roster (web + worker + its PostgreSQL)", "roster_cpu_ms_per_request", "{:.2f}"),
    ("CPU ms per request, Jackson (node + its PostgreSQL)", "jackson_cpu_ms_per_request", "{:.2f}"),
)


def summary_table(summaries: list[dict[str, Any]]) -> str:
    """One column per compare, and the median when there are several."""
    several = len(summaries) > 1
    head = [f"compare {i + 1}" for i in range(len(summaries))] + (["**median**"] if several else [])
    lines = [
        f"### Summary at concurrency {summaries[0]['concurrency']}",
        "",
        "| figure | " + " | ".join(head) + " |",
        "|---|" + "---:|" * len(head),
    ]

    def cells(values: list[Any], fmt: str) -> list[str]:
        shown = [fmt.format(v) if isinstance(v, (int, float)) else "—" for v in values]
        numbers = [v for v in values if isinstance(v, (int, float))]
        if several:
            shown.append("**" + fmt.format(_median(numbers)) + "**" if numbers else "—")
        return shown

    for label, key, fmt in SUMMARY_ROWS:
        lines.append(f"| {label} | " + " | ".join(cells([s.get(key) for s in summaries], fmt)) + " |")
    phases = list(summaries[0].get("phase_ratios", {}))
    for phase in phases:
        values = [s.get("phase_ratios", {}).get(phase) for s in summaries]
        lines.append(f"| {phase}, Roster/Jackson | " + " | ".join(cells(values, "{:.2f}×")) + " |")
    if phases:
        lows = [s.get("lowest_phase") for s in summaries]
        lines.append(
            "| lowest phase | "
            + " | ".join(f"{low[0]} {low[1]:.2f}×" if low else "—" for low in lows)
            + (" | |" if several else " |")
        )
    return "\n".join(lines)


def _fmt(p: dict[str, Any] | None) -> tuple[str, str, str]:
    if p is None:
        return "—", "—", "—"
    return f"{p['rps']:.0f}", f"{p['p50_ms']:.1f} / {p['p95_ms']:.1f} / {p['p99_ms']:.1f}", str(p["errors"])


def table(by_key: dict[tuple[str, int], dict[str, Any]], concurrency: int) -> str:
    roster = by_key.get(("roster", concurrency))
    jackson = by_key.get(("jackson", concurrency))
    base = roster or jackson
    if base is None:
        return ""
    lines = [
        f"#### concurrency {concurrency}",
        "",
        "| phase | Roster req/s | Roster p50 / p95 / p99 ms | err | Jackson req/s | Jackson p50 / p95 / p99 ms | err "
        "| Roster/Jackson |",
        "|---|---:|---|---:|---:|---|---:|---:|",
    ]
    for phase in base["phases"]:
        name = phase["phase"]
        r = next((p for p in roster["phases"] if p["phase"] == name), None) if roster else None
        j = next((p for p in jackson["phases"] if p["phase"] == name), None) if jackson else None
        ratio = f"{r['rps'] / j['rps']:.2f}×" if r and j and j["rps"] else "—"
        lines.append(f"| {name} | {' | '.join(_fmt(r))} | {' | '.join(_fmt(j))} | {ratio} |")
    rt = roster["total"] if roster else None
    jt = jackson["total"] if jackson else None
    ratio = f"**{rt['rps'] / jt['rps']:.2f}×**" if rt and jt and jt["rps"] else "—"
    r_rps = f"**{rt['rps']:.0f}**" if rt else "—"
    j_rps = f"**{jt['rps']:.0f}**" if jt else "—"
    r_err = rt["errors"] if rt else "—"
    j_err = jt["errors"] if jt else "—"
    lines.append(f"| **whole workload** | {r_rps} | | {r_err} | {j_rps} | | {j_err} | {ratio} |")
    lines.append("")
    for name, run in (("Roster", roster), ("Jackson", jackson)):
        if not run:
            continue
        for w in run.get("webhooks_all", [run["webhooks"]]):
            lines.append(
                f"- {name} webhooks: {w['received']} received, {w['valid']} valid, {w['expected_total']} expected "
                f"({'all types complete' if w['complete'] else 'INCOMPLETE'}), delivery lag {w['lag_s']} s "
                f"({w.get('lag_after_last_write_s')} s after the last delete)"
                + (f", duplicates {w['duplicates']}" if w.get("duplicates") else "")
                + (f", invalid {w['invalid_reasons']}" if w["invalid"] else "")
            )
        if run.get("cpu_ms_per_request"):
            parts = ", ".join(f"{k} {v}" for k, v in run["cpu_ms_per_request"].items())
            lines.append(f"- {name} CPU ms per request (whole workload, webhooks included): {parts}")
        notes = sorted({n for p in run["phases"] for n in p["notes"]})
        for n in notes:
            lines.append(f"- {name}: {n}")
    return "\n".join(lines)


def machine() -> dict[str, str]:
    free = subprocess.run(["free", "-h"], capture_output=True, text=True).stdout.strip()
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    load = Path("/proc/loadavg").read_text().split()[:3]
    return {"nproc": nproc, "free": free, "python": platform.python_version(), "loadavg": " ".join(load)}


def _metrics_save(roster: systems.System, path: Path) -> None:
    """Roster's /metrics after the run (what the node counted: requests, events, deliveries, lag), kept
    with the logs; best effort, it is not part of the comparison."""
    try:
        client = Client(roster.base_url, token=roster.env.get("METRICS_TOKEN"))
        path.write_bytes(client.request("GET", "/metrics").body)
        client.close()
    except Exception as exc:  # noqa: BLE001 - a missing scrape must not fail a benchmark run
        print(f"/metrics not saved: {type(exc).__name__}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--concurrency", default="8,1", help="comma list, e.g. 8,1")
    parser.add_argument("--rounds", type=int, default=1, help="repeat and report the median of each number")
    parser.add_argument("--list-passes", type=int, default=3)
    parser.add_argument("--systems", default="roster,jackson")
    parser.add_argument("--roster-port", type=int, default=8123)
    parser.add_argument("--jackson-port", type=int, default=5225)
    parser.add_argument("--receiver-port", type=int, default=8766)
    systems.web_arguments_add(parser)
    parser.add_argument("--celery-pool", default="threads", choices=["threads", "prefork", "solo"])
    parser.add_argument("--celery-concurrency", type=int, default=4)
    parser.add_argument("--no-encryption", action="store_true", help="run Roster without DB_ENCRYPTION_KEY")
    parser.add_argument("--webhook-wait", type=float, default=120.0, help="longest wait for webhooks after a run")
    parser.add_argument("--webhook-quiet", type=float, default=15.0, help="give up when none arrive for this long")
    parser.add_argument("--profile", action="store_true", help="py-spy each Roster phase at the highest concurrency")
    parser.add_argument(
        "--busy",
        type=int,
        default=0,
        help="run this many CPU-bound processes beside both systems during the rounds (a shared host)",
    )
    parser.add_argument(
        "--roster-venv",
        type=Path,
        default=None,
        help="virtualenv that runs Roster (compare.sh: bench/.roster-venv, requirements.txt only); default .venv",
    )
    parser.add_argument("--repeat", type=int, default=1, help="whole compares in a row; prints their medians")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    # `timeout` and CI send SIGTERM: turn it into SystemExit so the finally blocks stop every server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    summaries = []
    for i in range(max(1, args.repeat)):
        if args.repeat > 1:
            log(f"=== compare {i + 1} of {args.repeat} ===")
        summaries.append(compare_once(args, argv)["summary"])
    if len(summaries) > 1:
        print()
        print(summary_table(summaries))
    return 0


def compare_once(args: argparse.Namespace, argv: list[str] | None) -> dict[str, Any]:
    """One whole compare: start everything, run the rounds, stop everything, print and save the report."""
    wanted = [s.strip() for s in args.systems.split(",") if s.strip()]
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    logs = RESULTS / f"logs-{stamp}"
    out = (args.out if args.repeat <= 1 else None) or RESULTS / f"compare-{stamp}.json"
    RESULTS.mkdir(parents=True, exist_ok=True)
    webhook_secret = secrets.token_urlsafe(32)

    started = time.time()
    running: list[systems.System] = []
    sampler = MemorySampler()
    receiver: Service | None = None
    runs: list[dict[str, Any]] = []
    profiler: PhaseProfiler | None = None
    busy: list[Service] = []
    try:
        receiver = receiver_start(args.receiver_port, webhook_secret, logs=logs)
        by_name: dict[str, systems.System] = {}
        if "jackson" in wanted:
            systems.jackson_install(log)
            log("starting Jackson...")
            by_name["jackson"] = systems.jackson_start(port=args.jackson_port, database="jackson_bench", logs=logs)
        if "roster" in wanted:
            log("starting Roster (python -m server.web + python -m server.worker)...")
            opts = systems.RosterOptions(
                port=args.roster_port,
                web_workers=args.web_workers,
                celery_pool=args.celery_pool,
                celery_concurrency=args.celery_concurrency,
                encrypt_secrets=not args.no_encryption,
                extra_env=systems.web_env(args),
                bin_dir=(args.roster_venv.resolve() / "bin") if args.roster_venv else systems.VENV_BIN,
            )
            by_name["roster"] = systems.roster_start(opts, logs=logs)
            if args.profile:
                roster = by_name["roster"]
                profiler = PhaseProfiler(roster.services[0].pid, logs / "profile", celery_pid=roster.services[1].pid)
        running = list(by_name.values())
        for s in running:
            sampler.watch(s.name, s.pids())
        sampler.start()
        busy = [
            Service(
                f"busy-{i}",
                [sys.executable, "-c", BUSY_LOOP],
                env=dict(os.environ),
                cwd=systems.ROOT,
                log=logs / "busy.log",
            )
            for i in range(args.busy)
        ]
        order = [n for n in ("roster", "jackson") if n in by_name]
        for r in range(args.rounds):
            for ci, c in enumerate(levels):
                # Alternate who goes first, so neither always runs on a warmer (or busier) machine.
                seq = order if (r + ci) % 2 == 0 else list(reversed(order))
                for name in seq:
                    prof = profiler if (profiler and name == "roster" and c == max(levels) and r == 0) else None
                    runs.append(
                        run_one(
                            by_name[name],
                            args=args,
                            concurrency=c,
                            receiver_port=args.receiver_port,
                            webhook_secret=webhook_secret,
                            profiler=prof,
                            receiver_pid=receiver.pid,
                        )
                    )
        if "roster" in by_name:
            _metrics_save(by_name["roster"], logs / "roster-metrics.txt")
    finally:
        for b in busy:
            b.stop()
        if profiler:
            profiler.stop_all()
        sampler.stop()
        with contextlib.suppress(Exception):
            sampler.sample_once()
        for s in running:
            s.stop()
        if receiver:
            receiver.stop()

    by_key: dict[tuple[str, int], dict[str, Any]] = {}
    for name in ("roster", "jackson"):
        for c in levels:
            same = [r for r in runs if r["system"] == name and r["concurrency"] == c]
            if same:
                by_key[(name, c)] = merge_rounds(same)
    memory = {
        name: {
            "peak_rss_mb": round(sampler.peak_rss.get(name, 0) / 1024, 1),
            "peak_pss_mb": round(sampler.peak_pss.get(name, 0) / 1024, 1),
            "processes": sampler.peak_procs.get(name, 0),
            "peak_pss_split_mb": [[cmd, round(kib / 1024, 1)] for cmd, kib in sampler.peak_split.get(name, [])],
        }
        for name in sampler.groups
    }
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python -m bench.compare " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine(),
        "users": args.users,
        "groups": args.groups,
        "rounds": args.rounds,
        "busy": args.busy,
        "seconds": round(time.time() - started, 1),
        "memory": memory,
        "runs": runs,
        "profile": profiler.summaries() if profiler else None,
        "summary": summary(by_key, memory, max(levels)),
    }
    out.write_text(json.dumps(report, indent=2))
    print()
    print(f"## Roster vs Jackson — N={args.users}, G={args.groups}, rounds={args.rounds} ({report['date']})")
    print()
    for c in levels:
        print(table(by_key, c))
        print()
    print("| system | peak RSS, all processes | peak PSS | processes |")
    print("|---|---:|---:|---:|")
    for name, m in memory.items():
        print(f"| {name} | {m['peak_rss_mb']} MB | {m['peak_pss_mb']} MB | {m['processes']} |")
    for name, m in memory.items():
        parts = ", ".join(f"{cmd} {mb} MB" for cmd, mb in m["peak_pss_split_mb"])
        print(f"- {name} at its peak, PSS per process: {parts}")
    if profiler:
        print()
        print(profiler.report())
    print()
    print(summary_table([report["summary"]]))
    print()
    print(f"results: {out}")
    return report


if __name__ == "__main__":
    sys.exit(main())
