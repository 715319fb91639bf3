"""Sampling Roster under load with py-spy, one recording per workload phase, and summing it up.

py-spy (a dev dependency) attaches to the web server's launcher (`python -m server.web`) with
`--subprocesses`, so every granian worker is sampled; `--nonblocking` keeps it from pausing the workers
it samples. Idle threads (a worker blocked waiting for a request or for PostgreSQL) are not sampled, so
the counts are CPU time of the workers.

Summaries list, per phase: the hottest functions by self time, the project's functions by inclusive
time, and the share of samples spent in a few buckets (ORM, SQL driver, JSON, middleware, DRF).
"""

from __future__ import annotations

import collections
import contextlib
import re
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.systems import ROOT, VENV_BIN

PROJECT_DIRS = ("scim/", "webhooks/", "directories/", "adminauth/", "config/", "portal/")
# Buckets: a sample counts in a bucket when any frame's file matches (a sample may be in several).
BUCKETS = {
    "ORM (django/db/models)": re.compile(r"django/db/models/"),
    "SQL driver (psycopg + django/db/backends)": re.compile(r"psycopg/|django/db/backends/"),
    "transaction / connection handling": re.compile(r"django/db/transaction\.py|django/db/utils\.py|close_old_conn"),
    "middleware (django/middleware, contrib/*/middleware)": re.compile(r"django/middleware/|middleware\.py"),
    "DRF (rest_framework)": re.compile(r"rest_framework/"),
    "JSON (json / orjson)": re.compile(r"json/|orjson"),
    "URL resolving": re.compile(r"django/urls/"),
    "crypto (secret decryption, hmac)": re.compile(r"cryptography/|hmac\.py|crypto\.py"),
    # granian parses HTTP in Rust (native frames py-spy does not name); its Python side is the WSGI glue.
    "granian (WSGI glue)": re.compile(r"granian/"),
}
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def _frame(text: str) -> tuple[str, str]:
    m = _FRAME.match(text.strip())
    if not m:
        return text.strip(), ""
    file = m.group("file")
    # Shorten site-packages and project paths so the table reads "django/db/models/query.py".
    for marker in ("site-packages/", "lib/python3.11/", str(ROOT) + "/"):
        if marker in file:
            file = file.split(marker, 1)[1]
    return m.group("func"), file


def summarize(path: Path, top: int = 12) -> dict[str, Any]:
    self_time: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    buckets: collections.Counter[str] = collections.Counter()
    total = 0
    if not path.exists():
        return {"samples": 0}
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame(f) for f in stack.split(";") if f and not f.startswith("process ")]
        frames = [f for f in frames if f[1]]  # drop thread/process header frames
        if not frames:
            continue
        total += count
        func, file = frames[-1]
        self_time[f"{file}:{func}"] += count
        seen: set[str] = set()
        for func, file in frames:
            if file.startswith(PROJECT_DIRS):
                key = f"{file}:{func}"
                if key not in seen:
                    seen.add(key)
                    inclusive[key] += count
        files = " ".join(file + ":" + func for func, file in frames)
        for name, pattern in BUCKETS.items():
            if pattern.search(files):
                buckets[name] += count

    def pct(n: int) -> float:
        return round(100.0 * n / total, 1) if total else 0.0

    return {
        "samples": total,
        "self": [(k, pct(v)) for k, v in self_time.most_common(top)],
        "project_inclusive": [(k, pct(v)) for k, v in inclusive.most_common(top)],
        "buckets": [(k, pct(v)) for k, v in buckets.most_common()],
    }


class PhaseProfiler:
    """Starts one `py-spy record` per phase on the web launcher (all workers) and one on Celery."""

    def __init__(self, web_pid: int, out_dir: Path, *, celery_pid: int | None = None, rate: int = 100) -> None:
        self.web_pid = web_pid
        self.celery_pid = celery_pid
        self.out_dir = out_dir
        self.rate = rate
        self.exe = str(VENV_BIN / "py-spy") if (VENV_BIN / "py-spy").exists() else shutil.which("py-spy")
        if not self.exe:
            raise RuntimeError("py-spy is not installed: .venv/bin/pip install -r requirements-dev.txt")
        out_dir.mkdir(parents=True, exist_ok=True)
        self.files: dict[str, Path] = {}
        self._running: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, label: str, pid: int) -> None:
        path = self.out_dir / f"{label}.txt"
        self.files[label] = path
        argv = [self.exe, "record", "--pid", str(pid), "--subprocesses", "--nonblocking", "--format", "raw"]
        argv += ["--rate", str(self.rate), "--output", str(path)]
        log = open(self.out_dir / f"{label}.log", "wb")  # noqa: SIM115 - handed to the child
        self._running[label] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)

    def stop(self, label: str) -> None:
        proc = self._running.pop(label, None)
        if proc is None:
            return
        # py-spy writes its output when interrupted, like Ctrl-C.
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def stop_all(self) -> None:
        for label in list(self._running):
            self.stop(label)

    def hooks(self, prefix: str) -> Callable[[str, str], None]:
        def hook(phase: str, event: str) -> None:
            label = f"{prefix}-{phase}"
            if event == "start":
                self.start(label, self.web_pid)
            else:
                self.stop(label)

        return hook

    def summaries(self) -> dict[str, Any]:
        return {label: summarize(path) for label, path in self.files.items()}

    def report(self) -> str:
        lines = ["### Profile (py-spy, CPU samples of all web workers / the Celery worker)", ""]
        for label, s in self.summaries().items():
            if not s.get("samples"):
                lines.append(f"- {label}: no samples")
                continue
            lines.append(f"#### {label} ({s['samples']} samples)")
            lines.append("buckets: " + ", ".join(f"{k} {v}%" for k, v in s["buckets"]))
            lines.append("")
            lines.append("self time: " + "; ".join(f"`{k}` {v}%" for k, v in s["self"][:8]))
            lines.append("")
            lines.append("project code, inclusive: " + "; ".join(f"`{k}` {v}%" for k, v in s["project_inclusive"][:8]))
            lines.append("")
        return "\n".join(lines)


@contextlib.contextmanager
def recording(profiler: PhaseProfiler | None, label: str, pid: int | None):  # noqa: ANN201
    """Record `pid` for the duration of the block (no-op without a profiler or pid)."""
    if profiler is None or pid is None:
        yield
        return
    profiler.start(label, pid)
    try:
        yield
    finally:
        profiler.stop(label)
