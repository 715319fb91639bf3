"""A directory's webhook delivery log (kept only while log_webhook_events is on, contract §5), and resending
its events on request (contract §5.1): a "Resend" button on each failed delivery, and "resend from
sequence n" (n up to the newest event, at most RESEND_MAX events)."""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from core.errors import RosterError
from directories.selectors import directory_get
from portal.views.common import actor_of, admin_page, not_found, paginate
from webhooks import services as webhook_services
from webhooks.rendering import delivery_data
from webhooks.selectors import delivery_get, event_sequence_last
from webhooks.selectors import delivery_list as deliveries_of
from webhooks.services import RESEND_MAX, resend_range_end, resend_refusal

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
            "last_sequence": event_sequence_last(directory=directory),
            "resend_max": RESEND_MAX,
            "resend_refusal": resend_refusal(directory),
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
        {
            "directory": directory,
            "row": delivery,
            "data": data,
            "payload": _payload_pretty(data),
            "tab": "deliveries",
            "resend_refusal": resend_refusal(directory),
        },
    )


def _sequence(raw: str | None) -> object:
    """The posted "from" as an int when it is digits; anything else goes to the service as it is, which
    refuses it with the APIs' own message."""
    text = (raw or "").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 19 else text


@admin_page
@require_POST
def changes_resend(request: HttpRequest, directory_id: str) -> HttpResponse:
    """POST `event_id` (a failed delivery's "Resend" button) or `from` (resend from sequence n, up to the
    newest event and at most RESEND_MAX events); the outcome is a flash message on the deliveries page."""
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    if "event_id" in request.POST:
        asked: dict[str, object] = {"event_ids": [request.POST["event_id"].strip()]}
    else:
        first = _sequence(request.POST.get("from"))
        asked = {"first": first, "last": resend_range_end(first, event_sequence_last(directory=directory))}
    try:
        queued = webhook_services.changes_resend(directory=directory, **asked, actor=actor_of(request))
    except RosterError as exc:
        messages.error(request, f"Nothing was resent: {exc.message}")
    else:
        if "event_ids" in asked:
            said = f"Queued {queued} event(s) for one more attempt."
        else:
            said = f"Queued {queued} event(s) from sequence {asked['first']} to {asked['last']} for one more attempt."
        if not queued:
            said += (
                " Events still waiting for their attempt are not queued twice, and numbers not given yet or no"
                " longer kept are skipped."
            )
        messages.success(request, said)
    return redirect("portal:deliveries", directory_id=directory.id)
