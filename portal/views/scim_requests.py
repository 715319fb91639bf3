"""A directory's SCIM request log (contract §4.1): failed requests always, successful ones while
`log_scim_requests` is on; each entry opens to its request and response."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from directories.activity.rendering import health_row, health_state_of
from directories.activity.selectors import scim_log_get, scim_log_list
from directories.models import ScimLogEntry
from directories.selectors import directory_get
from portal.views.common import admin_page, not_found, paginate

# ?status= values of the filter, and what each means for scim_log_list(failed=...).
STATUS_FILTERS = {"all": None, "failed": True, "succeeded": False}


def _pretty(text: str) -> str:
    """A body as stored, indented when it is whole JSON (a cut one stays as it is)."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


def _shown(entry: ScimLogEntry) -> dict[str, Any]:
    return {"row": entry, "request": _pretty(entry.request_body), "response": _pretty(entry.response_body)}


@admin_page
def scim_request_list(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    status = request.GET.get("status", "all")
    if status not in STATUS_FILTERS:
        status = "all"
    page = paginate(request, scim_log_list(directory=directory, failed=STATUS_FILTERS[status]), per_page=25)
    return render(
        request,
        "portal/scim_requests/list.html",
        {
            "directory": directory,
            "page": page,
            "entries": [_shown(entry) for entry in page.object_list],
            "status": status,
            "failed_count": scim_log_list(directory=directory, failed=True).count(),
            "retention_days": settings.SCIM_LOG_RETENTION_DAYS,
            "health_state": health_state_of(directory, health_row(directory)),
            "tab": "scim_requests",
        },
    )


@admin_page
def scim_request_detail(request: HttpRequest, directory_id: str, entry_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    entry = scim_log_get(directory=directory, entry_id=entry_id)
    if entry is None:
        return not_found(request, "SCIM request")
    return render(
        request,
        "portal/scim_requests/detail.html",
        {"directory": directory, "tab": "scim_requests", **_shown(entry)},
    )
