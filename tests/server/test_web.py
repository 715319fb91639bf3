"""`python -m server.web`: the granian command line it amounts to, what it loads before the fork, and a
real server's log lines, request ids and node metrics."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from server import web
from tests.server.webserver import Started, web_env, web_start

ROOT = Path(__file__).resolve().parents[2]


def _arguments(argv: list[str], environ: dict[str, str]) -> list[str]:
    return web.granian_arguments(web.parse(argv), environ)


def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


# --- the command line --------------------------------------------------------------------------------------


def test_without_options_roster_s_defaults_make_the_granian_command() -> None:
    argv = _arguments([], {})
    assert argv[-1] == "config.wsgi:application"
    assert _option(argv, "--interface") == "wsgi"
    assert _option(argv, "--blocking-threads") == web.WEB_THREADS == "64"
    assert _option(argv, "--http") == "1"
    assert "--no-ws" in argv and "--respawn-failed-workers" in argv
    assert _option(argv, "--http1-buffer-size") == str(1024 * 1024)
    assert _option(argv, "--workers-kill-timeout") == "20"
    assert (_option(argv, "--host"), _option(argv, "--port")) == ("0.0.0.0", "8000")
    assert _option(argv, "--workers") == str(max(2, os.cpu_count() or 1))


def test_the_start_names_its_threads_and_the_allocator_s_setting_unless_given() -> None:
    environ: dict[str, str] = {}
    web.environment_defaults(environ)
    assert environ == {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "GRANIAN_BLOCKING_THREADS": "64",  # read by granian and by config.wsgi (turns and holds)
        "_RJEM_MALLOC_CONF": "tcache:false",
    }
    given = {"GRANIAN_BLOCKING_THREADS": "1", "_RJEM_MALLOC_CONF": "narenas:1"}
    web.environment_defaults(given)
    assert given["GRANIAN_BLOCKING_THREADS"] == "1" and given["_RJEM_MALLOC_CONF"] == "narenas:1"


def test_a_granian_variable_replaces_roster_s_default_for_its_option() -> None:
    argv = _arguments([], {"GRANIAN_BLOCKING_THREADS": "4", "GRANIAN_WORKERS": "3", "GRANIAN_WEBSOCKETS": "true"})
    assert "--blocking-threads" not in argv and "--workers" not in argv and "--no-ws" not in argv
    assert _option(argv, "--http") == "1"  # the others stay


def test_bind_and_workers_win_over_the_variables() -> None:
    argv = _arguments(["--bind", "127.0.0.1:9001", "--workers", "5"], {"GRANIAN_WORKERS": "3", "GRANIAN_PORT": "1"})
    assert (_option(argv, "--host"), _option(argv, "--port"), _option(argv, "--workers")) == ("127.0.0.1", "9001", "5")


def test_the_port_comes_from_port_when_nothing_else_names_it() -> None:
    assert _option(_arguments([], {"PORT": "8123"}), "--port") == "8123"
    argv = _arguments([], {"GRANIAN_HOST": "::1", "GRANIAN_PORT": "8124"})
    assert "--host" not in argv and "--port" not in argv


def test_an_ipv6_bind_address_loses_its_brackets() -> None:
    assert _option(_arguments(["--bind", "[::1]:8000"], {}), "--host") == "::1"


@pytest.mark.parametrize("bind", ["8000", "localhost", ":8000", "host:port"])
def test_a_bind_without_host_and_port_is_refused(bind: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        web.parse(["--bind", bind])
    assert "--bind takes HOST:PORT" in capsys.readouterr().err


def test_zero_workers_is_refused() -> None:
    with pytest.raises(SystemExit):
        web.parse(["--workers", "0"])


# --- what the launcher loads before the fork ---------------------------------------------------------------

PROBE = """
import gc, os, sys
from server import web
from tests.server.webserver import Started, web_env, web_start
folder = web.metrics_prepare()
web.preload()
web.environment_scrub()
from django.conf import settings
assert settings.SECRET_KEY and "SECRET_KEY" not in os.environ, "the secret stays in settings only"
assert not any(name in os.environ for name in web.SECRET_VARIABLES)
print("kombu.transport.redis" in sys.modules, "scim.http.views" in sys.modules, gc.get_freeze_count() > 0,
      "prometheus_client" in sys.modules, str(folder) == __import__("os").environ["PROMETHEUS_MULTIPROC_DIR"])
