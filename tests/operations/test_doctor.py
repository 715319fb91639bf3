"""`manage.py doctor` (contract §7.1): one line per finding with its fix, exit 1 on a problem, never a traceback."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from tests.actors import TEST_ACTOR
from webhooks.models import Heartbeat, WebhookEvent
from webhooks.services import SWEEP, heartbeat_record

ROOT = Path(__file__).resolve().parents[2]


def doctor(*args: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    try:
        call_command("doctor", *args, stdout=out, no_color=True)
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    return code, out.getvalue().splitlines()


def line(lines: list[str], check: str) -> str:
    [found] = [text for text in lines if text.split()[1:2] == [check]]
    return found


@pytest.fixture
def production(settings: Any, db: Any) -> Any:
    """The settings a production deployment should have, with DEBUG off."""
    settings.DEBUG = False
    settings.SECRET_KEY = "k" * 50
    settings.DB_ENCRYPTION_KEY = "encryption-key-0123456789abcdef"
    settings.ALLOWED_HOSTS = ["roster.example.com"]
    settings.EXTERNAL_URL = "https://roster.example.com"
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    settings.METRICS_TOKEN = "metrics-token"
    return settings


def test_a_development_setup_without_a_broker_is_reported_as_such_not_failed(db: Any, settings: Any) -> None:
    settings.DEBUG = True
    settings.DB_ENCRYPTION_KEY = None
    settings.ALLOWED_HOSTS = ["*"]
    settings.EXTERNAL_URL = "http://localhost:8000"
    code, lines = doctor()
    assert code == 0, lines
    assert line(lines, "broker").startswith("info") and "development setup" in line(lines, "broker")
    assert line(lines, "worker").startswith("info") and line(lines, "beat").startswith("info")
    assert line(lines, "DB_ENCRYPTION_KEY").startswith("info") and "Fix: set it once" in line(
        lines, "DB_ENCRYPTION_KEY"
    )
    assert line(lines, "migrations").startswith("ok") and lines[-1] == "0 problem(s), 0 warning(s)."


def test_production_settings_that_are_missing_are_problems_with_their_fix(production: Any) -> None:
    production.DB_ENCRYPTION_KEY = None
    production.ALLOWED_HOSTS = ["*"]
    production.EXTERNAL_URL = "http://roster.example.com"
    production.SECRET_KEY = "short"
    code, lines = doctor()
    assert code == 1
    for check, fix in (
        ("DB_ENCRYPTION_KEY", "token_urlsafe(32)"),
        ("ALLOWED_HOSTS", "ALLOWED_HOSTS=roster.example.com"),
        ("EXTERNAL_URL", "https://"),
        ("SECRET_KEY", "token_urlsafe(50)"),
    ):
        assert line(lines, check).startswith("FAIL") and "Fix: " in line(lines, check) and fix in line(lines, check)
    assert lines[-1].startswith("4 problem(s)"), lines


def test_a_dead_broker_is_one_line_with_its_fix_and_hides_its_password(production: Any) -> None:
    port = _closed_port()
    production.CELERY_BROKER_URL = f"redis://:canary-password@127.0.0.1:{port}/0"
    code, lines = doctor()
    assert code == 1
    assert line(lines, "broker").startswith("FAIL") and "Fix: start the broker" in line(lines, "broker")
    assert "canary-password" not in "\n".join(lines) and f"127.0.0.1:{port}" in line(lines, "broker")
    assert line(lines, "worker").startswith("info") and "skipped" in line(lines, "worker")


def test_pending_migrations_are_a_problem(production: Any) -> None:
    # The newest webhooks migration, as if this node's code were newer than its database.
    (app, name) = MigrationLoader(connection).graph.leaf_nodes("webhooks")[0]
    MigrationRecorder(connection).record_unapplied(app, name)
    code, lines = doctor()
    assert code == 1
    text = line(lines, "migrations")
    assert text.startswith("FAIL") and f"webhooks.{name}" in text and "manage.py migrate" in text


def test_a_stale_beat_is_a_problem(production: Any) -> None:
    production.CELERY_BROKER_URL = f"redis://127.0.0.1:{_closed_port()}/0"
    code, lines = doctor()
    assert code == 1 and "no sweep has ever run" in line(lines, "beat")
    heartbeat_record(name=SWEEP)
    Heartbeat.objects.filter(name=SWEEP).update(at=timezone.now() - timedelta(minutes=10))
    _code, lines = doctor()
    assert line(lines, "beat").startswith("FAIL") and "celery -A config beat" in line(lines, "beat")
    call_command("webhooks_sweep", stdout=io.StringIO())  # what beat runs every 30 s records its run
    _code, lines = doctor()
    assert line(lines, "beat").startswith("ok")


def test_a_stuck_outbox_is_a_problem(production: Any, directory_a: Any) -> None:
    WebhookEvent.objects.create(
        directory_id=directory_a.id,
        event_type="user.created",
        body="{}",
        created_at=timezone.now() - timedelta(hours=1),
    )
    code, lines = doctor()
    assert code == 1
    assert line(lines, "outbox").startswith("FAIL") and "1 pending" in line(lines, "outbox")


def test_a_check_that_breaks_is_one_failed_line_not_a_traceback(
    production: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> Any:
        raise RuntimeError("canary-internal-detail")

    monkeypatch.setattr("operations.doctor.outbox_backlog", broken)
    code, lines = doctor()
    assert code == 1
    assert line(lines, "outbox") == "FAIL  outbox" + line(lines, "outbox")[12:]
    assert "RuntimeError" in line(lines, "outbox") and "Traceback" not in "\n".join(lines)


def test_a_production_setup_without_problems_exits_0(production: Any) -> None:
    code, lines = doctor()
    assert code == 0, lines
    assert not any(text.startswith("FAIL") for text in lines) and lines[-1].startswith("0 problem(s)")


@pytest.mark.django_db(transaction=True)  # the worker thread reads what the test committed
def test_a_live_worker_answers_the_ping(production: Any, celery_worker: Any) -> None:
    code, lines = doctor("--worker-timeout", "20")
    assert line(lines, "worker").startswith("ok"), lines and "answered a ping" in line(lines, "worker")
    assert not Heartbeat.objects.filter(name__startswith="ping:").exists()  # doctor's answer is cleaned up


def test_no_worker_is_a_problem(production: Any, broker_url: str) -> None:
    code, lines = doctor("--worker-timeout", "1")
    assert code == 1
    assert line(lines, "worker").startswith("FAIL") and "python -m server.worker" in line(lines, "worker")


def test_output_is_plain_when_piped_and_coloured_when_asked(production: Any) -> None:
    out = io.StringIO()
    call_command("doctor", stdout=out, force_color=True)
    assert "\x1b[" in out.getvalue()
    _code, lines = doctor()
    assert not any("\x1b[" in text for text in lines)
    width = {text.index(text.split()[2]) for text in lines[:-1]}  # the messages start in one column
    assert len(width) == 1


def test_a_missing_required_setting_is_a_message_not_a_traceback() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    env["DEBUG"] = "false"
    done = subprocess.run(
        [sys.executable, "manage.py", "doctor"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "SECRET_KEY is required" in done.stderr and "Traceback" not in done.stderr


def _closed_port() -> int:
    from tests.webhooks.conftest import closed_port

    return closed_port()


def _tripped_directory() -> Any:
    """A directory whose deprovision guard holds one deletion (max_users 1: the first went through)."""
    from directories.services import directory_create
    from tests.scim.conftest import Scim
    from tests.scim.guardkit import guard_set, users_make

    directory = guard_set(
        directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm", "name": "Acme"}),
        max_users=1,
        max_percent=1,
    )
    scim = Scim(directory)
    ids = users_make(scim, 3)
    scim.delete(f"/Users/{ids[0]}")
    scim.delete(f"/Users/{ids[1]}")
    directory.refresh_from_db()
    return directory


def test_a_tripped_deprovision_guard_is_a_warning_naming_the_directory(production: Any) -> None:
    code, lines = doctor()
    assert line(lines, "guard").startswith("ok") and "no directory holds changes" in line(lines, "guard")
    production.ALLOWED_HOSTS = ["testserver"]  # the SCIM requests of the test client
    directory = _tripped_directory()
    production.ALLOWED_HOSTS = ["roster.example.com"]
    code, lines = doctor()
    assert code == 0, lines  # not a fault of the deployment: someone has to look
    found = line(lines, "guard")
    assert found.startswith("warn") and str(directory.id) in found and "1 held" in found
    assert "manage.py directories held" in "\n".join(lines)


def test_an_unreachable_limit_store_is_a_failure_naming_it(production: Any) -> None:
    production.RATE_LIMIT_STORAGE_URL = "redis://:store-password@127.0.0.1:1/3"
    code, lines = doctor()
    assert code == 1
    found = line(lines, "limit_store")
    assert found.startswith("FAIL") and "127.0.0.1:1/3 cannot be reached" in found and "let through" in found
    assert "store-password" not in "\n".join(lines)


def test_a_per_process_limit_store_in_production_is_a_warning(production: Any) -> None:
    production.RATE_LIMIT_STORAGE_URL = "memory://"
    _, lines = doctor()
    assert line(lines, "limit_store").startswith("warn") and "each process counts alone" in line(lines, "limit_store")
    assert "SCIM 3000, REST 6000" in line(lines, "limits")
