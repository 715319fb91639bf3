"""A logging filter for the records of `django.security`. Imported by the LOGGING setting: no Django apps."""

from __future__ import annotations

import logging


class ClientRefusalWithoutTraceback(logging.Filter):
    """Django logs each SuspiciousOperation it turns into a 400 (too many query or form fields, a Host
    header ALLOWED_HOSTS refuses, a malformed multipart body...) as an ERROR with the full traceback.
    These are refusals of what a client sent, answered as planned, not faults of the server: one WARNING
    line naming the kind (the logger's name and message) says all an operator needs, and a traceback
    here would bury the real 500s and set off alerts that watch for tracebacks."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("django.security."):
            return True
        record.exc_info = None
        record.exc_text = None
        if record.levelno > logging.WARNING:
            record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        return True
