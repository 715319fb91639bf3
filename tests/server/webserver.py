"""`python -m server.web` started for a test: on a free port, on SQLite under the test's folder, in its own
session (so a test can signal the whole process group)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Started:
    process: subprocess.Popen
    port: int
    log: Path


def web_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GRANIAN_", "DJANGO_", "CELERY_", "DATABASE_"))},
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "false",
        "SECRET_KEY": "web-test-secret-key-0123456789-abcdefghijklmnop",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'web.sqlite3'}",
        "METRICS_DIR": str(tmp_path / "metrics"),
        **extra,
    }


def web_start(tmp_path: Path, *, workers: int, env: dict[str, str]) -> Started:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "web.log"
    argv = [sys.executable, "-m", "server.web", "--bind", f"127.0.0.1:{port}", "--workers", str(workers)]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    return Started(process=process, port=port, log=log)
