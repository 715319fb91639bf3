"""Web workers forked from a zygote (server/zygote.py): the launcher holds no application, adopts the workers,
replaces them on SIGHUP and when one dies, and stops them all."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from server import zygote
from tests.server.webserver import Started, web_env, web_start

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the zygote is Linux's (a child subreaper, pidfds)")


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def _gone(pid: int) -> bool:
    """No such process, not even a zombie waiting to be reaped."""
    return not Path(f"/proc/{pid}").exists()


def _maps(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


def _wait(check, timeout: float = 60.0, what: str = "") -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:  # noqa: S310 - local
            return resp.status == 200
    except OSError:
        return False


def _start(tmp_path: Path, **env: str) -> Started:
    # SIGHUP waits GRANIAN_RESPAWN_INTERVAL between two replacements (granian's default is 3.5 s).
    return web_start(tmp_path, workers=2, env=web_env(tmp_path, GRANIAN_RESPAWN_INTERVAL="0.5", **env))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Started]:
    started = _start(tmp_path)
    try:
        _wait(
            lambda: _healthy(started.port) and len(_children(started.process.pid)) == 2,
            what=started.log.read_text()[-3000:],
        )
        yield started
    finally:
        if started.process.poll() is None:
            os.killpg(started.process.pid, signal.SIGTERM)
            started.process.wait(30)


def test_the_launcher_holds_no_application_and_adopts_the_workers_the_zygote_forked(server: Started) -> None:
    launcher = server.process.pid
    workers = _children(launcher)
    assert len(workers) == 2, "two workers, and the zygote is gone"
    # The application loads libpq (psycopg's binary build) on import; the launcher never imported it.
    assert "psycopg_binary" not in _maps(launcher)
    assert all("psycopg_binary" in _maps(pid) for pid in workers)
    assert all(_healthy(server.port) for _ in range(10))


def test_sighup_replaces_both_workers_and_reaps_the_old_ones(server: Started) -> None:
    launcher = server.process.pid
    old = _children(launcher)
    os.kill(launcher, signal.SIGHUP)
    _wait(lambda: len(_children(launcher) - old) == 2 and not (_children(launcher) & old), what="both replaced")
    assert all(_gone(pid) for pid in old)
    new = _children(launcher)
    assert all("psycopg_binary" in _maps(pid) for pid in new)
    assert _healthy(server.port)


def test_a_killed_worker_is_replaced_and_reaped(server: Started) -> None:
    launcher = server.process.pid
    killed, kept = sorted(_children(launcher))
    os.kill(killed, signal.SIGKILL)
    _wait(lambda: len(_children(launcher)) == 2 and killed not in _children(launcher), what="a worker in its place")
    _wait(lambda: _gone(killed), timeout=10, what="the killed worker reaped")
    assert kept in _children(launcher)
    assert _healthy(server.port)


def test_sigterm_stops_the_workers_and_the_launcher_with_status_0(server: Started) -> None:
    workers = _children(server.process.pid)
    os.kill(server.process.pid, signal.SIGTERM)
    assert server.process.wait(30) == 0
    _wait(lambda: all(_gone(pid) for pid in workers), timeout=10, what="no worker left")


def test_a_start_whose_import_fails_exits_with_the_error(tmp_path: Path) -> None:
    started = _start(tmp_path, LOG_FORMAT="bogus")  # the launcher logs in plain; the app refuses the value
    try:
        code = started.process.wait(60)
    finally:
        if started.process.poll() is None:
            os.killpg(started.process.pid, signal.SIGKILL)
    assert code != 0
    text = started.log.read_text()
    assert "LOG_FORMAT must be plain or json" in text
    assert "ZygoteFailed" in text


def test_a_replacement_whose_import_fails_keeps_the_running_workers(caplog: pytest.LogCaptureFixture) -> None:
    def prepare() -> None:
        raise RuntimeError("the new release does not import")

    running = [object(), object()]
    server = object.__new__(zygote.ZygoteServer)
    server.prepare = prepare  # type: ignore[method-assign]
    server.wrks = list(running)
    with caplog.at_level(logging.ERROR, logger="_granian"):
        zygote.ZygoteServer._respawn_workers(server, [0, 1], None, None)  # noqa: SLF001
    assert server.wrks == running
    assert "Workers [1, 2] not replaced" in caplog.text


def test_without_pidfds_the_launcher_does_not_become_a_subreaper(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(pid: int) -> int:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "pidfd_open", refused)
    monkeypatch.setattr(zygote, "_prctl", lambda option, value: pytest.fail("prctl called"))
    assert zygote.subreaper_become() is False
