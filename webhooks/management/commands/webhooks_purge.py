"""`manage.py webhooks_purge`: what the `webhooks.purge` beat task does, for cron or by hand."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from directories.activity.services import scim_log_purge
from webhooks.services import deliveries_purge


class Command(BaseCommand):
    help = (
        "Delete webhook delivery-log entries older than WEBHOOK_LOG_RETENTION_DAYS (and those of directories "
        "that switched logging off), plus finished outbox events of the same age, and SCIM request-log "
        "entries older than SCIM_LOG_RETENTION_DAYS."
    )

    def handle(self, *args, **options) -> None:  # noqa: ANN002, ANN003
        result = deliveries_purge()
        self.stdout.write(
            f"deleted {result.deliveries} delivery log entr{'y' if result.deliveries == 1 else 'ies'} and "
            f"{result.events} finished event(s) (retention {settings.WEBHOOK_LOG_RETENTION_DAYS} days)"
        )
        scim_requests = scim_log_purge()
        self.stdout.write(
            f"deleted {scim_requests} SCIM request log entr{'y' if scim_requests == 1 else 'ies'} "
            f"(retention {settings.SCIM_LOG_RETENTION_DAYS} days)"
        )
