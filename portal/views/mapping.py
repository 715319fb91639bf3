"""A directory's attribute and role maps (contract §3): edit them, and preview what they give one user.

Saving goes through the directory service (directories.services.directory_update, audited with the
signed-in admin), which validates both maps whole, so the page shows the REST API's own messages. A preview
computes a user's custom_attributes and roles with the maps as typed, without saving them.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from core.errors import ValidationFailed
from directories.mapping import attribute_map_problem, custom_attributes, role_map_problem, roles
from directories.selectors import directory_get, directory_user_find, user_groups_attach
from directories.services import directory_update
from portal.forms import DirectoryMappingForm
from portal.views.common import actor_of, admin_page, form_error_from, not_found


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@admin_page
@require_http_methods(["GET", "POST"])
def directory_mapping(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    initial = {"attribute_map": _pretty(directory.attribute_map), "role_map": _pretty(directory.role_map)}
    form = DirectoryMappingForm(request.POST or None, initial=initial)
    preview: dict[str, Any] | None = None
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            maps = {"attribute_map": form.cleaned_data["attribute_map"], "role_map": form.cleaned_data["role_map"]}
            if request.POST.get("action") == "preview":
                preview = _preview(form, directory, maps)
                status = 200 if preview is not None else 400
            else:
                try:
                    directory_update(directory=directory, data=maps, actor=actor_of(request))
                except ValidationFailed as exc:
                    form_error_from(form, exc)
                else:
                    messages.success(request, "Mapping saved: every read of this directory's users uses it now.")
                    return redirect("portal:directory_mapping", directory_id=directory.id)
    return render(
        request,
        "portal/directories/mapping.html",
        {"directory": directory, "form": form, "preview": preview, "tab": "mapping"},
        status=status,
    )


def _preview(form: DirectoryMappingForm, directory: Any, maps: dict[str, Any]) -> dict[str, Any] | None:
    """What the typed maps give the chosen user, or None (with the form's errors set)."""
    for field, problem in (("attribute_map", attribute_map_problem), ("role_map", role_map_problem)):
        found = problem(maps[field])
        if found is not None:
            form.add_error(field, found[1])
            return None
    user = directory_user_find(directory=directory, ref=form.cleaned_data["preview_user"])
    if user is None:
        form.add_error("preview_user", "No user of this directory has this id or userName.")
        return None
    user_groups_attach(users=[user])
    return {
        "user": user,
        "groups": [name for _id, name in user.member_of or []],
        "custom_attributes": _pretty(custom_attributes(user.raw, maps["attribute_map"])),
        "roles": roles(user.member_of or [], maps["role_map"]),
    }
