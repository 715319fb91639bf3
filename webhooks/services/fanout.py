"""Webhook endpoints in the worker (contract §5.2): matching a directory's recorded events against the
endpoints (the fan-out), and each resulting delivery's single attempt.

- The fan-out runs in a drain, never in the request that records the events. In one transaction it
  takes the directory's events not matched yet (`WebhookEvent.fanned_out` false; PostgreSQL: `FOR UPDATE
  SKIP LOCKED`, so two drains never match the same event), matches each against the endpoint revisions
  in force when the event was recorded, creates one `EndpointDelivery` per match and marks the events
  matched. Matching and its deliveries commit together: an event is matched exactly once.
- A delivery is claimed like an outbox event (`pending` -> `sending`, exclusive per row), attempted once,
  and closed `delivered`, `failed` or `dropped` (its endpoint was deleted, its event purged). Claimed
  deliveries not attempted go back to `pending`. A delivery left `sending` by a killed worker is failed
  by the sweep ("worker lost"). Nothing is retried unless a resend asks for it.
- The URL is the endpoint's as of the event; the secret and format are read when the delivery is signed,
  so a rotation applies at once.
- Until an endpoint is first enabled, a drain does none of this (`enabled_since()` is None: one small
  read per batch, then none once an endpoint exists). Events recorded before that moment can match no
  revision, so they are never looked at; they stay unmatched until the retention purge removes them.
  Kept for speed: bench/README.md, 'Code kept for speed', "Fan-out after the first endpoint".
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from core import metrics
from core.rows import RowReader
from core.timefmt import iso_utc
from directories.models import Directory
from webhooks import transport
from webhooks.models import EndpointDelivery, EventState, WebhookEndpoint, WebhookEndpointRevision, WebhookEvent
from webhooks.signing import signed_headers

logger = logging.getLogger("roster.webhooks")

FANOUT_BATCH = 200
DELIVERY_BATCH = 25


def endpoint_secrets(endpoint: WebhookEndpoint, now: datetime | None = None) -> list[str]:
    """The secrets a delivery is signed with now: the current one, then the previous one in its grace."""
    now = now or timezone.now()
    out = [endpoint.secret]
    if endpoint.previous_secret and endpoint.previous_secret_expires_at and endpoint.previous_secret_expires_at > now:
        out.append(endpoint.previous_secret)
    return out


def revision_matches(revision: Any, event_type: str, directory_id: uuid.UUID, tenant: Any, product: Any) -> bool:
    """Whether an endpoint (a revision, or the endpoint itself) takes this event of this directory."""
    if "*" not in revision.events and event_type not in revision.events:
        return False
    return filters_match(revision, directory_id, tenant, product)


def filters_match(revision: Any, directory_id: uuid.UUID, tenant: Any, product: Any) -> bool:
    """Whether an enabled endpoint (a revision, or the endpoint itself) takes events of this directory."""
    if not revision.enabled:
        return False
    if revision.directory_id is not None and revision.directory_id != directory_id:
        return False
    if revision.tenant is not None and revision.tenant != tenant:
        return False
    return revision.product is None or revision.product == product


# --- the fan-out -----------------------------------------------------------------------------------------

_enabled_since: datetime | None = None
# Until an endpoint is first enabled, every drain batch asks again; through the ORM the aggregate cost
# 166 µs of CPU against 27 µs for this fixed read of the earliest one (`bench.fanout`; kept for speed:
# bench/README.md, "Code kept for speed", "Fixed SQL for hot lookups").
_first_enabled = RowReader(WebhookEndpointRevision, fields=("id", "valid_from"))


def enabled_since() -> datetime | None:
    """When the first enabled endpoint revision took effect; None while no endpoint has ever been enabled.

    Revisions are kept (an endpoint's deletion only closes its last one), so once this is known it never
    moves later and the process keeps it. No event recorded before it can match an endpoint. A revision
    not yet committed is not seen: the events recorded meanwhile stay unmatched and are matched by the
    first batch that sees it."""
    global _enabled_since
    if _enabled_since is None:
        sql = _first_enabled.sql('{table}."enabled"', suffix=' ORDER BY {table}."valid_from" LIMIT 1')
        first = _first_enabled.first(sql, [])
        _enabled_since = first.valid_from if first is not None else None
    return _enabled_since


def enabled_since_forget() -> None:
    """Forget what enabled_since() learnt (tests, which empty the tables between them)."""
    global _enabled_since
    _enabled_since = None


def fanout(*, directory_id: uuid.UUID | str, since: datetime | None = None, limit: int = FANOUT_BATCH) -> int:
    """Match up to `limit` of the directory's unmatched events recorded at or after `since` (default:
    enabled_since()), oldest first, and create their endpoint deliveries; returns how many events were
    matched (0: none was waiting, or no endpoint was ever enabled). One transaction."""
    since = since or enabled_since()
    if since is None:
        return 0
    directory_id = uuid.UUID(str(directory_id))
    with transaction.atomic():
        pending = WebhookEvent.objects.filter(
            directory_id=directory_id, fanned_out=False, created_at__gte=since
        ).order_by("created_at", "id")
        if connection.vendor == "postgresql":
            pending = pending.select_for_update(skip_locked=True)
        events = list(pending.only("id", "event_type", "body", "created_at", "sequence", "directory_id")[:limit])
        if not events:
            return 0
        first, last = events[0].created_at, events[-1].created_at
        revisions = list(
            WebhookEndpointRevision.objects.filter(valid_from__lte=last, enabled=True).filter(
                Q(valid_until__isnull=True) | Q(valid_until__gt=first)
            )
        )
        rows: list[EndpointDelivery] = []
        if revisions:
            for event in events:
                body = orjson.loads(event.body)
                for revision in revisions:
                    in_force = revision.valid_from <= event.created_at and (
                        revision.valid_until is None or revision.valid_until > event.created_at
                    )
                    if in_force and revision_matches(
                        revision, event.event_type, directory_id, body.get("tenant"), body.get("product")
                    ):
                        rows.append(
                            EndpointDelivery(
                                endpoint_id=revision.endpoint_id,
                                event_id=event.id,
                                directory_id=directory_id,
                                event_type=event.event_type,
                                sequence=event.sequence,
                                url=revision.url,
                                event_created_at=event.created_at,
                            )
                        )
            EndpointDelivery.objects.bulk_create(rows, ignore_conflicts=True)
        WebhookEvent.objects.filter(id__in=[event.id for event in events]).update(fanned_out=True)
    return len(events)


# --- the deliveries --------------------------------------------------------------------------------------


@dataclass
class EndpointBatch:
    claimed: int = 0
    delivered: int = 0
    failed: int = 0
    dropped: int = 0
    released: int = 0
    sending_seconds: float = 0.0


def _claim(directory_id: uuid.UUID, limit: int) -> list[EndpointDelivery]:
    now = timezone.now()
    with transaction.atomic():
        waiting = EndpointDelivery.objects.filter(directory_id=directory_id, state=EventState.PENDING).order_by(
            "event_created_at", "id"
        )
        if connection.vendor == "postgresql":
            waiting = waiting.select_for_update(skip_locked=True)
        ids = list(waiting.values_list("id", flat=True)[:limit])
        if not ids:
            return []
        # Re-checked in the UPDATE: on SQLite the statement runs under the write lock.
        EndpointDelivery.objects.filter(id__in=ids, state=EventState.PENDING).update(
            state=EventState.SENDING, claimed_at=now
        )
        return list(
            EndpointDelivery.objects.filter(id__in=ids, state=EventState.SENDING, claimed_at=now).order_by(
                "event_created_at", "id"
            )
        )


def attempt_headers(
    body: bytes, endpoint: WebhookEndpoint, event_id: str, event_type: str, sequence: int | None
) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Roster-Event": event_type, "Roster-Event-Id": event_id}
    if sequence is not None:
        headers["Roster-Event-Sequence"] = str(sequence)
    headers.update(signed_headers(body, endpoint.format, endpoint_secrets(endpoint), event_id))
    return headers


def endpoint_deliveries_send(
    *, directory_id: uuid.UUID | str, limit: int = DELIVERY_BATCH, stop_at: float | None = None
) -> EndpointBatch:
    """Claim up to `limit` of the directory's pending endpoint deliveries (oldest event first) and make
    their single attempts; `claimed == 0`: nothing was waiting."""
    directory_id = uuid.UUID(str(directory_id))
    claimed = _claim(directory_id, limit)
    result = EndpointBatch(claimed=len(claimed))
    if not claimed:
        return result
    endpoints = {e.id: e for e in WebhookEndpoint.objects.filter(id__in={d.endpoint_id for d in claimed})}
    bodies = dict(WebhookEvent.objects.filter(id__in={d.event_id for d in claimed}).values_list("id", "body"))
    # One read per batch: whether the directory keeps its attempt log (a deleted one keeps none).
    log = Directory.objects.filter(pk=directory_id, log_webhook_events=True).exists()
    timeout = float(settings.WEBHOOK_TIMEOUT)
    done: list[EndpointDelivery] = []
    started = time.monotonic()
    try:
        for delivery in claimed:
            if done and stop_at is not None and time.monotonic() >= stop_at:
                break
            endpoint = endpoints.get(delivery.endpoint_id)
            body = bodies.get(delivery.event_id)
            now = timezone.now()
            if endpoint is None or endpoint.deleted_at is not None or body is None:
                delivery.state = EventState.DROPPED
                delivery.state_reason = "endpoint deleted" if body is not None else "event purged"
                delivery.finished_at = now
                result.dropped += 1
                done.append(delivery)
                continue
            raw = body.encode()
            headers = attempt_headers(raw, endpoint, str(delivery.event_id), delivery.event_type, delivery.sequence)
            outcome = transport.post(delivery.url, raw, headers, timeout)
            _close(delivery, outcome, now, log)
            metrics.delivery_attempted(
                delivered=outcome.delivered,
                error_class=outcome.error_class,
                seconds=outcome.latency_ms / 1000,
                lag=None,
            )
            if outcome.delivered:
                result.delivered += 1
            else:
                result.failed += 1
                logger.warning(
                    "webhook event %s (%s) to endpoint %s failed: %s %s",
                    delivery.event_id,
                    delivery.event_type,
                    delivery.endpoint_id,
                    outcome.error_class,
                    outcome.error_message,
                )
            done.append(delivery)
    finally:
        unattempted = claimed[len(done) :]
        if done:
            _record(done)
        if unattempted:
            EndpointDelivery.objects.filter(id__in=[d.id for d in unattempted], state=EventState.SENDING).update(
                state=EventState.PENDING, claimed_at=None
            )
        result.released = len(unattempted)
    result.sending_seconds = time.monotonic() - started
    return result


_CLOSED_FIELDS = (
    "state",
    "state_reason",
    "attempts",
    "attempted_at",
    "finished_at",
    "status_code",
    "latency_ms",
    "error_class",
    "error_message",
    "response_excerpt",
    "resend",
)


def _record(done: list[EndpointDelivery]) -> None:
    """Close the attempted deliveries, each by its own UPDATE in one transaction (Django's bulk_update
    builds a CASE per field, which cost most of the drain's CPU), touching only rows still `sending`: never
    one the sweep already closed."""
    with transaction.atomic():
        for delivery in done:
            EndpointDelivery.objects.filter(pk=delivery.pk, state=EventState.SENDING).update(
                **{field: getattr(delivery, field) for field in _CLOSED_FIELDS}
            )


def _close(delivery: EndpointDelivery, outcome: transport.AttemptResult, attempted_at: datetime, log: bool) -> None:
    delivery.state = EventState.DELIVERED if outcome.delivered else EventState.FAILED
    delivery.state_reason = "" if outcome.delivered else outcome.error_message[:255]
    delivery.attempts += 1
    delivery.attempted_at = attempted_at
    delivery.finished_at = timezone.now()
    delivery.status_code = outcome.status_code
    delivery.latency_ms = outcome.latency_ms
    delivery.error_class = outcome.error_class
    delivery.error_message = outcome.error_message[:500]
    delivery.response_excerpt = outcome.response_excerpt if log else ""
    delivery.resend = False


# --- the test event --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TestOutcome:
    delivered: bool
    status_code: int | None
    latency_ms: int
    error: str | None


def endpoint_test_send(*, endpoint: WebhookEndpoint) -> TestOutcome:
    """Send one `webhook.test` event to the endpoint now (contract §5.2) and return the attempt's outcome.
    Recorded nowhere but the answer: it is no directory's event."""
    event_id = str(uuid.uuid4())
    payload = {
        "id": event_id,
        "event": "webhook.test",
        "created_at": iso_utc(timezone.now()),
        "data": {"endpoint_id": str(endpoint.id)},
    }
    body = orjson.dumps(payload)
    headers = attempt_headers(body, endpoint, event_id, "webhook.test", None)
    outcome = transport.post(endpoint.url, body, headers, float(settings.WEBHOOK_TIMEOUT))
    error = None
    if not outcome.delivered:
        error = f"{outcome.error_class}: {outcome.error_message}".strip(": ") or "not delivered"
    return TestOutcome(outcome.delivered, outcome.status_code, outcome.latency_ms, error)
