"""`python -m server.worker`: the Celery worker without the `celery` command line's imports."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from server import worker as worker_entry

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
from server.worker import build, parse
w = build(parse(["--pool", "threads", "--concurrency", "3", "-n", "probe@localhost", "-Q", "a,b", "--without-gossip"]))
print(w.pool_cls.__module__, w.concurrency, w.hostname, ",".join(sorted(w.app.amqp.queues.consume_from)))
print(",".join(m for m in ("celery.bin.celery", "click_repl", "prompt_toolkit", "pygments") if m in sys.modules))
"""


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "false", **extra}
    env.setdefault("SECRET_KEY", "roster-test-secret-key-not-for-production")
    return env


def test_the_worker_is_built_from_the_options_without_the_command_line_modules() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120, check=True
    )
    settings_line, imported = (result.stdout.strip().splitlines() + [""])[-2:]
    assert settings_line == "celery.concurrency.thread 3 probe@localhost a,b"
    assert imported == ""


def test_bad_options_are_refused() -> None:
    with pytest.raises(SystemExit):
        worker_entry.parse(["--concurrency", "0"])
    with pytest.raises(SystemExit):
        worker_entry.parse(["--pool", "gevent"])
    with pytest.raises(SystemExit):
        worker_entry.parse(["--loglevel", "loud"])
    assert worker_entry.parse(["-l", "warning"]).loglevel == "WARNING"


@contextlib.contextmanager
def _worker(command: list[str], broker_url: str, tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """A worker process on its own node name and queue (it consumes nothing the other tests publish),
    its log in a file (not a pipe nobody reads while it runs); killed if the test did not stop it."""
    node = f"roster-test-{secrets.token_hex(4)}@localhost"
    queue = f"roster-test-{secrets.token_hex(4)}"
    log = (tmp_path / "worker.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, *command, "-n", node, "-Q", queue, "-l", "warning"],
        cwd=ROOT,
        env=_env(CELERY_BROKER_URL=broker_url),
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        yield node, proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def _stops_on_sigterm(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0


def test_a_started_worker_answers_on_the_broker_and_stops_on_sigterm(broker_url: str, tmp_path: Path) -> None:
    from config.celery import app

    with _worker(["-m", "server.worker", "--pool", "solo"], broker_url, tmp_path) as (node, proc):
        replies: list = []
        deadline = time.monotonic() + 60
        while not replies and time.monotonic() < deadline and proc.poll() is None:
            replies = app.control.ping(destination=[node], timeout=1.0)
        assert replies, f"no ping reply; exit code {proc.poll()}; log:\n{(tmp_path / 'worker.log').read_text()[-2000:]}"
        registered = app.control.inspect(destination=[node], timeout=5.0).registered() or {}
        assert "webhooks.drain" in registered.get(node, [])
        assert "webhooks.sweep" in registered.get(node, [])
        _stops_on_sigterm(proc)


@pytest.mark.parametrize(
    "command",
    [["-m", "celery", "-A", "config", "worker"], ["-m", "server.worker"]],
    ids=["celery-command", "config-worker"],
)
def test_both_commands_start_the_thread_pool_of_the_settings_when_no_pool_is_given(
    broker_url: str, tmp_path: Path, command: list[str]
) -> None:
    """`celery -A config worker`, the command every Celery user types, gets the same pool and concurrency as
    `python -m server.worker` (CELERY_WORKER_POOL / CELERY_WORKER_CONCURRENCY), not Celery's prefork."""
    from config.celery import app

    with _worker(command, broker_url, tmp_path) as (node, proc):
        stats: dict = {}
        deadline = time.monotonic() + 60
        while not stats.get(node) and time.monotonic() < deadline and proc.poll() is None:
            stats = app.control.inspect(destination=[node], timeout=1.0).stats() or {}
        tail = (tmp_path / "worker.log").read_text()[-2000:]
        assert stats.get(node), f"no stats; exit code {proc.poll()}; log:\n{tail}"
        pool = stats[node]["pool"]
        assert pool["implementation"] == "celery.concurrency.thread:TaskPool"
        assert pool["max-concurrency"] == 4
        _stops_on_sigterm(proc)
