"""Reads on the webhook delivery log, always scoped by directory (selectors do every read, docs/architecture.md)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Min, QuerySet
from django.db.models.functions import Coalesce

from core.rows import RowReader
from directories.models import Directory
from webhooks.models import (
    EndpointDelivery,
    EventSequence,
    EventState,
    Heartbeat,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)


def delivery_list(*, directory: Directory, failed: bool | None = None) -> QuerySet[WebhookDelivery]:
    """The directory's delivery attempts, newest first; `failed=True` keeps only failed ones."""
    qs = WebhookDelivery.objects.filter(directory=directory)
    if failed is not None:
        qs = qs.filter(delivered=not failed)
    return qs.order_by("-created_at", "-id")


def delivery_get(*, directory: Directory, delivery_id: Any) -> WebhookDelivery | None:
    """One attempt of this directory; None for an unknown id, a malformed one, or another directory's."""
    try:
        pk = uuid.UUID(str(delivery_id))
    except (ValueError, TypeError, AttributeError):
        return None
    return WebhookDelivery.objects.filter(directory=directory, pk=pk).first()


def event_sequence_last(*, directory: Directory) -> int:
    """The last sequence number given to the directory's events (0 before the first one)."""
    return EventSequence.objects.filter(directory_id=directory.id).values_list("last", flat=True).first() or 0


@dataclass(frozen=True, slots=True)
class WebhookTarget:
    """What a delivery needs to know about a directory, read once per batch."""

    deactivated: bool
    url: str
    secret: str
    log: bool
    format: str = "roster"


# The columns a delivery reads, through the fixed-SQL row reader: the drain runs this for every batch.
_targets = RowReader(
    Directory, fields=("id", "deactivated", "webhook_url", "webhook_secret", "log_webhook_events", "webhook_format")
)


def webhook_target_get(*, directory_id: uuid.UUID) -> WebhookTarget | None:
    """The directory's webhook settings now, or None when it no longer exists (the secret decrypted as
    the ORM would)."""
    directory = _targets.first(_targets.sql('{table}."id" = %s'), [_targets.param("id", directory_id)])
    if directory is None:
        return None
    return WebhookTarget(
        bool(directory.deactivated),
        directory.webhook_url or "",
        directory.webhook_secret or "",
        bool(directory.log_webhook_events),
        directory.webhook_format or "roster",
    )


# --- operations: what /metrics and manage.py doctor read (service-wide, not one directory's) -----------------


@dataclass(frozen=True, slots=True)
class OutboxBacklog:
    pending: int  # committed, not yet attempted
    sending: int  # claimed by a drain, attempt under way (or its worker died)
    # When the longest-waiting pending event started waiting (recorded, or resent: pending_since), None
    # when none is pending.
    oldest_pending_at: Any


def outbox_backlog() -> OutboxBacklog:
    """Every directory's outbox at once, in one grouped query over the (state, created_at) index (the
    rows in these two states are the backlog, few while the drains keep up)."""
    counts = {
        row["state"]: row
        for row in WebhookEvent.objects.filter(state__in=[EventState.PENDING, EventState.SENDING])
        .values("state")
        .annotate(n=Count("id"), oldest=Min(Coalesce("pending_since", "created_at")))
        .order_by()
    }
    pending = counts.get(EventState.PENDING) or {}
    return OutboxBacklog(
        pending=pending.get("n", 0),
        sending=(counts.get(EventState.SENDING) or {}).get("n", 0),
        oldest_pending_at=pending.get("oldest"),
    )


def sending_count(*, claimed_before: Any) -> int:
    """Events still `sending` that were claimed before this moment (with webhooks.services'
    sending_stale_after(): attempts whose worker died, not reported yet)."""
    return WebhookEvent.objects.filter(state=EventState.SENDING, claimed_at__lt=claimed_before).count()


def heartbeat_get(*, name: str) -> Heartbeat | None:
    return Heartbeat.objects.filter(name=name).first()


# --- webhook endpoints (contract §5.2) -------------------------------------------------------------------


def endpoint_list(
    *,
    tenant: str | None = None,
    product: str | None = None,
    directory_id: uuid.UUID | None = None,
    enabled: bool | None = None,
) -> QuerySet[WebhookEndpoint]:
    """The endpoints not deleted, oldest first; each filter keeps those whose own filter equals it."""
    qs = WebhookEndpoint.objects.filter(deleted_at__isnull=True)
    if tenant is not None:
        qs = qs.filter(tenant=tenant)
    if product is not None:
        qs = qs.filter(product=product)
    if directory_id is not None:
        qs = qs.filter(directory_id=directory_id)
    if enabled is not None:
        qs = qs.filter(enabled=enabled)
    return qs.order_by("created_at", "id")


def endpoint_get(*, endpoint_id: Any) -> WebhookEndpoint | None:
    """One endpoint not deleted; None for an unknown or malformed id."""
    try:
        pk = uuid.UUID(str(endpoint_id))
    except (ValueError, TypeError, AttributeError):
        return None
    return WebhookEndpoint.objects.filter(pk=pk, deleted_at__isnull=True).first()


def endpoint_deliveries(*, endpoint: WebhookEndpoint, failed: bool | None = None) -> QuerySet[EndpointDelivery]:
    """The endpoint's deliveries, oldest first (stable offset paging); `failed=True`: failed or dropped."""
    qs = EndpointDelivery.objects.filter(endpoint=endpoint)
    if failed is True:
        qs = qs.filter(state__in=[EventState.FAILED, EventState.DROPPED])
    elif failed is False:
        qs = qs.exclude(state__in=[EventState.FAILED, EventState.DROPPED])
    return qs.order_by("created_at", "id")


def events_deliveries(*, event_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[EndpointDelivery]]:
    """The endpoint deliveries of these events, by event (for the changes feed's `deliveries`)."""
    out: dict[uuid.UUID, list[EndpointDelivery]] = {}
    for delivery in EndpointDelivery.objects.filter(event_id__in=event_ids).order_by("created_at", "id"):
        out.setdefault(delivery.event_id, []).append(delivery)
    return out
