"""What the gunicorn master loads before it forks (server/gunicorn.conf.py `when_ready`).

Each probe runs in a fresh interpreter, as the master does, so the modules it finds were loaded by
the hook and not by an earlier test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, importlib.util, sys
import django
django.setup()
spec = importlib.util.spec_from_file_location("gunicorn_conf", "server/gunicorn.conf.py")
conf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(conf)
conf.when_ready(None)
print("kombu.transport.redis" in sys.modules, "scim.http.views" in sys.modules, gc.get_freeze_count() > 0)
"""


def _probe(**env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"},
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "false",
            "SECRET_KEY": "roster-test-secret-key-not-for-production",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


def test_the_master_loads_the_broker_transport_without_connecting() -> None:
    # Nothing listens on port 1: loading the transport must not try to connect.
    assert _probe(CELERY_BROKER_URL="redis://127.0.0.1:1/0") == "True True True"


def test_without_a_broker_no_transport_is_loaded() -> None:
    assert _probe() == "False True True"
