"""Webhook events: recording them in the outbox (in the caller's transaction), delivering each one
once, sweeping what a broker or worker outage left behind, and purging the log (SPEC §5).

Delivery guarantee, in terms of `WebhookEvent.state`:
- `pending` -> `sending` is an atomic conditional UPDATE (the claim); only the caller that flips it
  makes the HTTP attempt, so an event enqueued twice (on commit and again by the sweep) is still
  attempted at most once.
- The attempt ends `delivered` or `failed` and is never retried. A worker that dies mid-attempt
  leaves `sending`; the sweep turns it into `failed` ("worker lost") after `sending_stale_after()`.
- `pending` rows older than SWEEP_PENDING_AGE (their publish failed, or the process died before
  it ran) are enqueued again by the sweep, so every committed event gets its one attempt.
- Directory events of a deactivated or deleted directory (or one whose webhook was removed) are
  `dropped` with the reason, not sent.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import orjson
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from directories.models import Directory
from webhooks import dispatch, transport
from webhooks.models import EventState, WebhookDelivery, WebhookEvent
from webhooks.signing import SIGNATURE_HEADER, signature_header

logger = logging.getLogger("roster.webhooks")

# An event still pending this long after commit missed its enqueue (broker down, process killed):
# long enough that the normal on-commit publish has certainly happened first.
SWEEP_PENDING_AGE = timedelta(seconds=15)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def event_payload(*, directory: Directory, event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "event": event_type,
        "created_at": _now_iso(),
        "directory_id": str(directory.id),
        "tenant": directory.tenant,
        "product": directory.product,
        "data": data,
    }


def events_record(*, directory: Directory, events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Record a batch of (event_type, data) for one directory; returns the SPEC §5 payloads.

    Must run inside the transaction that makes the change. Rows are written only when the
    directory has a webhook; delivery is scheduled after commit.
    """
    payloads = [event_payload(directory=directory, event_type=t, data=d) for t, d in events]
    if payloads and directory.has_webhook:
        rows = [
            WebhookEvent(
                id=uuid.UUID(p["id"]),
                directory_id=directory.id,
                event_type=p["event"],
                target="directory",
                body=orjson.dumps(p).decode(),
            )
            for p in payloads
        ]
        WebhookEvent.objects.bulk_create(rows)
        for row in rows:
            transaction.on_commit(partial(dispatch.enqueue, row.id))
    return payloads


