"""The sweep (events a broker or worker outage left behind) and the purges (log retention, the changes
feed's retention, a deleted directory's events), contract §5 and §5.1."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

import webhooks.services.draining as draining
import webhooks.services.fanout as fanout
from core import metrics
from directories.models import Directory
from webhooks.models import EndpointDelivery, EventState, WebhookDelivery, WebhookEndpoint, WebhookEvent
from webhooks.services.delivery import sending_stale_after
from webhooks.services.heartbeats import SWEEP, heartbeat_record

logger = logging.getLogger("roster.webhooks")

# An event still pending this long after commit missed its drain (broker down, process killed):
# long enough that the normal after-commit kick has certainly been acted on first.
SWEEP_PENDING_AGE = timedelta(seconds=15)

FINISHED = [EventState.DELIVERED, EventState.FAILED, EventState.DROPPED]


@dataclass(frozen=True)
class SweepResult:
    enqueued: int  # pending events whose directory's drain was asked for (or is already running)
    worker_lost: int


def events_sweep(*, pending_age: timedelta = SWEEP_PENDING_AGE, limit: int = 5000) -> SweepResult:
    """Ask for a drain of every directory with events committed but never attempted, and fail those
    whose worker died.

    Safe to run often and concurrently: a drain asked for twice is harmless because each event is
    claimed once.
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
    # One drain per (directory, target), oldest first: a drain takes all of its key's pending events.
    keys = list(
        WebhookEvent.objects.filter(state=EventState.PENDING, created_at__lte=now - pending_age)
        .values_list("directory_id", "target")
        .annotate(events=Count("id"))
        .order_by("directory_id", "target")[:limit]
    )
    lost += _endpoint_deliveries_worker_lost(now)
    # Webhook endpoints (contract §5.2): events the worker has not matched yet, and endpoint deliveries
    # waiting, are sent by their directory's drain.
    # None of it while no endpoint was ever enabled (fanout.enabled_since()).
    since = fanout.enabled_since()
    waiting: set[uuid.UUID] = set()
    if since is not None:
        waiting = set(
            WebhookEvent.objects.filter(fanned_out=False, created_at__gte=since, created_at__lte=now - pending_age)
            .values_list("directory_id", flat=True)
            .order_by()
            .distinct()[:limit]
        ) | set(
            EndpointDelivery.objects.filter(state=EventState.PENDING, created_at__lte=now - pending_age)
            .values_list("directory_id", flat=True)
            .order_by()
            .distinct()[:limit]
        )
    waiting -= {directory_id for directory_id, target, _n in keys if target == "directory"}
    keys += [(directory_id, "directory", 0) for directory_id in sorted(waiting)]
    handed = draining.kick_many([(directory_id, target) for directory_id, target, _n in keys]) if keys else 0
    enqueued = sum(n for _d, _t, n in keys[:handed])
    metrics.deliveries_closed(outcome="worker_lost", reason="WorkerLost", count=lost)
    # Durable, for `manage.py doctor` and /metrics on any node: beat (or cron) is alive.
    heartbeat_record(name=SWEEP, detail=f"{enqueued} pending handed to a drain, {lost} worker lost")
    if keys or lost:
        logger.info(
            "webhook sweep: %d pending event(s) of %d of %d directories handed to a drain, %d marked worker lost",
            enqueued,
            handed,
            len(keys),
            lost,
        )
    return SweepResult(enqueued=enqueued, worker_lost=lost)


def _event_worker_lost(event_id: uuid.UUID) -> int:
    """`sending` -> `failed` ("worker lost"): the attempt's outcome is unknown, and it is not retried
    because the receiver may well have got it (contract §5: a failed delivery is never retried). The row
    stays, in the changes feed, counting the attempt made at its claim."""
    reason = "worker lost: the attempt was interrupted and its outcome is unknown"
    with transaction.atomic():
        # Conditional update, so a sweep racing a slow-but-alive worker's finish changes nothing twice.
        if not WebhookEvent.objects.filter(
            pk=event_id, state=EventState.SENDING, claimed_at__lt=timezone.now() - sending_stale_after()
        ).update(
            state=EventState.FAILED,
            state_reason=reason,
            finished_at=timezone.now(),
            attempts=F("attempts") + 1,
            last_attempt_at=F("claimed_at"),
            status_code=None,
            resend=False,
        ):
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
                sequence=event.sequence,
                attempted_at=event.claimed_at,
                finished_at=timezone.now(),
            )
    return 1


