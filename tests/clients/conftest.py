"""A live Roster for the client libraries' tests: `manage.py runserver --noreload` in its own process, on a
free port, on this test run's database (the one pytest-django created), with the suite's API key.

The server starts once per session. Tests that use it run in transaction mode (`django_db(transaction=True)`),
so what the server commits is visible to the test process and emptied after each test.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection

from bench.procs import Service, wait_http
from tests.conftest import API_KEY
from tests.faults.stack import free_port

ROOT = Path(__file__).resolve().parents[2]
TENANT, PRODUCT = "acme", "crm"


@dataclass
class LiveRoster:
    url: str
    api_key: str
    service: Service

    def scim_user(self, directory_id: str, secret: str, user_name: str, **fields: Any) -> dict[str, Any]:
        """Create a user over SCIM, as an identity provider does (events and all)."""
        body = {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": user_name, **fields}
        return self.scim("POST", directory_id, secret, "/Users", body)

    def scim(self, method: str, directory_id: str, secret: str, path: str, body: Any = None) -> dict[str, Any]:
        response = httpx.request(
            method,
            f"{self.url}/api/scim/v2.0/{directory_id}{path}",
            content=None if body is None else json.dumps(body),
            headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/scim+json"},
            timeout=30,
        )
        assert response.status_code < 300, (response.status_code, response.text)
        return response.json() if response.content else {}


def _database_url() -> str:
    """The URL of the database pytest-django set up for this run (its test name)."""
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    user, host, port = settings.get("USER") or "postgres", settings.get("HOST") or "127.0.0.1", settings.get("PORT")
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{host}:{port or 5432}/{settings['NAME']}"


@pytest.fixture(scope="session")
def live_roster(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveRoster]:
    with django_db_blocker.unblock():
        database_url = _database_url()
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "CELERY_", "TEST_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="false",
        SECRET_KEY="clients-live-roster-secret-key",
        DATABASE_URL=database_url,
        CONN_MAX_AGE="0",
        API_KEYS=API_KEY,
        ALLOWED_HOSTS="127.0.0.1",
        EXTERNAL_URL=f"http://127.0.0.1:{port}",
        # The tests' webhook receivers listen on loopback.
        WEBHOOK_ALLOW_PRIVATE_NETWORKS="true",
        # SCIM activity (the request log) is written in the background: soon, for the tests that read it.
        SCIM_ACTIVITY_FLUSH_SECONDS="0.2",
        PYTHONUNBUFFERED="1",
    )
    argv = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    log = tmp_path_factory.mktemp("live-roster") / "runserver.log"
    service = Service("live-roster", argv, env=env, cwd=ROOT, log=log)
    try:
        wait_http("127.0.0.1", port, "/healthz", timeout=60, proc=service)
        yield LiveRoster(url=f"http://127.0.0.1:{port}", api_key=API_KEY, service=service)
    finally:
        service.stop()


@pytest.fixture(autouse=True)
def _live_roster_quiet_before_flush(request: pytest.FixtureRequest) -> Iterator[None]:
    """The live server finishes work after its answer: the drain its commit kicked, the SCIM activity flush.
    If that work still holds row locks when pytest-django empties the tables (TRUNCATE takes every table's
    lock in turn), PostgreSQL can declare a deadlock and the flush fails, leaving this test's rows for the
    next one. So a test that used the server waits until no other session on the test database is inside a
    statement or a transaction for half a second. pytest-django's autouse fixtures are set up before this one,
    so this wait runs before their flush."""
    yield
    if "live_roster" not in request.fixturenames or connection.vendor != "postgresql":
        return
    busy = (
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        " AND backend_type = 'client backend' AND state IS NOT NULL AND state <> 'idle'"
    )
    quiet_polls, deadline = 0, time.monotonic() + 30
    while quiet_polls < 5 and time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(busy)
            quiet_polls = quiet_polls + 1 if cursor.fetchone()[0] == 0 else 0
        time.sleep(0.1)


# --- what CI shows: each library's test count -----------------------------------------------------------------

_counts: dict[str, tuple[int, int]] = {}


def record_client_counts(library: str, passed: int, failed: int) -> None:
    _counts[library] = (passed, failed)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    python = [
        sum(
            1 for report in terminalreporter.stats.get(outcome, []) if report.nodeid.startswith("tests/clients/python/")
        )
        for outcome in ("passed", "failed", "error")
    ]
    if sum(python):
        record_client_counts("python (roster_client, pytest tests/clients/python)", python[0], python[1] + python[2])
    if _counts:
        terminalreporter.section("client libraries")
        for library, (passed, failed) in _counts.items():
            terminalreporter.write_line(f"{library}: {passed} passed, {failed} failed")