def event_record(*, directory: Directory, event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    return events_record(directory=directory, events=[(event_type, data)])[0]


def directory_event_record(*, directory: Directory, event_type: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """Record a dsync.* event for the global WEBHOOK_URL receiver, when one is configured."""
    if not settings.WEBHOOK_URL:
        return None
    payload = event_payload(directory=directory, event_type=event_type, data=data)
    row = WebhookEvent.objects.create(
        id=uuid.UUID(payload["id"]),
        directory_id=directory.id,
        event_type=event_type,
        target="global",
        body=orjson.dumps(payload).decode(),
    )
    transaction.on_commit(partial(dispatch.enqueue, row.id))
    return payload


# --- delivery -----------------------------------------------------------------------------------


# Longer than the task's hard time limit (see webhooks.tasks): a `sending` event older than this
# cannot still have a live attempt behind it.
def sending_stale_after() -> timedelta:
    return timedelta(seconds=float(settings.WEBHOOK_TIMEOUT) + 90)


@dataclass(frozen=True)
class _Target:
    url: str
    secret: str | None
    directory: Directory | None  # the directory whose log records the attempt, when it logs


def _finish_event(event_id: uuid.UUID, state: str, reason: str, *, keep: bool) -> None:
    """Close the outbox row: kept with its final state (global events, drops), or deleted when the
    delivery log holds the record, or when nothing may be kept (log_webhook_events off)."""
    rows = WebhookEvent.objects.filter(pk=event_id)
    if keep:
        rows.update(state=state, state_reason=reason[:255], finished_at=timezone.now())
    else:
        rows.delete()


def _resolve_target(event: WebhookEvent) -> _Target | str:
    """Where this event goes now, or the reason it must be dropped."""
    if event.target == "global":
        # dsync.* events go to the operator's receiver even when the directory is gone or deactivated:
        # they announce exactly that.
        if not settings.WEBHOOK_URL:
            return "WEBHOOK_URL is not set"
        return _Target(settings.WEBHOOK_URL, settings.WEBHOOK_SECRET or None, None)
    directory = Directory.objects.filter(pk=event.directory_id).first()
    if directory is None:
        return "directory deleted"
    if directory.deactivated:
        return "directory deactivated"
    if not directory.webhook_url:
        return "directory has no webhook endpoint"
    return _Target(directory.webhook_url, directory.webhook_secret, directory)


def event_deliver(*, event_id: uuid.UUID | str) -> str | None:
    """Make the one delivery attempt of an outbox event; returns its final state, or None when this
    call did not claim it (unknown id, or already claimed by another worker or an earlier run)."""
    try:
        event_id = uuid.UUID(str(event_id))
    except ValueError:
        return None
    event = _claim(event_id)
    if event is None:
        return None
    target = _resolve_target(event)
    if isinstance(target, str):
        logger.info("webhook event %s (%s) dropped: %s", event.id, event.event_type, target)
        _record_drop(event, target)
        return EventState.DROPPED

    body = event.body.encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        "Roster-Event": event.event_type,
        "Roster-Event-Id": str(event.id),
    }
    if target.secret:
        headers[SIGNATURE_HEADER] = signature_header(body, target.secret)
    else:
        logger.warning("webhook event %s sent unsigned: WEBHOOK_SECRET is not set", event.id)
    attempted_at = timezone.now()
    result = transport.post(target.url, body, headers, float(settings.WEBHOOK_TIMEOUT))
    state = EventState.DELIVERED if result.delivered else EventState.FAILED
    if result.delivered:
        logger.info(
            "webhook event %s (%s) delivered: %s in %d ms",
            event.id,
            event.event_type,
            result.status_code,
            result.latency_ms,
        )
    else:
        # Never the URL's secret parts or the response body: the class and message are enough.
        logger.warning(
            "webhook event %s (%s) failed: %s %s", event.id, event.event_type, result.error_class, result.error_message
        )
    if not (target.directory is not None and target.directory.log_webhook_events):
        # Nothing to log: one DELETE or UPDATE, atomic by itself, so no transaction round trips.
        _finish_event(event.id, state, result.error_message, keep=event.target == "global")
        return state
    with transaction.atomic():
        if _log_enabled(target.directory):
            WebhookDelivery.objects.create(
                directory_id=target.directory.id,
                event_id=event.id,
                event_type=event.event_type,
                endpoint=target.url,
                status_code=result.status_code,
                latency_ms=result.latency_ms,
                error_class=result.error_class,
                error_message=result.error_message[:500],
                response_excerpt=result.response_excerpt,
                payload=event.body,
                delivered=result.delivered,
                attempted_at=attempted_at,
                finished_at=timezone.now(),
            )
        # A directory event's record is the delivery log (or nothing, with logging off); a global
        # event has no directory log, so its outbox row keeps the outcome until the purge.
        _finish_event(event.id, state, result.error_message, keep=event.target == "global")
    return state


def _claim(event_id: uuid.UUID) -> WebhookEvent | None:
    """`pending` -> `sending`, atomically; the claimed event, or None when it is unknown or someone else
    claimed it. On PostgreSQL and SQLite the conditional UPDATE returns the row itself (one statement
    instead of an UPDATE then a SELECT); the condition on `state` is what makes the claim exclusive."""
    claimed_at = timezone.now()
    if connection.vendor not in ("postgresql", "sqlite"):
        if not WebhookEvent.objects.filter(pk=event_id, state=EventState.PENDING).update(
            state=EventState.SENDING, claimed_at=claimed_at
        ):
            return None
        return WebhookEvent.objects.filter(pk=event_id).first()
    meta = WebhookEvent._meta
    column = {f.name: connection.ops.quote_name(f.column) for f in meta.concrete_fields}
    returned = ("id", "directory_id", "event_type", "target", "body")
    # Identifiers come from the model and are quoted; every value is a parameter.
    table = connection.ops.quote_name(meta.db_table)
    returning = ", ".join(column[f] for f in returned)
    sql = (
        f"UPDATE {table} SET {column['state']} = %s, {column['claimed_at']} = %s "  # noqa: S608
        f"WHERE {column['id']} = %s AND {column['state']} = %s RETURNING {returning}"
    )
    params = [
        EventState.SENDING,
        meta.get_field("claimed_at").get_db_prep_value(claimed_at, connection),
        meta.pk.get_db_prep_value(event_id, connection),
        EventState.PENDING,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    # Only the fields the attempt reads; from_db_value is not involved for these column types.
    return WebhookEvent(
        id=uuid.UUID(str(row[0])),
        directory_id=uuid.UUID(str(row[1])),
        event_type=row[2],
        target=row[3],
        body=row[4],
        state=EventState.SENDING,
        claimed_at=claimed_at,
    )


def _log_enabled(directory: Directory) -> bool:
    # Read again after the attempt: logging switched off meanwhile means nothing may be kept.
    return Directory.objects.filter(pk=directory.id, log_webhook_events=True).exists()


def _record_drop(event: WebhookEvent, reason: str) -> None:
    """Record why an event was not sent. A logging directory gets a `Dropped` entry in its delivery
    log (and the outbox row goes). Otherwise the outbox row stays `dropped` with the reason until the
    purge, without the payload for directory events: with logging off no user data is kept."""
    with transaction.atomic():
        directory = None
        if event.target == "directory":
            directory = Directory.objects.filter(pk=event.directory_id, log_webhook_events=True).first()
        if directory is not None:
            now = timezone.now()
            WebhookDelivery.objects.create(
                directory=directory,
                event_id=event.id,
                event_type=event.event_type,
                endpoint=directory.webhook_url,
                error_class="Dropped",
                error_message=f"not sent: {reason}",
                payload=event.body,
                delivered=False,
                attempted_at=now,
                finished_at=now,
            )
            _finish_event(event.id, EventState.DROPPED, reason, keep=False)
            return
        changes = {"state": EventState.DROPPED, "state_reason": reason[:255], "finished_at": timezone.now()}
        if event.target == "directory":
            changes["body"] = ""
        WebhookEvent.objects.filter(pk=event.id).update(**changes)


# --- sweep and purge ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepResult:
    enqueued: int
    worker_lost: int


def events_sweep(*, pending_age: timedelta = SWEEP_PENDING_AGE, limit: int = 5000) -> SweepResult:
    """Enqueue events that were committed but never attempted, and fail those whose worker died.

    Safe to run often and concurrently: enqueueing twice is harmless because only one claim wins.
    """
    now = timezone.now()
    lost = 0
    stale = list(
        WebhookEvent.objects.filter(state=EventState.SENDING, claimed_at__lt=now - sending_stale_after()).values_list(
            "id", flat=True
        )[:limit]
    )
    for event_id in stale:
        lost += _event_worker_lost(event_id)
    pending = list(
        WebhookEvent.objects.filter(state=EventState.PENDING, created_at__lte=now - pending_age)
        .order_by("created_at", "id")
        .values_list("id", flat=True)[:limit]
    )
    enqueued = dispatch.enqueue_many(pending) if pending else 0
    if pending or lost:
        logger.info(
            "webhook sweep: %d of %d pending event(s) enqueued, %d marked worker lost", enqueued, len(pending), lost
        )
    return SweepResult(enqueued=enqueued, worker_lost=lost)


def _event_worker_lost(event_id: uuid.UUID) -> int:
    """`sending` -> `failed` ("worker lost"): the attempt's outcome is unknown, and it is not retried
    because the receiver may well have got it (SPEC §5: a failed delivery is never retried)."""
    reason = "worker lost: the attempt was interrupted and its outcome is unknown"
    with transaction.atomic():
        # Conditional update, so a sweep racing a slow-but-alive worker's finish changes nothing twice.
        if not WebhookEvent.objects.filter(
            pk=event_id, state=EventState.SENDING, claimed_at__lt=timezone.now() - sending_stale_after()
        ).update(state=EventState.FAILED, state_reason=reason, finished_at=timezone.now()):
            return 0
        event = WebhookEvent.objects.get(pk=event_id)
        logger.warning("webhook event %s (%s) failed: worker lost", event.id, event.event_type)
        directory = (
            Directory.objects.filter(pk=event.directory_id, log_webhook_events=True).first()
            if event.target == "directory"
            else None
        )
        if directory is not None:
            WebhookDelivery.objects.create(
                directory=directory,
                event_id=event.id,
                event_type=event.event_type,
                endpoint=directory.webhook_url,
                error_class="WorkerLost",
                error_message=reason,
                payload=event.body,
                delivered=False,
                attempted_at=event.claimed_at,
                finished_at=timezone.now(),
            )
        if event.target == "directory":
            event.delete()  # recorded in the log (or, with logging off, nothing is kept)
    return 1


@dataclass(frozen=True)
class PurgeResult:
    deliveries: int
    events: int


def deliveries_purge(*, now: datetime | None = None) -> PurgeResult:
    """Delete delivery-log entries older than WEBHOOK_LOG_RETENTION_DAYS, any left by a directory that
    has since switched logging off, and finished outbox rows past the same age."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.WEBHOOK_LOG_RETENTION_DAYS)
    deliveries, _ = WebhookDelivery.objects.filter(created_at__lt=cutoff).delete()
    off, _ = WebhookDelivery.objects.filter(directory__log_webhook_events=False).delete()
    events, _ = WebhookEvent.objects.filter(
        state__in=[EventState.DELIVERED, EventState.FAILED, EventState.DROPPED], finished_at__lt=cutoff
    ).delete()
    return PurgeResult(deliveries=deliveries + off, events=events)
