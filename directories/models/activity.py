"""SCIM activity (contract §4.1): the request log and the health of each directory's connection."""

from __future__ import annotations

import uuid

from django.db import models

from directories.models.directory import Directory


class HealthState(models.TextChoices):
    """The states of a directory's SCIM connection, in the order the rule tries them (first match wins,
    directories.activity.state)."""

    DEACTIVATED = "deactivated", "Deactivated"
    INVALID_CREDENTIALS = "invalid_credentials", "Invalid credentials"
    THROTTLED = "throttled", "Throttled"
    FAILING = "failing", "Failing"
    SILENT = "silent", "Silent"
    HEALTHY = "healthy", "Healthy"
    NEVER_CONNECTED = "never_connected", "Never connected"


class ScimHealth(models.Model):
    """What the SCIM requests naming one directory add up to: the facts its health state is decided
    from (directories.activity.state), its 24-hour counters and when each of its secrets was last used.

    Written by the web processes' batched flushes (directories.activity.recorder), never by a SCIM request
    itself, under this row's lock, so batches from any number of processes and nodes add up. Times in
    `recent_failures` and the keys of `hours` are integers (microseconds and hours since the epoch): the
    same numbers the batches carry, compared exactly. No row yet means no request yet.
    """

    directory = models.OneToOneField(Directory, on_delete=models.CASCADE, primary_key=True, related_name="scim_health")
    # The state last decided (and announced as dsync.health_changed when it changed).
    state = models.CharField(max_length=24, choices=HealthState.choices, default=HealthState.NEVER_CONNECTED)
    last_request_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    # The last request whose secret matched (and was not refused as deactivated), and the last 401.
    last_authenticated_at = models.DateTimeField(null=True, blank=True)
    last_auth_failure_at = models.DateTimeField(null=True, blank=True)
    # The latest authenticated requests that failed (4xx/5xx), newest first, at most five.
    recent_failures = models.JSONField(default=list, blank=True)
    # {"<hour since the epoch>": [requests, errors, auth failures]}, the last 24 hours only.
    hours = models.JSONField(default=dict, blank=True)
    # {"<ten seconds since the epoch>": [requests, refused by the rate limit]}, the last minute only.
    last_minute = models.JSONField(default=dict, blank=True)
    secret_last_used_at = models.DateTimeField(null=True, blank=True)
    previous_secret_last_used_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["state", "last_request_at"], name="scim_health_state")]

    def __str__(self) -> str:
        return f"{self.directory_id}: {self.state}"


class ScimLogEntry(models.Model):
    """One SCIM request of a directory, as the request log keeps it (contract §4.1): every one that ended
    in a 4xx or 5xx, and successful ones while the directory's `log_scim_requests` is on.

    Bodies are text, capped, with password values masked (scim.protocol.masking); no header is kept
    except the user agent. Deleted with the directory, and after SCIM_LOG_RETENTION_DAYS.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: the indexes of Meta.indexes that start with it serve its lookups.
    directory = models.ForeignKey(Directory, on_delete=models.CASCADE, related_name="scim_log", db_index=False)
    at = models.DateTimeField()
    method = models.CharField(max_length=16)
    # Relative to the directory's SCIM base (e.g. "/Users/<id>"), and the query string, decoded.
    path = models.TextField()
    query = models.TextField(blank=True, default="")
    status = models.PositiveSmallIntegerField()
    scim_type = models.CharField(max_length=32, blank=True, default="")
    detail = models.TextField(blank=True, default="")
    latency_ms = models.PositiveIntegerField()
    request_id = models.CharField(max_length=128)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.TextField(blank=True, default="")
    request_body = models.TextField(blank=True, default="")
    request_truncated = models.BooleanField(default=False)
    response_body = models.TextField(blank=True, default="")
    response_truncated = models.BooleanField(default=False)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["directory", "at", "id"], name="scim_log_directory_at"),
            # `failed=true` reads only the failures, newest first, however many successes are kept.
            models.Index(
                fields=["directory", "at", "id"], name="scim_log_directory_failed", condition=models.Q(status__gte=400)
            ),
            models.Index(fields=["directory", "status", "at"], name="scim_log_directory_status"),
            models.Index(fields=["at"], name="scim_log_at"),
        ]

    def __str__(self) -> str:
        return f"{self.method} {self.path} {self.status}"
