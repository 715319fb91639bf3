"""REST API: a directory's webhook delivery log (`GET /api/v1/directory-sync/<id>/events`)."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework.request import Request
from rest_framework.response import Response

from core.apiinput import page_bounds, query_boolean, query_choice
from core.envelope import ok
from core.errors import NotFound, ValidationFailed
from directories.selectors import directory_get
from restapi import openapi_common as doc
from restapi import openapi_deliveries as deliveries_doc
from restapi.apis import ApiView
from restapi.openapi_marks import extend_schema
from webhooks.models import WebhookDelivery
from webhooks.rendering import delivery_data
from webhooks.selectors import delivery_list

_STATUSES = {"delivered": False, "failed": True}  # status -> the `failed` filter it means


def _failed_filter(request: Request) -> bool | None:
    failed = query_boolean(request, "failed")
    status = query_choice(request, "status", tuple(_STATUSES))
    if status is not None:
        if failed is not None and failed != _STATUSES[status]:
            raise ValidationFailed("failed and status contradict each other.", field="status")
        failed = _STATUSES[status]
    return failed


class DirectoryEventsApi(ApiView):
    """The delivery attempts of one directory's webhook, oldest first so offset paging is stable
    while new attempts are appended. Empty unless `log_webhook_events` is on."""

    @extend_schema(
        operation_id="directory_events_list",
        summary="The webhook delivery log of a directory",
        description="Delivery attempts, oldest first; recorded only while the directory's log_webhook_events is on.",
        parameters=[
            doc.path_uuid("directory_id"),
            doc.PAGE_OFFSET,
            doc.PAGE_LIMIT,
            deliveries_doc.FAILED,
            deliveries_doc.STATUS,
        ],
        responses={200: deliveries_doc.DeliveryListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, directory_id: str) -> Response:
        directory = directory_get(directory_id=directory_id)
        if directory is None:
            raise NotFound("Directory not found.")
        offset, limit = page_bounds(request)
        failed = _failed_filter(request)
        if limit == 0:
            return ok([])
        deliveries: QuerySet[WebhookDelivery] = delivery_list(directory=directory, failed=failed).order_by(
            "created_at", "id"
        )
        return ok([delivery_data(d) for d in deliveries[offset : offset + limit]])
