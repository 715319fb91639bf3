"""`python -m server.container`, the image's entry point: the command each process runs, the settings that
stop a container before it starts, and the health check. (scripts/container-test.sh runs it in the image.)"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from server import container

ROOT = Path(__file__).resolve().parents[2]
DATABASE = {"DATABASE_URL": "postgres://roster@db:5432/roster"}


def _tail(process: str, args: list[str] | None = None, environ: dict[str, str] | None = None) -> list[str]:
    """The command line after the interpreter."""
    line = container.command(process, args or [], environ or {})
    assert line[0] == sys.executable
    return line[1:]


# --- the command each process runs ----------------------------------------------------------------------


def test_web_runs_the_production_web_server_with_one_worker_per_core_unless_web_workers_says() -> None:
    assert _tail("web") == ["-m", "server.web"]
    assert _tail("web", environ={"WEB_WORKERS": "3"}) == ["-m", "server.web", "--workers", "3"]


def test_arguments_after_the_process_are_added_to_its_command() -> None:
    assert _tail("web", ["--bind", "127.0.0.1:9000"]) == ["-m", "server.web", "--bind", "127.0.0.1:9000"]
    assert _tail("worker", ["--concurrency", "8"])[-2:] == ["--concurrency", "8"]


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", "٣"])
def test_a_web_workers_that_is_not_a_positive_whole_number_is_refused_by_name(value: str) -> None:
    with pytest.raises(container.SettingMissing, match="WEB_WORKERS"):
        container.command("web", [], {"WEB_WORKERS": value})


def test_worker_runs_the_worker_with_the_production_options_of_the_deployment_guide() -> None:
    assert _tail("worker") == [
        "-m",
        "server.worker",
        "--loglevel",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]


def test_beat_keeps_its_schedule_under_tmp_the_only_writable_folder() -> None:
    line = _tail("beat")
    assert line[:5] == ["-m", "celery", "-A", "config", "--quiet"] and "beat" in line
    assert line[line.index("-s") + 1].startswith("/tmp/")


def test_migrate_and_manage_run_manage_py() -> None:
    manage = str(ROOT / "manage.py")
    assert _tail("migrate") == [manage, "migrate", "--noinput"]
    assert _tail("manage", ["directories", "list"]) == [manage, "directories", "list"]


@pytest.mark.parametrize("argv", [[], ["serve"], ["--help"]])
def test_an_unknown_process_prints_the_usage_and_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert container.main(argv) == 2
    assert "usage: python -m server.container {web,worker,beat,migrate,manage,healthcheck}" in capsys.readouterr().err


def test_the_entry_point_becomes_the_process_so_that_signals_reach_it(monkeypatch: pytest.MonkeyPatch) -> None:
    executed: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(os, "execv", lambda path, argv: executed.append((path, argv)))
    monkeypatch.setenv("DATABASE_URL", DATABASE["DATABASE_URL"])
    monkeypatch.chdir("/")
    container.main(["manage", "check"])
    assert executed == [(sys.executable, [sys.executable, str(ROOT / "manage.py"), "check"])]
    assert Path.cwd() == ROOT


# --- settings that stop the container ---------------------------------------------------------------------


def _run(argv: list[str], environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The entry point in a process of its own, with only these settings (nothing is started: each case stops
    before the exec)."""
    env = {"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "config.settings", **environ}
    return subprocess.run(
        [sys.executable, "-m", "server.container", *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("argv", "environ", "named"),
    [
        (["web"], {"SECRET_KEY": "x" * 50}, "DATABASE_URL"),
        (["web"], DATABASE, "SECRET_KEY"),
        (["manage", "doctor"], DATABASE, "SECRET_KEY"),
        (["web"], {**DATABASE, "SECRET_KEY": "x" * 50, "ADMIN_ROOT_TOKEN": "root"}, "ADMIN_JWT_SECRET"),
        (["worker"], {**DATABASE, "SECRET_KEY": "x" * 50}, "CELERY_BROKER_URL"),
        (["beat"], {**DATABASE, "SECRET_KEY": "x" * 50}, "CELERY_BROKER_URL"),
        (["web"], {**DATABASE, "SECRET_KEY": "x" * 50, "WEB_WORKERS": "many"}, "WEB_WORKERS"),
    ],
)
def test_a_missing_required_setting_stops_the_container_with_one_line_naming_it(
    argv: list[str], environ: dict[str, str], named: str
) -> None:
    result = _run(argv, environ)
    assert result.returncode == 78
    assert result.stderr.startswith(f"Roster {argv[0]} is not configured: ") and named in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_web_server_needs_no_broker_its_webhooks_then_go_out_in_process() -> None:
    container.settings_check("web", {**DATABASE})  # no exception: only the worker and beat need one


# --- the health check ----------------------------------------------------------------------------------


def _proc(tmp_path: Path, processes: dict[int, list[str]]) -> Path:
    for pid, argv in processes.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(word.encode() for word in argv) + b"\0")
    (tmp_path / "self").mkdir()
    return tmp_path


def test_the_health_check_finds_the_web_server_among_the_container_s_processes(tmp_path: Path) -> None:
    proc = _proc(tmp_path, {1: ["/venv/bin/python", "-m", "server.web", "--workers", "2", "--bind", "0.0.0.0:9000"]})
    assert container.web_server_arguments(proc) == ["--workers", "2", "--bind", "0.0.0.0:9000"]


def test_a_container_without_a_web_server_has_nothing_to_probe(tmp_path: Path) -> None:
    probe = ["python", "-m", "server.container", "healthcheck"]
    proc = _proc(tmp_path, {1: ["python", "-m", "server.worker"], 7: probe})
    assert container.web_server_arguments(proc) is None


@pytest.mark.parametrize(
    ("args", "environ", "expected"),
    [
        ([], {}, ("127.0.0.1", 8000, "localhost")),
        ([], {"PORT": "8123", "ALLOWED_HOSTS": "*"}, ("127.0.0.1", 8123, "localhost")),
        ([], {"GRANIAN_HOST": "::", "GRANIAN_PORT": "8124", "PORT": "1"}, ("::1", 8124, "localhost")),
        (["--bind", "10.1.2.3:9000"], {"PORT": "1"}, ("10.1.2.3", 9000, "localhost")),
        ([], {"ALLOWED_HOSTS": ".example.com, roster.test"}, ("127.0.0.1", 8000, "example.com")),
    ],
)
def test_the_probe_goes_where_the_web_server_listens_with_a_host_allowed_hosts_accepts(
    args: list[str], environ: dict[str, str], expected: tuple[str, int, str]
) -> None:
    assert container.probe_address(args, environ) == expected


class _Healthz:
    """A stand-in web server on a free port that answers /healthz with `status` and records the Host."""

    def __init__(self, status: int) -> None:
        hosts: list[str] = []
        self.hosts = hosts

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                hosts.append(self.headers["Host"])
                self.send_response(status if self.path == "/healthz" else 404)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def healthz() -> Iterator[type[_Healthz]]:
    servers: list[_Healthz] = []

    def start(status: int) -> _Healthz:
        servers.append(_Healthz(status))
        return servers[-1]

    yield start  # type: ignore[misc]
    for server in servers:
        server.close()


def test_the_health_check_passes_when_healthz_answers_200(healthz, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    server = healthz(200)
    monkeypatch.setattr(container, "web_server_arguments", lambda: ["--bind", f"127.0.0.1:{server.port}"])
    assert container.healthcheck({"ALLOWED_HOSTS": "roster.example.com"}) == 0
    assert server.hosts == ["roster.example.com"]


def test_the_health_check_fails_when_healthz_answers_503_or_nothing_listens(
    healthz,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = healthz(503)
    monkeypatch.setattr(container, "web_server_arguments", lambda: ["--bind", f"127.0.0.1:{server.port}"])
    assert container.healthcheck({}) == 1
    server.close()
    assert container.healthcheck({}, timeout=1) == 1


def test_the_health_check_of_a_worker_or_beat_container_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(container, "web_server_arguments", lambda: None)
    assert container.main(["healthcheck"]) == 0
