"""Webhook endpoints (contract §5.2) on the admin API, every tenant's: list with filters, create (secret shown
once), get, change, delete, rotate, send a test event, the delivery log. Audited with the admin."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminView, paged
from core.apiinput import json_body, query_boolean, query_nonempty, query_uuid
from core.envelope import ok
from core.errors import NotFound
from webhooks.models import WebhookEndpoint
from webhooks.rendering import endpoint_data, endpoint_delivery_data
from webhooks.selectors import endpoint_deliveries, endpoint_get, endpoint_list
from webhooks.services.endpoints import endpoint_create, endpoint_delete, endpoint_secret_rotate, endpoint_update
from webhooks.services.fanout import endpoint_test_send


def _endpoint(endpoint_id: str) -> WebhookEndpoint:
    endpoint = endpoint_get(endpoint_id=endpoint_id)
    if endpoint is None:
        raise NotFound("Webhook endpoint not found.")
    return endpoint


class AdminWebhookEndpointsApi(AdminView):
    def get(self, request: Request) -> Response:
        endpoints = endpoint_list(
            tenant=query_nonempty(request, "tenant"),
            product=query_nonempty(request, "product"),
            directory_id=query_uuid(request, "directory_id"),
            enabled=query_boolean(request, "enabled"),
        )
        return ok([endpoint_data(e) for e in paged(request, endpoints)])

    def post(self, request: Request) -> Response:
        endpoint = endpoint_create(data=json_body(request), actor=self._actor())
        return ok(endpoint_data(endpoint, secret=endpoint.secret), status=201)


class AdminWebhookEndpointApi(AdminView):
    def get(self, request: Request, endpoint_id: str) -> Response:
        return ok(endpoint_data(_endpoint(endpoint_id)))

    def patch(self, request: Request, endpoint_id: str) -> Response:
        endpoint, _changed = endpoint_update(
            endpoint=_endpoint(endpoint_id), data=json_body(request), actor=self._actor()
        )
        return ok(endpoint_data(endpoint))

    def delete(self, request: Request, endpoint_id: str) -> Response:
        endpoint_delete(endpoint=_endpoint(endpoint_id), actor=self._actor())
        return Response(status=204)


class AdminWebhookEndpointSecretApi(AdminView):
    def post(self, request: Request, endpoint_id: str) -> Response:
        endpoint = endpoint_secret_rotate(endpoint=_endpoint(endpoint_id), data=json_body(request), actor=self._actor())
        return ok(endpoint_data(endpoint, secret=endpoint.secret))


class AdminWebhookEndpointTestApi(AdminView):
    def post(self, request: Request, endpoint_id: str) -> Response:
        outcome = endpoint_test_send(endpoint=_endpoint(endpoint_id))
        return ok(
            {
                "delivered": outcome.delivered,
                "status_code": outcome.status_code,
                "latency_ms": outcome.latency_ms,
                "error": outcome.error,
            }
        )


class AdminWebhookEndpointDeliveriesApi(AdminView):
    def get(self, request: Request, endpoint_id: str) -> Response:
        deliveries = endpoint_deliveries(endpoint=_endpoint(endpoint_id), failed=query_boolean(request, "failed"))
        return ok([endpoint_delivery_data(d) for d in paged(request, deliveries)])
