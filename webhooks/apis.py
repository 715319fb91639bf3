"""REST API: a directory's webhook delivery log (SPEC §3, `GET /api/v1/directory-sync/<id>/events`)."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from directories.auth import ApiKeyAuthentication
from directories.envelope import ok
from directories.errors import NotFound, ValidationFailed
from directories.selectors import directory_get
from webhooks.models import WebhookDelivery
from webhooks.rendering import delivery_data
from webhooks.selectors import delivery_list

DEFAULT_PAGE_LIMIT = 100
MAX_PAGE_LIMIT = 1000

_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}
_STATUSES = {"delivered": False, "failed": True}  # status -> the `failed` filter it means


def _page(request: Request) -> tuple[int, int]:
    """pageOffset (default 0) and pageLimit (default 100, capped at 1000), as the rest of the REST API."""
    values = {}
    for name, default in (("pageOffset", 0), ("pageLimit", DEFAULT_PAGE_LIMIT)):
        raw = request.query_params.get(name, "").strip()
        if raw == "":
            values[name] = default
            continue
        try:
            values[name] = int(raw)
        except ValueError:
            raise ValidationFailed(f"{name} must be a whole number.", field=name) from None
        if values[name] < 0:
            raise ValidationFailed(f"{name} must not be negative.", field=name)
    return values["pageOffset"], min(values["pageLimit"], MAX_PAGE_LIMIT)


def _failed_filter(request: Request) -> bool | None:
    failed_raw = request.query_params.get("failed", "").strip().lower()
    status_raw = request.query_params.get("status", "").strip().lower()
    failed: bool | None = None
    if failed_raw:
        if failed_raw not in _BOOLEANS:
            raise ValidationFailed("failed must be true or false.", field="failed")
        failed = _BOOLEANS[failed_raw]
    if status_raw:
        if status_raw not in _STATUSES:
            raise ValidationFailed("status must be delivered or failed.", field="status")
        if failed is not None and failed != _STATUSES[status_raw]:
            raise ValidationFailed("failed and status contradict each other.", field="status")
        failed = _STATUSES[status_raw]
    return failed


class DirectoryEventsApi(APIView):
    """The delivery attempts of one directory's webhook, oldest first so offset paging is stable
    while new attempts are appended (SPEC §3 paging). Empty unless `log_webhook_events` is on."""

    authentication_classes = [ApiKeyAuthentication]

    def get(self, request: Request, directory_id: str) -> Response:
        directory = directory_get(directory_id=directory_id)
        if directory is None:
            raise NotFound("Directory not found.")
        offset, limit = _page(request)
        failed = _failed_filter(request)
        deliveries: QuerySet[WebhookDelivery] = delivery_list(directory=directory, failed=failed).order_by(
            "created_at", "id"
        )
        if limit == 0:
            return ok([])
        return ok([delivery_data(d) for d in deliveries[offset : offset + limit]])
