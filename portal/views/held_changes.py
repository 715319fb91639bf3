"""The deprovision guard's held changes in the portal (contract §4.2): the list, and approving or discarding
all of them or the ticked ones. Every resolution goes through the guard's service, audited with the signed-in
admin, as on the APIs."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from core.errors import RosterError
from directories.guard import services as guard_services
from directories.guard.rendering import guard_state
from directories.guard.rules import guard_setting
from directories.guard.selectors import held_changes
from directories.guard.services import held_resolve_input
from directories.models import Directory
from directories.selectors import directory_get
from portal.views.common import actor_of, admin_page, not_found, paginate

BANNER_ROWS = 20  # held changes the directory page lists; the rest are on the held changes page


def guard_context(directory: Directory) -> dict[str, Any]:
    """What the directory page shows of the guard: its state and setting, and the banner's held changes."""
    held = held_changes(directory=directory)
    count = held.count() if directory.guard_tripped_at is not None else 0
    return {
        "guard_state": guard_state(directory),
        "guard_setting": guard_setting(directory.deprovision_guard),
        "held_count": count,
        "held_first": list(held[:BANNER_ROWS]) if count else [],
    }


@admin_page
def held_change_list(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    page = paginate(request, held_changes(directory=directory))
    return render(
        request,
        "portal/directories/held_changes.html",
        {"directory": directory, "page": page, "tab": "overview", **guard_context(directory)},
    )


_ACTIONS = {
    "approve": (True, False),
    "discard": (False, False),
    "approve_all": (True, True),
    "discard_all": (False, True),
}


@admin_page
@require_POST
def held_changes_resolve(request: HttpRequest, directory_id: str) -> HttpResponse:
    """POST `action` (approve, discard: the ticked `ids`; approve_all, discard_all: every held change); the
    outcome is a flash message on the page the form was on."""
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    back = "portal:held_changes" if request.POST.get("back") == "held_changes" else "portal:directory"
    action = _ACTIONS.get(request.POST.get("action", ""))
    ticked = [value for value in request.POST.getlist("ids") if value]
    if action is None:
        messages.error(request, "Choose approve or discard.")
        return redirect(back, directory_id=directory.id)
    approve, everything = action
    if not everything and not ticked:
        messages.error(request, "Tick at least one held change, or use the buttons for all of them.")
        return redirect(back, directory_id=directory.id)
    try:
        ids = held_resolve_input({} if everything else {"ids": ticked})
        count = guard_services.held_changes_resolve(
            directory=directory, ids=ids, approve=approve, actor=actor_of(request)
        ).count
    except RosterError as exc:
        messages.error(request, f"Nothing was done: {exc.message}")
    else:
        plural = "" if count == 1 else "s"
        if approve:
            messages.success(request, f"Approved {count} held change{plural}: applied, and your application notified.")
        else:
            messages.success(
                request,
                f"Discarded {count} held change{plural}: the identity provider will send those users again on its "
                "next push or import.",
            )
    return redirect(back, directory_id=directory.id)
