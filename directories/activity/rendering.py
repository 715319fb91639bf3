"""The JSON shapes of SCIM activity, shared by the REST API, the admin API, webhooks and the portal: the
Directory's `health` and the activity part of its `scim` object (contract §4.1), and a request-log entry."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.timefmt import iso_utc_or_none
from directories.activity.state import health_counters, micros
from directories.models import Directory, HealthState, ScimHealth, ScimLogEntry


def health_row(directory: Directory) -> ScimHealth | None:
    """The directory's health row (read once, or brought by `select_related("scim_health")`); None
    before its first request."""
    # Django raises an AttributeError subclass for a missing reverse one-to-one row.
    return getattr(directory, "scim_health", None)


def health_state_of(directory: Directory, health: ScimHealth | None) -> str:
    if directory.deactivated:
        return HealthState.DEACTIVATED  # first match, whatever the row says
    return health.state if health is not None else HealthState.NEVER_CONNECTED


def health_data(directory: Directory, health: ScimHealth | None, now: datetime) -> dict[str, Any]:
    """`health`: the state and its facts; the counts cover this hour and the 23 before it."""
    requests, errors, auth_failures = health_counters(health).day_totals(micros(now) or 0)
    return {
        "state": str(health_state_of(directory, health)),
        "last_request_at": iso_utc_or_none(health.last_request_at if health else None),
        "last_success_at": iso_utc_or_none(health.last_success_at if health else None),
        "last_error_at": iso_utc_or_none(health.last_error_at if health else None),
        "requests_24h": requests,
        "errors_24h": errors,
        "auth_failures_24h": auth_failures,
    }


def scim_secret_data(directory: Directory, health: ScimHealth | None, now: datetime) -> dict[str, Any]:
    """What the Directory's `scim` object says about its secrets besides the current one."""
    valid = directory.previous_scim_secret_valid(now)
    return {
        "previous_secret_expires_at": iso_utc_or_none(directory.previous_scim_secret_expires_at if valid else None),
        "last_used_at": iso_utc_or_none(health.secret_last_used_at if health else None),
        "previous_secret_last_used_at": iso_utc_or_none(health.previous_secret_last_used_at if health else None),
    }


def scim_log_entry_data(entry: ScimLogEntry) -> dict[str, Any]:
    return {
        "id": str(entry.id),
        "directory_id": str(entry.directory_id),
        "at": iso_utc_or_none(entry.at),
        "method": entry.method,
        "path": entry.path,
        "query": entry.query,
        "status": entry.status,
        "failed": entry.status >= 400,
        "scim_type": entry.scim_type or None,
        "detail": entry.detail or None,
        "latency_ms": entry.latency_ms,
        "request_id": entry.request_id,
        "client_ip": entry.client_ip,
        "user_agent": entry.user_agent,
        "request_body": entry.request_body,
        "request_truncated": entry.request_truncated,
        "response_body": entry.response_body,
        "response_truncated": entry.response_truncated,
    }
