"""Delivering outbox events: claim a batch of one directory's events, make each one's single attempt in
order, record the outcomes in as few statements as possible (contract §5).

Guarantees, in terms of `WebhookEvent.state`:
- `pending` -> `sending` is the claim: one conditional UPDATE, exclusive per row (PostgreSQL: the
  batch's rows are picked `FOR UPDATE SKIP LOCKED` and re-checked; SQLite: the statement runs under the
  database write lock and re-checks `state`). Only the claimer sends, so an event handed to several
  drains is still attempted at most once.
- Each attempt ends `delivered` or `failed` and is never retried. Claimed events that were not
  attempted (an exception, a time limit, the worker shutting down, the batch's time was up) go back to
  `pending` in a `finally`, so they are sent later, not reported lost. Only a killed process leaves
  `sending` rows behind; the sweep turns them into `failed` ("worker lost") after
  `sending_stale_after()`. The event whose attempt was under way when an exception arrived stays
  `sending` too: the receiver may have got it.
- A lost database connection does not turn an outcome into "worker lost": recording the outcomes and
  putting events back are run again on a new connection for up to RECORD_RETRY seconds (they only touch
  rows still `sending`, so running them twice is harmless), well inside `sending_stale_after()`. If the
  database stays away longer, each event's real outcome is logged (one ERROR line per event) and its row
  stays `sending`. A claim or target read that fails on a lost connection is retried the same way; a
  claim whose answer was lost is undone first (its rows are found by their claim time), so a failing
  claim leaves no event `sending` that nobody will send.
- Directory events of a deactivated or deleted directory (or one whose webhook was removed) are
  `dropped` with the reason, not sent.
- Closed rows stay, with their outcome (attempts, last attempt time, status code): they are the
  directory's changes feed (contract §5.1) until the purge. Only an explicit resend
  (webhooks.services.resending) puts one back to `pending`, for exactly one more attempt; the attempt
  log marks it as a resend.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import metrics
from directories.models import Directory
from webhooks import transport
from webhooks.models import EventState, WebhookDelivery
from webhooks.selectors import webhook_target_get
from webhooks.services.outbox import (
    Claimed,
    Outcome,
    as_uuid,
    claim_batch,
    claim_one,
    close_sending,
    release,
    unclaim,
)
from webhooks.services.reconnect import RECORD_RETRY, ride_out
from webhooks.signing import signed_headers

logger = logging.getLogger("roster.webhooks")

T = TypeVar("T")

BATCH_SIZE = 25
# A claimed event waits in `sending` while the events before it in its batch are sent. Once a batch has
# been held this long, its remaining events go back to `pending` (and are claimed again at once, with a
# fresh claimed_at), so no event stays `sending` longer than CLAIM_HOLD + WEBHOOK_TIMEOUT plus two
# statements: well inside sending_stale_after(), so the sweep never takes a live batch for a lost one.
CLAIM_HOLD = 30.0


def sending_stale_after() -> timedelta:
    """A `sending` event older than this cannot have a live attempt behind it. From its claim, a batch
    starts its last attempt within CLAIM_HOLD (the target read, ridden out through a lost connection,
    counts in it), that attempt lasts at most WEBHOOK_TIMEOUT, and recording the outcomes rides out a
    lost connection for at most RECORD_RETRY; 30 s more cover the statements themselves and clocks."""
    return timedelta(seconds=CLAIM_HOLD + float(settings.WEBHOOK_TIMEOUT) + RECORD_RETRY + 30)


@dataclass(frozen=True, slots=True)
class _Target:
    url: str
    secret: str | None
    format: str  # "roster" or "standard" (contract §5.2)
    log_directory_id: uuid.UUID | None  # the directory whose delivery log records attempts, when it logs


@dataclass
class BatchResult:
    claimed: int = 0
    delivered: int = 0
    failed: int = 0
    dropped: int = 0
    released: int = 0  # claimed but not attempted: back to `pending`
    sending_seconds: float = 0.0  # time spent on the attempts
    endpoints: int = 0  # attempts to webhook endpoints (contract §5.2), made by the drain beside these

    @property
    def attempted(self) -> int:
        return self.delivered + self.failed

    def add(self, other: BatchResult) -> None:
        self.claimed += other.claimed
        self.delivered += other.delivered
        self.failed += other.failed
        self.dropped += other.dropped
        self.released += other.released
        self.sending_seconds += other.sending_seconds
        self.endpoints += other.endpoints


# --- delivering -----------------------------------------------------------------------------------


def events_batch_deliver(
    *,
    directory_id: uuid.UUID | str,
    target: str,
    limit: int | None = None,
    stop_at: float | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> BatchResult:
    """Claim up to `limit` pending events of one directory and target (oldest first) and make their
    attempts in that order. `claimed == 0` means there was nothing pending to claim.

    `stop_at` (time.monotonic()) ends the batch early: no attempt starts after it, except the first,
    so a drain past its budget still makes progress. `should_stop()` (a worker shutting down) ends it
    before the next attempt, the first included. The events not attempted go back to `pending`.
    """
    directory_id = as_uuid(directory_id)
    size = BATCH_SIZE if limit is None else limit
    events = _claim(
        lambda at: claim_batch(directory_id, target, size, at),
        lambda at: unclaim(at, directory_id=directory_id),
        "claiming webhook events",
    )
    if not events:
        return BatchResult()
    return _deliver_claimed(events, directory_id, target, stop_at, should_stop, time.monotonic())


def event_deliver(*, event_id: uuid.UUID | str) -> str | None:
    """Make the one delivery attempt of this outbox event now; returns its final state, or None when
    this call did not claim it (unknown id, or already claimed by another worker or an earlier run).
    For tasks queued before batched draining (`webhooks.deliver`), tests and operators."""
    try:
        event_id = uuid.UUID(str(event_id))
    except ValueError:
        return None
    event_uuid = event_id
    claimed = _claim(
        lambda at: claim_one(event_uuid, at),
        lambda at: unclaim(at, event_id=event_uuid),
        "claiming a webhook event",
    )
    if claimed is None:
        return None
    event, directory_id, target = claimed
    result = _deliver_claimed([event], directory_id, target, None, None, time.monotonic())
    if result.dropped:
        return EventState.DROPPED
    return EventState.DELIVERED if result.delivered else EventState.FAILED


def _claim(claim: Callable[[datetime], T], undo: Callable[[datetime], object], what: str) -> T:
    """`claim(claimed_at)`, riding out a lost connection. Each try marks the rows it claims with its own
    claim time; a try that failed may still have committed, so `undo(claimed_at)` puts its rows back
    before the next try, and no event is left `sending` by a claim nobody received."""
    at: list[datetime] = []

    def attempt() -> T:
        at.append(timezone.now())
        return claim(at[-1])

    return ride_out(attempt, what=what, deadline=time.monotonic() + RECORD_RETRY, undo=lambda: undo(at[-1]))


def _resolve_target(directory_id: uuid.UUID, target: str) -> _Target | str:
    """Where this directory's events go now, or the reason they must be dropped."""
    if target == "global":
        # dsync.* events go to the operator's receiver even when the directory is gone or deactivated:
        # they announce exactly that.
        if not settings.WEBHOOK_URL:
            return "WEBHOOK_URL is not set"
        return _Target(settings.WEBHOOK_URL, settings.WEBHOOK_SECRET or None, "roster", None)
    directory = webhook_target_get(directory_id=directory_id)
    if directory is None:
        return "directory deleted"
    if directory.deactivated:
        return "directory deactivated"
    if not directory.url:
        return "directory has no webhook endpoint"
    return _Target(directory.url, directory.secret or None, directory.format, directory_id if directory.log else None)