# Called with a directory's id before its expired events are deleted: history (contract §5.3) folds them
# first, so what they said outlives them. Set once at start-up by history.apps (history sits above this app).
_before_feed_purge: list[Callable[[uuid.UUID], object]] = []


def before_feed_purge_set(hook: Callable[[uuid.UUID], object]) -> None:
    if hook not in _before_feed_purge:
        _before_feed_purge.append(hook)


def _endpoint_deliveries_worker_lost(now: datetime) -> int:
    """Endpoint deliveries left `sending` by a killed worker: `failed` ("worker lost"), never retried."""
    return EndpointDelivery.objects.filter(state=EventState.SENDING, claimed_at__lt=now - sending_stale_after()).update(
        state=EventState.FAILED,
        state_reason="worker lost: the attempt was interrupted and its outcome is unknown",
        error_class="WorkerLost",
        finished_at=now,
        attempts=F("attempts") + 1,
        attempted_at=F("claimed_at"),
        resend=False,
    )


@dataclass(frozen=True)
class PurgeResult:
    deliveries: int
    events: int


def deliveries_purge(*, now: datetime | None = None) -> PurgeResult:
    """Delete delivery-log entries older than WEBHOOK_LOG_RETENTION_DAYS and any left by a directory that
    has since switched logging off; finished events without a sequence (dsync.* events) past the same
    age; and the changes feed's events older than EVENT_RETENTION_DAYS (`feed_purge`)."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.WEBHOOK_LOG_RETENTION_DAYS)
    deliveries, _ = WebhookDelivery.objects.filter(created_at__lt=cutoff).delete()
    off, _ = WebhookDelivery.objects.filter(directory__log_webhook_events=False).delete()
    events, _ = WebhookEvent.objects.filter(sequence__isnull=True, state__in=FINISHED, finished_at__lt=cutoff).delete()
    events += feed_purge(before=now - timedelta(days=settings.EVENT_RETENTION_DAYS))
    # Endpoint deliveries live as long as the feed's events (their outcomes are the feed's `deliveries`),
    # and a deleted endpoint goes once its last delivery has.
    horizon = now - timedelta(days=max(settings.EVENT_RETENTION_DAYS, settings.WEBHOOK_LOG_RETENTION_DAYS))
    EndpointDelivery.objects.filter(event_created_at__lt=horizon, state__in=FINISHED).delete()
    WebhookEndpoint.objects.filter(deleted_at__lt=horizon, deliveries__isnull=True).delete()
    return PurgeResult(deliveries=deliveries + off, events=events)


def feed_purge(*, before: datetime) -> int:
    """Delete the changes feed's events created before `before` whose attempt is over (delivered,
    failed or dropped), whatever log_webhook_events says; returns how many.

    Only a prefix of each directory's numbers is ever deleted: an event stays while an event numbered
    before it stays (one still pending or sending, or one created at or after `before`, which happens
    when transactions commit in another order than they started). The feed's reader relies on it
    (webhooks.feed): a hole below the oldest kept number is "expired", a hole above it "not visible
    yet". The directories' EventSequence rows stay, so numbers are never given twice.
    """
    directory_ids = (
        # Over the (state, created_at) index: the directories with a finished event past the horizon.
        WebhookEvent.objects.filter(state__in=FINISHED, created_at__lt=before, sequence__isnull=False)
        .values_list("directory_id", flat=True)
        .order_by()
        .distinct()
    )
    deleted = 0
    for directory_id in list(directory_ids):
        numbered = WebhookEvent.objects.filter(directory_id=directory_id, sequence__isnull=False)
        kept_from = (
            numbered.filter(Q(created_at__gte=before) | ~Q(state__in=FINISHED))
            .order_by("sequence")
            .values_list("sequence", flat=True)
            .first()
        )
        expired = numbered.filter(created_at__lt=before, state__in=FINISHED)
        if kept_from is not None:
            expired = expired.filter(sequence__lt=kept_from)
        for hook in _before_feed_purge:
            hook(directory_id)
        count, _ = expired.delete()
        deleted += count
    return deleted


def directory_events_delete(*, directory_id: uuid.UUID) -> None:
    """Forget a directory's events for its own webhook, as the directory is deleted (its dsync.* events
    for the global receiver stay: dsync.deleted is one of them). Its sequence counter row stays (a few
    bytes): deleting it here, under the directory's row lock, could close a lock cycle with a write that
    holds the counter and waits for that lock at commit (docs/events.md)."""
    WebhookEvent.objects.filter(directory_id=directory_id, target="directory").delete()
