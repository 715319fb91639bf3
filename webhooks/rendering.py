"""The JSON shape of a delivery-log entry, shared by the REST API, the admin API and the portal."""

from __future__ import annotations

from typing import Any

import orjson

from core.timefmt import iso_utc_or_none as _iso
from webhooks.models import WebhookDelivery


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