def _deliver_claimed(
    events: list[Claimed],
    directory_id: uuid.UUID,
    target: str,
    stop_at: float | None,
    should_stop: Callable[[], bool] | None,
    claimed: float,
) -> BatchResult:
    """Send claimed `events` (claimed at time.monotonic() `claimed`) and record their outcomes: their
    target (`_claimed_target`, or they are dropped), one attempt each in order (`_request`, then
    `_attempt_observed`), and what became of each (`_batch_record`)."""
    resolved = _claimed_target(events, directory_id, target, claimed)
    if isinstance(resolved, BatchResult):
        return resolved
    # Measured from the claim, so time spent riding out a lost connection above counts against it.
    stop = claimed + CLAIM_HOLD
    if stop_at is not None:
        stop = min(stop, stop_at)
    timeout = float(settings.WEBHOOK_TIMEOUT)
    if not resolved.secret:
        logger.warning("webhook events of directory %s sent unsigned: WEBHOOK_SECRET is not set", directory_id)
    outcomes: list[tuple[Claimed, transport.AttemptResult, Any]] = []
    in_attempt = False
    started = time.monotonic()
    try:
        for event in events:
            if (outcomes and time.monotonic() >= stop) or (should_stop is not None and should_stop()):
                break
            body, headers = _request(event, resolved)
            sent_at = timezone.now()
            in_attempt = True
            result = transport.post(resolved.url, body, headers, timeout)
            outcomes.append((event, result, sent_at))
            in_attempt = False
            _attempt_observed(event, result, sent_at)
    finally:
        # An exception (or a time limit) may land anywhere above: `_batch_record` records what was
        # attempted, puts back what was not, and leaves the event whose attempt was under way `sending`.
        unattempted = _batch_record(events, outcomes, in_attempt, resolved, target)
    delivered = sum(1 for _e, result, _a in outcomes if result.delivered)
    return BatchResult(
        claimed=len(events),
        delivered=delivered,
        failed=len(outcomes) - delivered,
        released=len(unattempted),
        sending_seconds=time.monotonic() - started,
    )


