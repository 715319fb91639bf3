from __future__ import annotations

import logging

from django.apps import AppConfig
from django.conf import settings


class OperationsConfig(AppConfig):
    """What operators use: GET /metrics, GET /readyz and `manage.py doctor`. No models."""

    name = "operations"

    def ready(self) -> None:
        if settings.LOG_FORMAT == "json":
            # Python's warnings are printed as text unless logging takes them: one JSON object per line.
            logging.captureWarnings(True)
        # Here rather than in the settings: logging is configured by now, so in LOG_FORMAT=json this
        # warning is a JSON line like every other.
        if not settings.DB_ENCRYPTION_KEY:
            logging.getLogger("roster.settings").warning(
                "DB_ENCRYPTION_KEY is not set: SCIM and webhook secrets are stored in clear in the database."
            )
