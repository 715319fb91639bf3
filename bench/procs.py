"""Starting and stopping the processes of a benchmark run, and sampling their memory.

Every process is started in its own session (process group), so stopping it stops its children
(web workers, Celery pool processes, npm's node) and nothing else on this shared machine.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

PG_ADMIN = ["-h", "127.0.0.1", "-U", "postgres"]


class Service:
    def __init__(self, name: str, argv: list[str], *, env: dict[str, str], cwd: Path, log: Path) -> None:
        self.name = name
        self.log_path = log
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            argv, env=env, cwd=cwd, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        # Children that outlived the leader (a Celery pool process) share its process group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # Field 4 (ppid) follows the command name in parentheses, which may itself contain spaces.
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def process_tree(roots: list[int]) -> list[int]:
    children = _children_map()
    seen: list[int] = []
    stack = list(roots)
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.append(pid)
        stack.extend(children.get(pid, []))
    return seen


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in KiB; PSS splits shared pages (forked workers) fairly."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def command_name(pid: int) -> str:
    """A short name for a process: its program and first argument ("server.web", "celery -A")."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return str(pid)
    words = [Path(a).name for a in argv if not Path(a).name.startswith("python") and a != "-m"][:2]
    return " ".join(words) or str(pid)


class MemorySampler:
    """Samples the summed RSS and PSS of process trees every `interval` seconds; keeps the peaks."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.groups: dict[str, list[int]] = {}
        self.peak_rss: dict[str, int] = {}
        self.peak_pss: dict[str, int] = {}
        self.peak_procs: dict[str, int] = {}
        # PSS in KiB of each process (by its command) at the moment the group's summed PSS peaked.
        self.peak_split: dict[str, list[tuple[str, int]]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-sampler", daemon=True)

    def watch(self, name: str, roots: list[int]) -> None:
        self.groups[name] = roots

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():  # a start-up failure can come before the sampler started
            self._thread.join(5)

    def sample_once(self) -> None:
        for name, roots in list(self.groups.items()):
            pids = process_tree(roots)
            rss = pss = 0
            split = []
            for pid in pids:
                r, p = memory_kib(pid)
                rss += r
                pss += p
                split.append((command_name(pid), p))
            self.peak_rss[name] = max(self.peak_rss.get(name, 0), rss)
            if pss > self.peak_pss.get(name, 0):
                self.peak_pss[name] = pss
                self.peak_split[name] = split
            self.peak_procs[name] = max(self.peak_procs.get(name, 0), len(pids))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample_once()


def wait_http(host: str, port: int, path: str, *, timeout: float = 60.0, proc: Service | None = None) -> None:
    """Wait until `GET path` gets any HTTP answer (the server is up), or fail with the server's log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and not proc.alive():
            raise RuntimeError(f"{proc.name} exited during start-up:\n{proc.tail()}")
        try:
            conn = http.client.HTTPConnection(host, port, timeout=2)
            conn.request("GET", path)
            conn.getresponse().read()
            conn.close()
            return
        except OSError:
            time.sleep(0.2)
    tail = proc.tail() if proc else ""
    raise RuntimeError(f"{host}:{port}{path} did not answer within {timeout:.0f}s\n{tail}")


def free_port() -> int:
    """A TCP port nothing listens on now, for a server a run starts (never a fixed one: the machine is shared)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def recreate_database(name: str) -> None:
    """Drop and create a PostgreSQL database so each run starts empty."""
    subprocess.run(["dropdb", *PG_ADMIN, "--if-exists", "--force", name], check=True, capture_output=True)
    subprocess.run(["createdb", *PG_ADMIN, name], check=True, capture_output=True)


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of one process so far ((0, 0) when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    # After the command name: state is field 3, utime/stime are fields 14/15 (1-based, man 5 proc).
    return int(fields[11]) / _TICKS, int(fields[12]) / _TICKS


def postgres_backends(database: str) -> list[int]:
    """PostgreSQL backend processes serving `database` (their title names it: "postgres: user db host")."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                title = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        parts = title.split()
        if parts and parts[0] == "postgres:" and database in parts[1:5]:
            pids.append(int(entry))
    return pids


class CpuMeter:
    """CPU seconds used by named process groups between start() and stop().

    Processes that appear during the interval (a new PostgreSQL backend) are counted from zero;
    processes that exit during it lose their last slice, which is small for long-lived servers.
    """

    def __init__(self, groups: dict[str, Callable[[], list[int]]]) -> None:
        self.groups = groups
        self._start: dict[str, dict[int, tuple[float, float]]] = {}
        # After stop(): the kernel (system) part of each group's CPU seconds.
        self.kernel: dict[str, float] = {}

    def _snapshot(self) -> dict[str, dict[int, tuple[float, float]]]:
        return {name: {pid: cpu_split(pid) for pid in find()} for name, find in self.groups.items()}

    def start(self) -> None:
        self._start = self._snapshot()

    def stop(self) -> dict[str, float]:
        end = self._snapshot()
        used: dict[str, float] = {}
        for name, pids in end.items():
            before = self._start.get(name, {})
            user = sys_ = 0.0
            for pid, (u, s) in pids.items():
                u0, s0 = before.get(pid, (0.0, 0.0))
                user += max(0.0, u - u0)
                sys_ += max(0.0, s - s0)
            used[name] = round(user + sys_, 3)
            self.kernel[name] = round(sys_, 3)
        return used
