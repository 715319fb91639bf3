"""A directory's webhook delivery log (kept only while log_webhook_events is on, contract §5)."""

from __future__ import annotations

import json

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from directories.selectors import directory_get
from portal.views.common import admin_page, not_found, paginate
from webhooks.rendering import delivery_data
from webhooks.selectors import delivery_get
from webhooks.selectors import delivery_list as deliveries_of

# ?status= values of the filter, and what each means for delivery_list(failed=...).
STATUS_FILTERS = {"all": None, "failed": True, "delivered": False}


def _payload_pretty(data: dict) -> str:
    payload = data["payload"]
    return payload if isinstance(payload, str) else json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False)


@admin_page
def delivery_list(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    status = request.GET.get("status", "all")
    if status not in STATUS_FILTERS:
        status = "all"
    page = paginate(request, deliveries_of(directory=directory, failed=STATUS_FILTERS[status]), per_page=25)
    entries = []
    for delivery in page.object_list:
        data = delivery_data(delivery)
        entries.append({"row": delivery, "data": data, "payload": _payload_pretty(data)})
    failed_count = deliveries_of(directory=directory, failed=True).count()
    return render(
        request,
        "portal/deliveries/list.html",
        {
            "directory": directory,
            "page": page,
            "entries": entries,
            "status": status,
            "failed_count": failed_count,
            "retention_days": settings.WEBHOOK_LOG_RETENTION_DAYS,
            "tab": "deliveries",
        },
    )


@admin_page
def delivery_detail(request: HttpRequest, directory_id: str, delivery_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    delivery = delivery_get(directory=directory, delivery_id=delivery_id)
    if delivery is None:
        return not_found(request, "delivery")
    data = delivery_data(delivery)
    return render(
        request,
        "portal/deliveries/detail.html",
        {"directory": directory, "row": delivery, "data": data, "payload": _payload_pretty(data), "tab": "deliveries"},
    )