def _claimed_target(
    events: list[Claimed], directory_id: uuid.UUID, target: str, claimed: float
) -> _Target | BatchResult:
    """Where the claimed `events` go; or, when they have nowhere to go, their drop recorded and the batch's
    result. Nothing is sent yet: on an exception the events go back to `pending` rather than wait for the
    sweep as "lost"."""
    try:
        resolved = ride_out(
            lambda: _resolve_target(directory_id, target),
            what="reading a webhook target",
            deadline=claimed + RECORD_RETRY,
        )
        if isinstance(resolved, str):
            ride_out(
                lambda: _record_drops(events, directory_id, target, resolved),
                what="recording dropped webhook events",
                deadline=time.monotonic() + RECORD_RETRY,
            )
    except BaseException:
        _put_back(events, time.monotonic() + RECORD_RETRY)
        raise
    if isinstance(resolved, str):
        logger.info("%d webhook event(s) of directory %s dropped: %s", len(events), directory_id, resolved)
        metrics.deliveries_closed(outcome="dropped", reason=resolved, count=len(events))
        return BatchResult(claimed=len(events), dropped=len(events))
    return resolved


def _request(event: Claimed, resolved: _Target) -> tuple[bytes, dict[str, str]]:
    """The body and headers of one event's attempt."""
    body = event.body.encode()
    headers = {
        "Content-Type": "application/json",
        "Roster-Event": event.event_type,
        "Roster-Event-Id": str(event.id),
    }
    if event.sequence is not None:
        headers["Roster-Event-Sequence"] = str(event.sequence)
    if resolved.secret:
        # Signed now: a resend carries the same body with a fresh timestamp.
        headers.update(signed_headers(body, resolved.format, [resolved.secret], str(event.id)))
    return body, headers


def _attempt_observed(event: Claimed, result: transport.AttemptResult, sent_at: Any) -> None:
    """One attempt counted for /metrics and logged."""
    metrics.delivery_attempted(
        delivered=result.delivered,
        error_class=result.error_class,
        seconds=result.latency_ms / 1000,
        # A resend is not late: its created_at is the change's, long before it was asked for.
        lag=(sent_at - event.created_at).total_seconds() if event.created_at and not event.resend else None,
    )
    if result.delivered:
        logger.debug(
            "webhook event %s (%s) delivered: %s in %d ms",
            event.id,
            event.event_type,
            result.status_code,
            result.latency_ms,
        )
    else:
        # Never the URL's secret parts or the response body: the class and message are enough.
        logger.warning(
            "webhook event %s (%s) failed: %s %s",
            event.id,
            event.event_type,
            result.error_class,
            result.error_message,
        )


def _batch_record(
    events: list[Claimed],
    outcomes: list[tuple[Claimed, transport.AttemptResult, Any]],
    in_attempt: bool,
    resolved: _Target,
    target: str,
) -> list[Claimed]:
    """After a batch's attempts, however they ended: record what was attempted; put back what was not;
    leave the event whose attempt was under way (`in_attempt`) `sending`, for the sweep to report. The
    events put back."""
    unattempted = events[len(outcomes) + (1 if in_attempt else 0) :]
    deadline = time.monotonic() + RECORD_RETRY  # shared by both writes: see sending_stale_after()
    try:
        if outcomes:
            _record_outcomes(outcomes, resolved, target, deadline)
    finally:
        if unattempted:
            _put_back(unattempted, deadline)
    return unattempted


