"""`manage.py webhooks_sweep`: what the `webhooks.sweep` beat task does, for cron or by hand."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from webhooks.services import SWEEP_PENDING_AGE, drain_pool, events_sweep


class Command(BaseCommand):
    help = (
        "Ask for a drain of every directory with webhook events committed but never attempted (broker or "
        "process outage), and mark attempts whose worker died as failed ('worker lost'). Each event is "
        "attempted once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--min-age",
            type=float,
            default=SWEEP_PENDING_AGE.total_seconds(),
            help="Only events pending for at least this many seconds (default: %(default)s).",
        )

    def handle(self, *args, **options) -> None:  # noqa: ANN002, ANN003
        if options["min_age"] < 0:
            self.stderr.write("--min-age must not be negative.")
            raise SystemExit(2)
        result = events_sweep(pending_age=timedelta(seconds=options["min_age"]))
        if not settings.CELERY_BROKER_URL:
            # In-process mode: deliver before the command's process exits, or the work would be lost.
            drain_pool.drain()
        self.stdout.write(f"enqueued {result.enqueued} pending event(s); {result.worker_lost} marked worker lost")
