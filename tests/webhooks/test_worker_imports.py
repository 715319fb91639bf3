"""What a Celery worker process imports: only what delivery needs (memory, bench/README.md, "Current figures")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
from config.celery import app
app.loader.import_default_modules()  # what `celery -A config worker` does before consuming
import webhooks.tasks
print(",".join(m for m in ("rest_framework.views", "drf_spectacular.openapi", "portal.views") if m in sys.modules))
"""


def _imported(**env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""


def test_worker_skips_the_system_checks_that_import_every_view() -> None:
    assert _imported() == ""


def test_the_checks_can_be_turned_back_on() -> None:
    assert "rest_framework.views" in _imported(CELERY_SKIP_CHECKS="0")
