"""The audit trail: who did what, when, from where, to which directory."""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from audit import selectors as audit_selectors
from portal.selectors import directory_names
from portal.views.common import admin_page, paginate, search_term


def _detail_text(value: object) -> str:
    """One detail value as a person reads it: lists joined, booleans as on/off, the rest as JSON."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@admin_page
def audit_list(request: HttpRequest) -> HttpResponse:
    actor, action, directory_id = (
        search_term(request, "actor"),
        search_term(request, "action"),
        search_term(request, "directory"),
    )
    page = paginate(
        request,
        audit_selectors.audit_list(actor=actor or None, action=action or None, directory_id=directory_id or None),
    )
    # Name the directories on this page in one query; deleted ones keep their id in the trail.
    ids = {e.directory_id for e in page.object_list if e.directory_id}
    names = directory_names(ids=ids)
    entries = [
        {
            "entry": e,
            # An admin by email; else the actor an entry names in its details (an API key, a setup link).
            "actor": e.actor_email or str((e.details or {}).get("actor") or ""),
            "directory_name": names.get(e.directory_id),
            "details": [(k, _detail_text(v)) for k, v in sorted(e.details.items())] if e.details else [],
        }
        for e in page.object_list
    ]
    return render(
        request,
        "portal/audit/list.html",
        {
            "page": page,
            "entries": entries,
            "actor": actor,
            "action": action,
            "directory_filter": directory_id,
            "actions": audit_selectors.audit_actions(),
            "filtered": bool(actor or action or directory_id),
            "section": "audit",
        },
    )