def _record_outcomes(
    outcomes: list[tuple[Claimed, transport.AttemptResult, Any]], resolved: _Target, target: str, deadline: float
) -> None:
    """`_finish`, riding out a lost connection until `deadline`. When the outcomes cannot be written,
    each event's real outcome goes to the log instead: its row stays `sending`, and the sweep will
    report it "worker lost", which for a delivered event is not what happened."""
    try:
        ride_out(lambda: _finish(outcomes, resolved, target), what="recording webhook outcomes", deadline=deadline)
    except BaseException as exc:
        for event, result, _at in outcomes:
            logger.error(  # noqa: TRY400 - one line per event, not one traceback per event
                "webhook event %s (%s) %s (%s) but its outcome could not be recorded (%s): it stays sending, "
                "and the sweep will report it as worker lost",
                event.id,
                event.event_type,
                "delivered" if result.delivered else "failed",
                result.status_code if result.status_code is not None else result.error_class,
                type(exc).__name__,
            )
        raise


def _put_back(events: list[Claimed], deadline: float) -> None:
    """`release`, riding out a lost connection until `deadline`; when it cannot, the events are logged
    (never attempted), as the sweep will later report them lost."""
    try:
        ride_out(lambda: release(events), what="putting webhook events back", deadline=deadline)
    except BaseException as exc:
        for event in events:
            logger.error(  # noqa: TRY400 - one line per event
                "webhook event %s (%s) was never sent, but could not be put back (%s): it stays sending, "
                "and the sweep will report it as worker lost",
                event.id,
                event.event_type,
                type(exc).__name__,
            )
        raise


def _finish(outcomes: list[tuple[Claimed, transport.AttemptResult, Any]], resolved: _Target, target: str) -> None:
    """Close the outbox rows of a batch with their outcomes: they stay, as the directory's changes feed
    (contract §5.1) or, for dsync.* events, until the purge. A logging directory also gets an entry per
    attempt in its delivery log. Only rows still `sending` are touched: never one the sweep already
    closed."""
    closing = [
        Outcome(
            id=event.id,
            state=EventState.DELIVERED if result.delivered else EventState.FAILED,
            reason="" if result.delivered else result.error_message,
            attempted_at=attempted_at,
            status_code=result.status_code,
        )
        for event, result, attempted_at in outcomes
    ]
    if resolved.log_directory_id is None:
        close_sending(closing)  # one statement, atomic by itself: no transaction round trips
        return
    with transaction.atomic():
        closed = set(close_sending(closing))
        # Read again after the attempts: logging switched off meanwhile means nothing may be kept.
        directory = webhook_target_get(directory_id=resolved.log_directory_id) if closed else None
        if directory is not None and directory.log:
            finished_at = timezone.now()
            WebhookDelivery.objects.bulk_create(
                [
                    WebhookDelivery(
                        directory_id=resolved.log_directory_id,
                        event_id=event.id,
                        event_type=event.event_type,
                        endpoint=resolved.url,
                        status_code=result.status_code,
                        latency_ms=result.latency_ms,
                        error_class=result.error_class,
                        error_message=result.error_message[:500],
                        response_excerpt=result.response_excerpt,
                        payload=event.body,
                        delivered=result.delivered,
                        sequence=event.sequence,
                        resend=event.resend,
                        attempted_at=attempted_at,
                        finished_at=finished_at,
                    )
                    for event, result, attempted_at in outcomes
                    if event.id in closed
                ]
            )


def _record_drops(events: list[Claimed], directory_id: uuid.UUID, target: str, reason: str) -> None:
    """Record why events were not sent: their rows stay `dropped` with the reason (and their body: the
    changes feed shows them), and a logging directory gets a `Dropped` entry per event in its log."""
    dropping = [
        Outcome(id=event.id, state=EventState.DROPPED, reason=reason, attempted_at=None, status_code=None)
        for event in events
    ]
    with transaction.atomic():
        closed = set(close_sending(dropping))
        directory = None
        if target == "directory" and closed:
            directory = Directory.objects.filter(pk=directory_id, log_webhook_events=True).first()
        if directory is not None:
            now = timezone.now()
            WebhookDelivery.objects.bulk_create(
                [
                    WebhookDelivery(
                        directory=directory,
                        event_id=event.id,
                        event_type=event.event_type,
                        endpoint=directory.webhook_url,
                        error_class="Dropped",
                        error_message=f"not sent: {reason}",
                        payload=event.body,
                        delivered=False,
                        sequence=event.sequence,
                        resend=event.resend,
                        attempted_at=now,
                        finished_at=now,
                    )
                    for event in events
                    if event.id in closed
                ]
            )
