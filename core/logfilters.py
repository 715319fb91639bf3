"""Logging filters. Imported by the LOGGING setting, so nothing here may import Django's apps."""

from __future__ import annotations

import logging

# Set on a request whose failure Roster's own error funnel has already logged (one line per request).
ALREADY_LOGGED = "roster_error_logged"


def mark_logged(request: object) -> None:
    setattr(request, ALREADY_LOGGED, True)


class SkipAlreadyLogged(logging.Filter):
    """On `django.request`: drop Django's "Internal Server Error: /path" / "Service Unavailable: /path"
    line for a request whose error Roster's funnel already logged with its request id, so an outage
    costs one line per failed request, not two."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(getattr(record, "request", None), ALREADY_LOGGED, False)
