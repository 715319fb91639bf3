"""The JSON shapes of a delivery-log entry (shared by the REST API, the admin API and the portal) and of an
item of a directory's changes feed (contract §5.1)."""

from __future__ import annotations

from typing import Any

import orjson

from core.timefmt import iso_utc_or_none as _iso
from directories.rendering import events_data
from webhooks.feed import FeedHead
from webhooks.models import EndpointDelivery, WebhookDelivery, WebhookEndpoint, WebhookEvent


def _payload(body: str) -> Any:
    # The log keeps the exact bytes that were sent; show them as JSON when they are JSON (always, for
    # events Roster wrote), and as the raw string otherwise rather than failing the whole listing.
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return body


def delivery_data(delivery: WebhookDelivery) -> dict[str, Any]:
    return {
        "id": str(delivery.id),
        "event_id": str(delivery.event_id),
        "event": delivery.event_type,
        "directory_id": str(delivery.directory_id),
        "endpoint": delivery.endpoint,
        "delivered": delivery.delivered,
        "status": "delivered" if delivery.delivered else "failed",
        "status_code": delivery.status_code,
        "latency_ms": delivery.latency_ms,
        "error": ({"class": delivery.error_class, "message": delivery.error_message} if delivery.error_class else None),
        "response_excerpt": delivery.response_excerpt,
        "payload": _payload(delivery.payload),
        "created_at": _iso(delivery.created_at),
        "attempted_at": _iso(delivery.attempted_at),
        "finished_at": _iso(delivery.finished_at),
    }


def change_data(event: WebhookEvent, deliveries: list[EndpointDelivery] | None = None) -> dict[str, Any]:
    """A feed item: the exact payload the webhook sends (same id, event, created_at, sequence and data,
    read back from the stored body) with `delivery`, the outcome of its attempts so far, and `deliveries`,
    one per webhook endpoint it went to (contract §5.2)."""
    item = orjson.loads(event.body)  # always a JSON object: Roster wrote it (webhooks.services.recording)
    item["delivery"] = {
        "status": event.state,
        "attempts": event.attempts,
        "last_attempt_at": _iso(event.last_attempt_at),
        "status_code": event.status_code,
    }
    item["deliveries"] = [feed_deliveries_data(d) for d in deliveries or ()]
    return item


def feed_head_data(head: FeedHead) -> dict[str, Any]:
    """`events` of a feed read: the Directory's `events` as of the read."""
    return events_data(head.last_sequence, head.oldest_sequence)


# --- webhook endpoints (contract §5.2) -------------------------------------------------------------------


def endpoint_data(endpoint: WebhookEndpoint, *, secret: str | None = None) -> dict[str, Any]:
    """The endpoint resource; `secret` only in the answer that creates or rotates it (shown once)."""
    data: dict[str, Any] = {
        "id": str(endpoint.id),
        "url": endpoint.url,
        "description": endpoint.description,
        "events": list(endpoint.events),
        "tenant": endpoint.tenant,
        "product": endpoint.product,
        "directory_id": str(endpoint.directory_id) if endpoint.directory_id else None,
        "format": endpoint.format,
        "enabled": endpoint.enabled,
        "previous_secret_expires_at": _iso(endpoint.previous_secret_expires_at) if endpoint.previous_secret else None,
        "created_at": _iso(endpoint.created_at),
        "updated_at": _iso(endpoint.updated_at),
    }
    if secret is not None:
        data["secret"] = secret
    return data


def endpoint_delivery_data(delivery: EndpointDelivery) -> dict[str, Any]:
    """One event's delivery to one endpoint, as the endpoint's delivery log shows it."""
    return {
        "id": str(delivery.id),
        "endpoint_id": str(delivery.endpoint_id),
        "event_id": str(delivery.event_id),
        "event": delivery.event_type,
        "directory_id": str(delivery.directory_id),
        "sequence": delivery.sequence,
        "url": delivery.url,
        "status": delivery.state,
        "delivered": delivery.state == "delivered",
        "attempts": delivery.attempts,
        "status_code": delivery.status_code,
        "latency_ms": delivery.latency_ms,
        "error": _endpoint_error(delivery),
        "response_excerpt": delivery.response_excerpt,
        "resend": delivery.resend,
        "created_at": _iso(delivery.created_at),
        "attempted_at": _iso(delivery.attempted_at),
        "finished_at": _iso(delivery.finished_at),
    }


def feed_deliveries_data(delivery: EndpointDelivery) -> dict[str, Any]:
    """A feed item's entry in `deliveries` (contract §5.2)."""
    return {
        "endpoint_id": str(delivery.endpoint_id),
        "status": delivery.state,
        "status_code": delivery.status_code,
        "attempted_at": _iso(delivery.attempted_at),
    }


def _endpoint_error(delivery: EndpointDelivery) -> dict[str, str] | None:
    if delivery.state == "failed":
        return {"class": delivery.error_class, "message": delivery.error_message or delivery.state_reason}
    if delivery.state == "dropped":
        return {"class": "Dropped", "message": f"not sent: {delivery.state_reason}"}
    return None
