"""Two web servers on the test database, for the tests that must hold on every node at once (contract §7.1):
each its own `python -m server.web`, as two machines of one deployment would run them, with the same
SECRET_KEY, DATABASE_URL and API key."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from django.db import connection

from bench.procs import Service, wait_http

ROOT = Path(__file__).resolve().parents[1]
API_KEY = "nodes-api-key"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _database_url() -> str:
    """The test database the suite runs on, as the servers' DATABASE_URL."""
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.postgresql":
        password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
        return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    return f"sqlite:///{db['NAME']}"


class Node:
    def __init__(self, name: str, logs: Path, env: dict[str, str] | None = None) -> None:
        self.port = _free_port()
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(logs),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "false",
            "SECRET_KEY": "nodes-" + "k" * 50,  # the same on both, as on two machines of one deployment
            "DATABASE_URL": _database_url(),
            "API_KEYS": API_KEY,
            "EXTERNAL_URL": f"http://127.0.0.1:{self.port}",
            # granian's access log, on: its lines go through Roster's console handler and must not show a token.
            "GRANIAN_LOG_ACCESS_ENABLED": "true",
            "METRICS_DIR": str(logs / f"{name}-metrics"),
            "LOG_LEVEL": "INFO",
            "SCIM_ACTIVITY_FLUSH_SECONDS": "0.2",
            "PYTHONUNBUFFERED": "1",
            **(env or {}),  # what a test adds, e.g. a shared rate-limit store
        }
        argv = [sys.executable, "-m", "server.web", "--bind", f"127.0.0.1:{self.port}", "--workers", "1"]
        self.service = Service(f"roster-{name}", argv, env=env, cwd=ROOT, log=logs / f"{name}.log")
        wait_http("127.0.0.1", self.port, "/healthz", timeout=60, proc=self.service)
        self.url = f"http://127.0.0.1:{self.port}"

    def page(self, token: str) -> requests.Response:
        return requests.get(f"{self.url}/setup/{token}", timeout=10, allow_redirects=False)

    def logs(self) -> str:
        return self.service.log_path.read_text()


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[tuple[Node, Node]]:
    started: list[Node] = []
    try:
        started.append(Node("a", tmp_path))
        started.append(Node("b", tmp_path))
        yield started[0], started[1]
    finally:
        for node in started:
            node.service.stop()
