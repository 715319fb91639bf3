"""Heartbeats of the background processes (webhooks.models.Heartbeat), kept in the database so that
`manage.py doctor` and /metrics on any node can tell whether beat and a worker are alive."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from webhooks.models import Heartbeat

SWEEP = "sweep"
PING_PREFIX = "ping:"
# An answer to a ping that no doctor read (it stopped waiting) is deleted after this long.
PING_KEPT = timedelta(hours=1)


def heartbeat_record(*, name: str, detail: str = "") -> None:
    Heartbeat.objects.update_or_create(name=name, defaults={"at": timezone.now(), "detail": detail[:255]})


def worker_ping_answer(*, token: str, hostname: str) -> None:
    """A worker ran doctor's ping task: it consumes the queue and reaches the database."""
    now = timezone.now()
    heartbeat_record(name=f"{PING_PREFIX}{token[:48]}", detail=hostname)
    Heartbeat.objects.filter(name__startswith=PING_PREFIX, at__lt=now - PING_KEPT).delete()


def worker_ping_forget(*, token: str) -> None:
    Heartbeat.objects.filter(name=f"{PING_PREFIX}{token[:48]}").delete()
