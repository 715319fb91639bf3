"""Writes of SCIM activity: batches of health counters, health state changes and their
dsync.health_changed events, the periodic sweep, the request log and its purge (contract §4.1).

Every write to a directory's health row takes that row's lock first and reads the directory after it,
so a batch, a (de)activation, a rotation and the sweep serialize per directory and each decides the
state from what the others committed. A state that changes is announced in the same transaction, to
WEBHOOK_URL, as a directory-level event: `data` is the directory without its secrets, with its new
`health` and `previous_state`. The first state of a new directory (never_connected) is not announced:
dsync.created covers it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from core.rows import RowReader, RowWriter
from directories.activity.state import (
    TIME_COLUMNS,
    Counters,
    health_counters,
    health_state,
    micros,
    moment_of,
    secret_mark,
)
from directories.models import Directory, HealthState, ScimHealth, ScimLogEntry
from directories.outbox import outbox
from directories.rendering import directory_public_data
from directories.selectors import directory_get

_log_rows = RowWriter(ScimLogEntry)
# The entry's fields after its id and directory, each with the value a missing one gets.
_LOG_DEFAULTS = tuple(
    (f.name, f.get_default()) for f in ScimLogEntry._meta.concrete_fields if f.name not in ("id", "directory")
)
_LOG_COPIED = ("id", "directory", *(name for name, _ in _LOG_DEFAULTS))
_health_rows = RowReader(ScimHealth)
_health_writes = RowWriter(ScimHealth)
# Every column a flush may change (RowWriter adds updated_at).
_HEALTH_FIELDS = [f.name for f in ScimHealth._meta.concrete_fields if not f.primary_key and f.name != "updated_at"]


def _counters_store(health: ScimHealth, counters: Counters, now_us: int) -> None:
    for name, column in TIME_COLUMNS.items():
        setattr(health, column, moment_of(getattr(counters, name)))
    health.recent_failures = counters.failures
    health.hours = {str(hour): counts for hour, counts in sorted(counters.recent_hours(now_us).items())}
    health.last_minute = {str(slot): counts for slot, counts in sorted(counters.recent_minute(now_us).items())}


def _health_locked(directory_id: uuid.UUID) -> tuple[ScimHealth, Directory] | None:
    """The directory's health row, locked until the transaction ends (made when missing), and the
    directory read after the lock, so that a (de)activation or a rotation that held it has committed.
    None when the directory does not exist (any more). Fixed SQL (core.rows): each web process runs
    this for every directory with requests, every few seconds."""
    sql = _health_rows.sql('{table}."directory_id" = %s', lock="update")
    params = [_health_rows.param("directory", directory_id)]
    health = _health_rows.first(sql, params)
    if health is None:
        # Checked first: the foreign key is checked only at commit, where it would fail the whole batch.
        if directory_get(directory_id=directory_id) is None:
            return None
        # Two processes flushing a directory's first batch at once: one inserts, both then lock it.
        ScimHealth.objects.bulk_create([ScimHealth(directory_id=directory_id)], ignore_conflicts=True)
        health = _health_rows.first(sql, params)
    directory = directory_get(directory_id=directory_id)
    if health is None or directory is None:
        return None
    return health, directory


def _settle(directory: Directory, health: ScimHealth, *, now: datetime) -> None:
    """Decide the state from the row (and the directory), store it, and announce a change."""
    silent = timedelta(days=settings.SCIM_SILENT_DAYS)
    state = health_state(
        deactivated=directory.deactivated,
        counters=health_counters(health),
        now_us=micros(now) or 0,
        silent_us=int(silent.total_seconds()) * 1_000_000,
    )
    previous = health.state
    health.state = state
    _health_writes.update(health, _HEALTH_FIELDS)
    directory.scim_health = health  # what the event's `health` renders
    if state != previous:
        data = directory_public_data(directory, now=now)
        data["previous_state"] = previous
        outbox().event_record(directory=directory, event_type="dsync.health_changed", data=data)


def scim_health_merge(*, directory_id: uuid.UUID, counters: Counters, now: datetime | None = None) -> str | None:
    """Add one batch of a process's counters to the directory's health row and settle its state;
    returns the state (None when the directory is gone: the batch is dropped with it).

    Uses of a secret are credited by what the secret was (its mark), whatever rotated since the
    requests were made: to `secret_last_used_at` while it is the current one, to
    `previous_secret_last_used_at` while a rotation keeps it, to neither once it is gone."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = _health_locked(directory_id)
        if locked is None:
            return None
        health, directory = locked
        merged = health_counters(health)
        merged.merge(counters)
        _counters_store(health, merged, micros(now) or 0)
        _secret_uses_credit(directory, health, counters.uses)
        _settle(directory, health, now=now)
        return health.state


