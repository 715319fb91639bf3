"""The two log formats, chosen with LOG_FORMAT: `plain` (the default, for people) and `json` (one object
per line, for a log pipeline). Imported by the LOGGING setting and the Celery app, so
nothing here may import Django's apps.

Both read `request_id` and `directory_id` from the record, where core.logfilters.RequestScopeFields put
them (None outside a request, or before its directory is known).
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.orjson import OrjsonFormatter

from core.timefmt import iso_utc

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
# Record attributes never written as fields: Django's request logger attaches the request, whose text
# form carries the query string (SCIM filters quote userName values: personal data, RFC 7644 §7.5.2).
_NEVER = ("request", "server_time")
_CONTEXT = ("request_id", "directory_id")


class PlainFormatter(logging.Formatter):
    """`time LEVEL logger message`, then ` request_id=… directory_id=…` when the line has them (and its
    message does not already name the request id)."""

    def __init__(self, fmt: str | None = None, datefmt: str | None = None, style: Any = "%", **kwargs: Any) -> None:
        super().__init__(fmt or PLAIN_FORMAT, datefmt, style, **kwargs)

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        line = super().formatMessage(record)
        request_id = getattr(record, "request_id", None)
        if request_id and request_id not in line:
            line += f" request_id={request_id}"
        directory_id = getattr(record, "directory_id", None)
        if directory_id and directory_id not in line:
            line += f" directory_id={directory_id}"
        return line


class JsonFormatter(OrjsonFormatter):
    """One JSON object per line: `time` (the one time format, core.timefmt), `level`, `logger`, `message`,
    `request_id` and `directory_id` when known, `exc_info` (the traceback as one string) when there is
    one, and the fields a call passed with `extra=`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("fmt", "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s %(directory_id)s")
        kwargs.setdefault("rename_fields", {"asctime": "time", "levelname": "level", "name": "logger"})
        kwargs.setdefault("reserved_attrs", [*RESERVED_ATTRS, *_NEVER])
        super().__init__(*args, **kwargs)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        return iso_utc(datetime.fromtimestamp(record.created, UTC))

    def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
        for key in _CONTEXT:
            if log_data.get(key) is None:
                log_data.pop(key, None)
        return log_data


def formatter_class(log_format: str) -> str:
    """The dotted path of the formatter for a LOG_FORMAT value (for logging's dictConfig)."""
    return "core.logformat.JsonFormatter" if log_format == "json" else "core.logformat.PlainFormatter"


def json_from_environ() -> bool:
    """LOG_FORMAT=json, for the process entry points that decide before Django's settings are loaded
    (the Celery app, the worker launcher); config/settings.py checks the value."""
    return os.environ.get("LOG_FORMAT", "").strip().lower() == "json"


def logging_config(log_format: str, level: str) -> dict[str, Any]:
    """Roster's logging (Django's LOGGING setting, and granian's in server.web) for a LOG_FORMAT value and a
    root level. Built here, outside the `config` package, so granian's launcher can build it without
    importing the application."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"roster": {"()": formatter_class(log_format)}},
        "filters": {
            "already_logged": {"()": "core.logfilters.SkipAlreadyLogged"},
            "client_refusal": {"()": "core.logfilters.ClientRefusalWithoutTraceback"},
            "request_scope": {"()": "core.logfilters.RequestScopeFields"},
            "setup_token_mask": {"()": "setuplinks.redaction.SetupTokenMask"},
        },
        # On the handler, not the `django.security` logger: a logger's filters do not see the records of its
        # children (django.security.TooManyFieldsSent, .DisallowedHost...), a handler's see every record.
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "roster",
                "filters": ["client_refusal", "request_scope", "setup_token_mask"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # At INFO whatever LOG_LEVEL says, as Django's own defaults had it: under DEBUG,
            # django.db.backends logs every SQL statement with its parameters at DEBUG.
            "django": {"level": "INFO"},
            # Request lines carry SCIM filter strings (userName values are PII, RFC 7644 §7.5.2).
            "django.server": {"level": "WARNING"},
            # 4xx answers (every SCIM 404 for a deleted user, Okta's probes) would log a WARNING with the
            # full path, which carries user ids; 5xx are still logged as ERROR.
            "django.request": {"level": "ERROR", "filters": ["already_logged"]},
            # The token endpoint's grant (scim/oauth.py): oauthlib's DEBUG lines carry the access token it
            # issued and the request's form, so they never reach a handler, whatever LOG_LEVEL says.
            "oauthlib": {"level": "WARNING"},
        },
    }
