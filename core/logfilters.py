"""Logging filters. Imported by the LOGGING setting, so nothing here may import Django's apps."""

from __future__ import annotations

import logging

from core.requestid import SCOPE_KEY, scope_current

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


class RequestScopeFields(logging.Filter):
    """On the handlers: every record gets `request_id` and `directory_id` from the request (or job) it was
    written in (core.requestid), None outside one, so no log call has to pass them. Django's handler logs
    a 5xx (`django.request`) after the middleware chain has returned; that record carries the request,
    whose environ still holds the scope."""

    def filter(self, record: logging.LogRecord) -> bool:
        scope = scope_current()
        if scope is None:
            scope = getattr(getattr(record, "request", None), "META", {}).get(SCOPE_KEY)
        fields = record.__dict__
        if scope is None:
            fields.setdefault("request_id", None)
            fields.setdefault("directory_id", None)
        else:
            fields.setdefault("request_id", scope.request_id)
            fields.setdefault("directory_id", scope.directory_id)
        return True
