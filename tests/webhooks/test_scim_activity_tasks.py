"""The periodic work of SCIM activity that beat runs (contract §4.1): the request log's retention, by the
existing purge, and the health sweep that notices silent directories."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from config.celery import app
from directories.models import Directory, ScimHealth, ScimLogEntry
from webhooks import tasks

pytestmark = pytest.mark.django_db


def entry(directory: Directory, days_old: float) -> ScimLogEntry:
    return ScimLogEntry.objects.create(
        directory=directory,
        at=timezone.now() - timedelta(days=days_old),
        method="GET",
        path="/Users",
        status=404,
        latency_ms=1,
        request_id="r",
    )


def test_the_periodic_purge_drops_request_log_entries_past_their_retention(
    directory_a: Directory, settings: Any
) -> None:
    settings.SCIM_LOG_RETENTION_DAYS = 7
    kept = entry(directory_a, 6.9)
    entry(directory_a, 7.1)
    result = tasks.webhook_deliveries_purge()
    assert result["scim_requests"] == 1
    assert list(ScimLogEntry.objects.values_list("id", flat=True)) == [kept.id]
    out = StringIO()
    entry(directory_a, 30)
    call_command("webhooks_purge", stdout=out)
    assert "deleted 1 SCIM request log entry (retention 7 days)" in out.getvalue()


def test_beat_runs_the_health_sweep_which_notices_silent_directories(directory_a: Directory, settings: Any) -> None:
    schedule = {entry["task"]: entry["schedule"] for entry in app.conf.beat_schedule.values()}
    assert "directories.scim_health_sweep" in schedule and "webhooks.purge" in schedule
    assert app.tasks["directories.scim_health_sweep"].name == tasks.scim_health_sweep.name
    long_ago = timezone.now() - timedelta(days=settings.SCIM_SILENT_DAYS + 1)
    ScimHealth.objects.create(directory=directory_a, state="healthy", last_request_at=long_ago)
    assert tasks.scim_health_sweep() == {"silent": 1, "secrets_cleared": 0}
    assert ScimHealth.objects.get(directory=directory_a).state == "silent"
