"""Celery application. Workers: `celery -A config worker`; periodic sweeps: `celery -A config beat`."""

from __future__ import annotations

import os
from pathlib import Path

from celery import Celery, signals

from core.logformat import json_from_environ

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Celery's Django fixup runs Django's system checks when a worker starts, and the URL checks import every
# view module (DRF, the portal, the OpenAPI generator): ~18 MB a worker never uses. The checks run where
# they matter, in `manage.py migrate` / `check` and the web server; CELERY_SKIP_CHECKS=0 brings them back.
if os.environ.get("CELERY_SKIP_CHECKS", "1") in ("", "0", "false", "False"):
    os.environ.pop("CELERY_SKIP_CHECKS", None)
else:
    os.environ["CELERY_SKIP_CHECKS"] = "1"

app = Celery("roster")
app.config_from_object("django.conf:settings", namespace="CELERY")

# Publishing happens inside the SCIM request (after commit; with a Redis broker only when no drain of
# the directory is running, see webhooks.services.draining). When the broker is down the publish must fail fast:
# the events are already safe in the outbox and the sweep asks for their drain later.
# (webhooks.services.draining also stops trying for a few seconds after a failure.)
app.conf.broker_connection_timeout = 1
app.conf.broker_transport_options = {"socket_connect_timeout": 1, "socket_timeout": 5, "max_retries": 0}
app.conf.task_publish_retry = False

app.conf.beat_schedule = {
    # Drain directories whose events' kick failed or whose drain died, and report lost attempts.
    "webhooks-sweep": {"task": "webhooks.sweep", "schedule": 30.0},
    # Delivery-log retention (WEBHOOK_LOG_RETENTION_DAYS), finished outbox rows, and the SCIM request log's
    # retention (SCIM_LOG_RETENTION_DAYS).
    "webhooks-purge": {"task": "webhooks.purge", "schedule": 3600.0},
    # SCIM health: directories that went silent (SCIM_SILENT_DAYS without a request), expired previous secrets.
    "scim-health-sweep": {"task": "directories.scim_health_sweep", "schedule": 300.0},
    # History (contract §5.3): fold the feeds' new events off the request path; trim to the feed's retention.
    "history-fold": {"task": "history.fold", "schedule": 30.0},
    "history-prune": {"task": "history.prune", "schedule": 3600.0},
}

app.autodiscover_tasks()


# --- the node's metrics and log format (contract §7.1) ---------------------------------------------------


@signals.worker_init.connect
def _worker_metrics(**_kwargs: object) -> None:
    """A worker (`celery -A config worker` or `python -m server.worker`) writes its metrics in its own
    folder under METRICS_DIR, which /metrics reads with the web workers' (core/metricsdir.py). Its first
    metric is recorded by a task, after this: prometheus-client then reads the variable set here."""
    from django.conf import settings

    from core import metricsdir

    metricsdir.use(metricsdir.worker_prepare(Path(settings.METRICS_DIR), os.getpid()))


def _logging_from_settings(loglevel: int | str | None = None, **_kwargs: object) -> None:
    """LOG_FORMAT=json: the worker's and beat's lines go through Roster's LOGGING (one JSON object per
    line, with the directory id of a drain) instead of Celery's own text format. `-l` still sets the level."""
    import logging.config

    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)
    if loglevel:
        logging.getLogger().setLevel(loglevel)


# Connected only for JSON: any receiver of setup_logging replaces Celery's own set-up, which plain text keeps.
if json_from_environ():
    signals.setup_logging.connect(_logging_from_settings, weak=False)
