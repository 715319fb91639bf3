"""`roster.webhook_endpoints`: destinations beside each directory's own webhook (Roster's contract §5.2),
each with its events, its tenant/product/directory filters and its signature format."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from roster_client._generated.models import EndpointDelivery, EndpointTest, NewWebhookEndpoint, WebhookEndpoint
from roster_client._http import Namespace, segment
from roster_client.paging import Paged, paged

BASE = "/api/v1/webhook-endpoints"


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()  # "leave as it is", where None means "any" (the filters)


class WebhookEndpoints(Namespace):
    def create(
        self,
        *,
        url: str,
        events: Sequence[str] = ("*",),
        description: Optional[str] = None,
        tenant: Optional[str] = None,
        product: Optional[str] = None,
        directory_id: Optional[str] = None,
        format: Optional[str] = None,  # noqa: A002 - the field's name in Roster's API
        enabled: Optional[bool] = None,
        secret: Optional[str] = None,
    ) -> NewWebhookEndpoint:
        """A new endpoint; its `secret` (given, or generated as `whsec_…`) is in this answer only. `format`:
        "roster" (default) or "standard" (Standard Webhooks). Filters left None match any directory."""
        fields = {
            "url": url,
            "events": list(events),
            "description": description,
            "tenant": tenant,
            "product": product,
            "directory_id": directory_id,
            "format": format,
            "enabled": enabled,
            "secret": secret,
        }
        body = {key: value for key, value in fields.items() if value is not None}
        return NewWebhookEndpoint.from_dict(self._t.call("POST", BASE, body=body).body["data"])

    def list(
        self,
        *,
        tenant: Optional[str] = None,
        product: Optional[str] = None,
        directory_id: Optional[str] = None,
        enabled: Optional[bool] = None,
        page_limit: int = 100,
    ) -> Paged[WebhookEndpoint]:
        """Every endpoint, oldest first; a filter keeps the endpoints whose own filter equals it."""
        params = {"tenant": tenant, "product": product, "directory_id": directory_id, "enabled": enabled}
        return paged(self._t, BASE, WebhookEndpoint, params, page_limit)

    def get(self, endpoint_id: str) -> WebhookEndpoint:
        return WebhookEndpoint.from_dict(self._t.call("GET", f"{BASE}/{segment(endpoint_id)}").body["data"])

    def update(
        self,
        endpoint_id: str,
        *,
        url: Any = UNSET,
        events: Any = UNSET,
        description: Any = UNSET,
        tenant: Any = UNSET,
        product: Any = UNSET,
        directory_id: Any = UNSET,
        format: Any = UNSET,  # noqa: A002
        enabled: Any = UNSET,
    ) -> WebhookEndpoint:
        """Change the given fields only (a filter set to None matches any); applies to events recorded after."""
        fields = {
            "url": url,
            "events": list(events) if events is not UNSET else UNSET,
            "description": description,
            "tenant": tenant,
            "product": product,
            "directory_id": directory_id,
            "format": format,
            "enabled": enabled,
        }
        body = {key: value for key, value in fields.items() if value is not UNSET}
        answer = self._t.call("PATCH", f"{BASE}/{segment(endpoint_id)}", body=body)
        return WebhookEndpoint.from_dict(answer.body["data"])

    def delete(self, endpoint_id: str) -> None:
        self._t.call("DELETE", f"{BASE}/{segment(endpoint_id)}")

    def rotate_secret(
        self,
        endpoint_id: str,
        *,
        grace_seconds: int = 0,
        secret: Optional[str] = None,
        format: Optional[str] = None,  # noqa: A002
    ) -> NewWebhookEndpoint:
        """A new secret (in the answer's `secret`, only there). A standard endpoint signs with both secrets for
        `grace_seconds`; a roster endpoint switches at once."""
        body: dict[str, Any] = {"grace_seconds": grace_seconds}
        if secret is not None:
            body["secret"] = secret
        if format is not None:
            body["format"] = format
        answer = self._t.call("POST", f"{BASE}/{segment(endpoint_id)}/secret", body=body)
        return NewWebhookEndpoint.from_dict(answer.body["data"])

    def test(self, endpoint_id: str) -> EndpointTest:
        """Send one `webhook.test` event now; the receiver's outcome (delivered, status_code, latency_ms, error)."""
        return EndpointTest.from_dict(self._t.call("POST", f"{BASE}/{segment(endpoint_id)}/test").body["data"])

    def deliveries(
        self, endpoint_id: str, *, failed: Optional[bool] = None, page_limit: int = 100
    ) -> Paged[EndpointDelivery]:
        """The endpoint's deliveries, oldest first; `failed=True` keeps the failed and dropped ones."""
        return paged(
            self._t, f"{BASE}/{segment(endpoint_id)}/deliveries", EndpointDelivery, {"failed": failed}, page_limit
        )
