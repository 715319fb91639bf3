"""REST API: webhook endpoints (contract §5.2), `/api/v1/webhook-endpoints…`: list and create, get, change
and delete one, rotate its secret, send it a test event, read its delivery log. Audited with the API key's
name (the services record it)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework.request import Request
from rest_framework.response import Response

from core.apiinput import json_body, page_bounds, query_boolean, query_nonempty, query_uuid
from core.envelope import ok
from core.errors import NotFound
from restapi import openapi_common as doc
from restapi import openapi_webhook_endpoints as endpoints_doc
from restapi.apikeys import actor_of
from restapi.apis import ApiView
from restapi.openapi_marks import extend_schema
from webhooks.models import WebhookEndpoint
from webhooks.rendering import endpoint_data, endpoint_delivery_data
from webhooks.selectors import endpoint_deliveries, endpoint_get, endpoint_list
from webhooks.services.endpoints import endpoint_create, endpoint_delete, endpoint_secret_rotate, endpoint_update
from webhooks.services.fanout import endpoint_test_send


def endpoint_or_404(endpoint_id: str) -> WebhookEndpoint:
    endpoint = endpoint_get(endpoint_id=endpoint_id)
    if endpoint is None:
        raise NotFound("Webhook endpoint not found.")
    return endpoint


class WebhookEndpointsApi(ApiView):
    @extend_schema(
        operation_id="webhook_endpoints_list",
        summary="List webhook endpoints",
        description="Oldest first, paged; never a secret. Filters keep the endpoints whose own filter equals them.",
        parameters=[
            endpoints_doc.TENANT_FILTER,
            endpoints_doc.PRODUCT_FILTER,
            endpoints_doc.DIRECTORY_FILTER,
            endpoints_doc.ENABLED,
            doc.PAGE_OFFSET,
            doc.PAGE_LIMIT,
        ],
        responses={200: endpoints_doc.WebhookEndpointListEnvelope, **doc.errors()},
    )
    def get(self, request: Request) -> Response:
        offset, limit = page_bounds(request)
        endpoints = endpoint_list(
            tenant=query_nonempty(request, "tenant"),
            product=query_nonempty(request, "product"),
            directory_id=query_uuid(request, "directory_id"),
            enabled=query_boolean(request, "enabled"),
        )
        return ok([endpoint_data(e) for e in endpoints[offset : offset + limit]] if limit else [])

    @extend_schema(
        operation_id="webhook_endpoints_create",
        summary="Create a webhook endpoint",
        description="Every event matching its events and filters goes to it, once, from the next recorded event "
        "on. The secret is shown in this answer only.",
        request=endpoints_doc.WebhookEndpointCreateInput,
        responses={201: endpoints_doc.NewWebhookEndpointEnvelope, **doc.errors(413)},
    )
    def post(self, request: Request) -> Response:
        endpoint = endpoint_create(data=json_body(request), actor=actor_of(request))
        return ok(endpoint_data(endpoint, secret=endpoint.secret), status=201)


class WebhookEndpointApi(ApiView):
    @extend_schema(
        operation_id="webhook_endpoints_get",
        summary="One webhook endpoint",
        description="The endpoint as it is now; never its secret.",
        parameters=[doc.path_uuid("endpoint_id")],
        responses={200: endpoints_doc.WebhookEndpointEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, endpoint_id: str) -> Response:
        return ok(endpoint_data(endpoint_or_404(endpoint_id)))

    @extend_schema(
        operation_id="webhook_endpoints_update",
        summary="Change a webhook endpoint",
        description="Applies to events recorded after the change, on every node. enabled: false stops it.",
        parameters=[doc.path_uuid("endpoint_id")],
        request=endpoints_doc.WebhookEndpointUpdateInput,
        responses={200: endpoints_doc.WebhookEndpointEnvelope, **doc.errors(404, 413)},
    )
    def patch(self, request: Request, endpoint_id: str) -> Response:
        endpoint, _changed = endpoint_update(
            endpoint=endpoint_or_404(endpoint_id), data=json_body(request), actor=actor_of(request)
        )
        return ok(endpoint_data(endpoint))

    @extend_schema(
        operation_id="webhook_endpoints_delete",
        summary="Delete a webhook endpoint",
        description="It gets no event recorded from now on; its deliveries still waiting are dropped.",
        parameters=[doc.path_uuid("endpoint_id")],
        responses={204: OpenApiResponse(description="Deleted; no body."), **doc.errors(404)},
    )
    def delete(self, request: Request, endpoint_id: str) -> Response:
        endpoint_delete(endpoint=endpoint_or_404(endpoint_id), actor=actor_of(request))
        return Response(status=204)


class WebhookEndpointSecretApi(ApiView):
    @extend_schema(
        operation_id="webhook_endpoints_rotate_secret",
        summary="Rotate a webhook endpoint's secret",
        description="The new secret is shown in this answer only. With grace_seconds a standard endpoint signs "
        "with both secrets for that long; otherwise the old one stops at once.",
        parameters=[doc.path_uuid("endpoint_id")],
        request=endpoints_doc.WebhookEndpointRotateInput,
        responses={200: endpoints_doc.NewWebhookEndpointEnvelope, **doc.errors(404, 413)},
    )
    def post(self, request: Request, endpoint_id: str) -> Response:
        endpoint = endpoint_secret_rotate(
            endpoint=endpoint_or_404(endpoint_id), data=json_body(request), actor=actor_of(request)
        )
        return ok(endpoint_data(endpoint, secret=endpoint.secret))


class WebhookEndpointTestApi(ApiView):
    @extend_schema(
        operation_id="webhook_endpoints_test",
        summary="Send a test event to a webhook endpoint",
        description='Sends one webhook.test event (data: {"endpoint_id"}, no directory, no sequence), signed as '
        "the endpoint's deliveries are, now, and answers with the attempt's outcome. Sent whether the endpoint "
        "is enabled or not; nothing is recorded.",
        parameters=[doc.path_uuid("endpoint_id")],
        request=None,
        responses={200: endpoints_doc.EndpointTestEnvelope, **doc.errors(404)},
    )
    def post(self, request: Request, endpoint_id: str) -> Response:
        outcome = endpoint_test_send(endpoint=endpoint_or_404(endpoint_id))
        return ok(
            {
                "delivered": outcome.delivered,
                "status_code": outcome.status_code,
                "latency_ms": outcome.latency_ms,
                "error": outcome.error,
            }
        )


class WebhookEndpointDeliveriesApi(ApiView):
    @extend_schema(
        operation_id="webhook_endpoints_deliveries",
        summary="A webhook endpoint's delivery log",
        description="Each event's delivery to this endpoint, oldest first, with its single attempt's outcome.",
        parameters=[doc.path_uuid("endpoint_id"), endpoints_doc.FAILED, doc.PAGE_OFFSET, doc.PAGE_LIMIT],
        responses={200: endpoints_doc.EndpointDeliveryListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, endpoint_id: str) -> Response:
        endpoint = endpoint_or_404(endpoint_id)
        offset, limit = page_bounds(request)
        failed = query_boolean(request, "failed")
        deliveries = endpoint_deliveries(endpoint=endpoint, failed=failed)
        return ok([endpoint_delivery_data(d) for d in deliveries[offset : offset + limit]] if limit else [])
