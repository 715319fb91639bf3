"""Celery application. Workers: `celery -A config worker`; periodic sweeps: `celery -A config beat`."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("roster")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