"""


def _probe(tmp_path: Path, code: str = PROBE, **env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "PROMETHEUS_MULTIPROC_DIR")},
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "false",
            "SECRET_KEY": "roster-test-secret-key-not-for-production",
            "METRICS_DIR": str(tmp_path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


def test_the_launcher_loads_the_app_and_the_broker_transport_without_connecting(tmp_path: Path) -> None:
    # Nothing listens on port 1: loading the transport must not try to connect.
    assert _probe(tmp_path, CELERY_BROKER_URL="redis://127.0.0.1:1/0") == "True True True True True"


def test_without_a_broker_no_transport_is_loaded(tmp_path: Path) -> None:
    assert _probe(tmp_path) == "False True True True True"


LIBRARIES = """
import sys
from server import web
from tests.server.webserver import Started, web_env, web_start
web.metrics_prepare()
web.preload()
print("cryptography.fernet" in sys.modules, "jwt" in sys.modules)
"""


def test_cryptography_is_loaded_before_the_fork_only_with_an_encryption_key(tmp_path: Path) -> None:
    # PyJWT (the admin API's sign-in) would load it too: it is imported at the first JWT instead.
    assert _probe(tmp_path, LIBRARIES) == "False False"
    assert _probe(tmp_path, LIBRARIES, DB_ENCRYPTION_KEY="web-test-encryption-key-0123456789") == "True False"


OPENAPI = """
import sys
from server import web
web.metrics_prepare()
web.preload()
print(*(name in sys.modules for name in ("drf_spectacular.openapi", "django.test", "restapi.openapi")))
"""


def test_the_openapi_machinery_is_not_loaded_before_the_fork(tmp_path: Path) -> None:
    # It (with django.test and unittest) is imported at the first GET /api/v1/schema (restapi.urls).
    assert _probe(tmp_path, OPENAPI) == "False False False"


def test_the_metrics_folder_is_emptied_and_gone_celery_workers_removed(tmp_path: Path) -> None:
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "counter_1.db").write_bytes(b"old")
    (tmp_path / "worker-999999999").mkdir()  # no such process
    live = tmp_path / f"worker-{os.getpid()}"
    live.mkdir()
    _probe(tmp_path)
    assert list((tmp_path / "web").iterdir()) == []
    assert not (tmp_path / "worker-999999999").exists()
    assert live.is_dir()


# --- a real server ----------------------------------------------------------------------------------------


def _get(port: int, path: str, token: str = "") -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 - a local test server
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def _wait_up(started: Started) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            _get(started.port, "/healthz")
            return
        except OSError:
            assert time.monotonic() < deadline and started.process.poll() is None, started.log.read_text()[-3000:]
            time.sleep(0.1)


def test_two_workers_log_json_answer_with_request_ids_add_up_on_metrics_and_stop_cleanly(tmp_path: Path) -> None:
    env = web_env(tmp_path, METRICS_TOKEN="web-test-metrics-token", LOG_FORMAT="json")
    started = web_start(tmp_path, workers=2, env=env)
    process, port = started.process, started.port
    try:
        _wait_up(started)
        # A new connection each: the kernel hands them to both workers.
        answers = [_get(port, "/api/v1/no-such-route") for _ in range(40)]
        assert {status for status, _, _ in answers} == {404}
        assert all(re.fullmatch(r"[0-9a-f]{32}", headers["x-request-id"]) for _, headers, _ in answers)
        pids = {path.stem.split("_")[-1] for path in (tmp_path / "metrics" / "web").glob("counter_*.db")}
        assert len(pids) == 2, "both workers counted requests"
        status, _, body = _get(port, "/metrics", token="web-test-metrics-token")
        assert status == 200
        counted = sum(
            float(line.rsplit(" ", 1)[1])
            for line in body.decode().splitlines()
            if line.startswith("roster_http_requests_total{") and 'status="404"' in line
        )
        assert counted == 40  # the node's total, whichever worker answered the scrape
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        code = process.wait(30)
    assert code == 0
    lines = [line for line in started.log.read_text().splitlines() if line.strip()]
    assert any("Starting granian" in line for line in lines)
    for line in lines:
        record = json.loads(line)  # granian's own lines too: one format for the whole stream
        assert {"time", "level", "logger", "message"} <= record.keys()


def test_a_scim_request_served_by_granian_is_recorded_for_health_and_the_request_log(tmp_path: Path) -> None:
    """granian calls the body's close() only for bodies that are not lists: SCIM activity is recorded there."""
    env = web_env(tmp_path, API_KEYS="web-test-api-key", SCIM_ACTIVITY_FLUSH_SECONDS="0.1")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=120)
    started = web_start(tmp_path, workers=1, env=env)
    process, port = started.process, started.port

    def call(method: str, path: str, token: str, body: dict | None = None) -> tuple[int, dict]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 - a local test server
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    try:
        _wait_up(started)
        status, created = call("POST", "/api/v1/directory-sync", "web-test-api-key", {"tenant": "t", "product": "p"})
        assert status == 201
        directory = created["data"]
        scim = f"/api/scim/v2.0/{directory['id']}"
        assert call("POST", f"{scim}/Users", directory["scim"]["secret"], {"userName": "ann@example.com"})[0] == 201
        assert call("GET", f"{scim}/Users/no-such-user", directory["scim"]["secret"])[0] == 404
        deadline = time.monotonic() + 15
        while True:
            _, read = call("GET", f"/api/v1/directory-sync/{directory['id']}", "web-test-api-key")
            if read["data"]["health"]["requests_24h"] == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        health = read["data"]["health"]
        assert (health["state"], health["requests_24h"], health["errors_24h"]) == ("healthy", 2, 1)
        _, logged = call("GET", f"/api/v1/directory-sync/{directory['id']}/scim-requests", "web-test-api-key")
        assert [(entry["method"], entry["status"]) for entry in logged["data"]] == [("GET", 404)]
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)