def _secret_uses_credit(directory: Directory, health: ScimHealth, uses: dict[bytes, int]) -> None:
    if not uses:
        return
    current = secret_mark(directory.scim_secret)
    previous = secret_mark(directory.previous_scim_secret) if directory.previous_scim_secret else None
    for mark, at in uses.items():
        column = (
            "secret_last_used_at" if mark == current else "previous_secret_last_used_at" if mark == previous else None
        )
        if column is not None:
            used = moment_of(at)
            known = getattr(health, column)
            if known is None or (used is not None and used > known):
                setattr(health, column, used)


def scim_health_settle(*, directory: Directory, now: datetime | None = None) -> str:
    """Decide the directory's state again (after it was deactivated or activated), announcing a change.
    Call inside the transaction that changed the directory."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = _health_locked(directory.id)
        if locked is None:
            return HealthState.NEVER_CONNECTED
        _settle(directory, locked[0], now=now)
        return locked[0].state


def scim_secret_rotated(*, directory: Directory, previous_kept: bool) -> None:
    """After a rotation (in its transaction): the new secret has not been used yet, and the previous one's
    last use is the last use of the secret just replaced while the rotation keeps it (else none)."""
    with transaction.atomic():
        locked = _health_locked(directory.id)
        if locked is None:
            return
        health = locked[0]
        health.previous_secret_last_used_at = health.secret_last_used_at if previous_kept else None
        health.secret_last_used_at = None
        _health_writes.update(health, ["previous_secret_last_used_at", "secret_last_used_at"])
        directory.scim_health = health


def scim_previous_secret_forgotten(*, directory: Directory) -> None:
    """After the previous secret was revoked (in that transaction): it has no last use to show."""
    ScimHealth.objects.filter(directory_id=directory.id).update(previous_secret_last_used_at=None)
    cached = getattr(directory, "scim_health", None)
    if cached is not None:
        cached.previous_secret_last_used_at = None


@dataclass(frozen=True)
class SweepResult:
    silent: int  # directories that went silent (and were announced)
    secrets_cleared: int  # expired previous SCIM secrets removed from the database


def scim_health_sweep(*, now: datetime | None = None) -> SweepResult:
    """What time alone changes, run by beat (webhooks.tasks): a healthy directory that has had no request
    for SCIM_SILENT_DAYS goes silent (the other states outrank silent, and a request ends it at its
    flush), a throttled one is decided again (its minute may have passed without a request), and previous
    SCIM secrets past their expiry are erased (they no longer authenticate)."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.SCIM_SILENT_DAYS)
    # A throttled directory stops being so when its minute passes, whether or not it sends again.
    candidates = list(
        ScimHealth.objects.filter(
            Q(state=HealthState.HEALTHY, last_request_at__lt=cutoff) | Q(state=HealthState.THROTTLED)
        ).values_list("directory_id", flat=True)
    )
    silent = 0
    for directory_id in candidates:
        with transaction.atomic():
            locked = _health_locked(directory_id)
            if locked is None:
                continue
            health, directory = locked
            _settle(directory, health, now=now)
            silent += health.state == HealthState.SILENT
    cleared = Directory.objects.filter(previous_scim_secret_expires_at__lte=now).update(
        previous_scim_secret="", previous_scim_secret_expires_at=None
    )
    return SweepResult(silent=silent, secrets_cleared=cleared)


def scim_log_write_many(*, entries: list[tuple[uuid.UUID, dict[str, Any]]]) -> int:
    """Insert request-log entries, each (directory id, the field values of ScimLogEntry), in one
    transaction; returns how many. Called by each web process's recorder with what gathered since its
    last flush (directories.activity.recorder), never inside a SCIM request's transaction."""
    if connection.vendor == "postgresql":
        # Every value is already what its column takes (scim.http.activity caps and masks them), so the
        # rows go as they are, in one COPY.
        _log_rows.copy_rows(
            _LOG_COPIED,
            [
                (uuid.uuid4(), directory_id, *[entry.get(name, default) for name, default in _LOG_DEFAULTS])
                for directory_id, entry in entries
            ],
        )
        return len(entries)
    rows = [ScimLogEntry(directory_id=directory_id, **entry) for directory_id, entry in entries]
    with transaction.atomic():
        _log_rows.insert_many(rows)
    return len(rows)


def scim_log_purge(*, now: datetime | None = None) -> int:
    """Delete request-log entries older than SCIM_LOG_RETENTION_DAYS; returns how many."""
    now = now or timezone.now()
    deleted, _ = ScimLogEntry.objects.filter(at__lt=now - timedelta(days=settings.SCIM_LOG_RETENTION_DAYS)).delete()
    return deleted