def test_a_flood_s_refusals_are_held_while_another_directory_is_answered(tmp_path: Path) -> None:
    """Turns and holds in a real worker (core.turns): past its budget, a directory flooding on many
    connections gets each 429 after a hold, with Retry-After; a directory sending beside it meanwhile is
    answered, and before the refusals that were sent ahead of it."""
    import requests

    env = web_env(tmp_path, API_KEYS="web-test-api-key", SCIM_RATE_LIMIT="1500", RATE_LIMIT_STORAGE_URL="memory://")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=120)
    started = web_start(tmp_path, workers=1, env=env)
    process, port = started.process, started.port
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_up(started)
        directories = []
        for tenant in ("flood", "quiet"):
            made = requests.post(
                f"{base}/api/v1/directory-sync",
                json={"tenant": tenant, "product": "p"},
                headers={"Authorization": "Bearer web-test-api-key"},
                timeout=10,
            )
            assert made.status_code == 201
            data = made.json()["data"]
            auth = {"Authorization": f"Bearer {data['scim']['secret']}"}
            directories.append((f"{base}/api/scim/v2.0/{data['id']}/Users", auth))
        (flood_url, flood_auth), (quiet_url, quiet_auth) = directories
        with requests.Session() as one:  # one request at a time until the flood's budget is spent
            for _ in range(400):
                if one.get(flood_url, headers=flood_auth, timeout=10).status_code == 429:
                    break
            else:
                pytest.fail("the flood's budget never ran out")

        refusals: list[tuple[float, float, int, str | None]] = []  # sent, answered, status, Retry-After
        lock = threading.Lock()

        def flood() -> None:
            with requests.Session() as session:
                for _ in range(3):
                    sent = time.monotonic()
                    answer = session.get(flood_url, headers=flood_auth, timeout=10)
                    with lock:
                        refusals.append((sent, time.monotonic(), answer.status_code, answer.headers.get("Retry-After")))

        threads = [threading.Thread(target=flood) for _ in range(12)]
        for thread in threads:
            thread.start()
        time.sleep(0.05)  # the flood's first requests are in
        quiet: list[tuple[float, float, int]] = []
        with requests.Session() as session:
            for _ in range(5):
                sent = time.monotonic()
                status = session.get(quiet_url, headers=quiet_auth, timeout=10).status_code
                quiet.append((sent, time.monotonic(), status))
        for thread in threads:
            thread.join(60)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
    from core.turns import HOLD_SECONDS

    # The budget refills at 25 a second meanwhile: a few of the flood's requests are admitted.
    assert len(refusals) == 36 and {status for _, _, status, _ in refusals} <= {200, 429}
    refusals = [refusal for refusal in refusals if refusal[2] == 429]
    assert len(refusals) >= 18
    assert all(retry is not None and int(retry) >= 1 for _, _, _, retry in refusals)
    held = [answered - sent for sent, answered, _, _ in refusals if answered - sent >= HOLD_SECONDS]
    assert len(held) >= 12, "the refusals of a sender with other requests open were held"
    assert [status for _, _, status in quiet] == [200] * 5
    # Some quiet request was sent after a refusal and answered before it: held refusals do not stand in
    # the way of another directory's requests.
    assert any(
        f_sent < q_sent and q_answered < f_answered
        for q_sent, q_answered, _ in quiet
        for f_sent, f_answered, _, _ in refusals
    )
