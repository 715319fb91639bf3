"""A directory's users and groups, as the identity provider pushed them (read-only in the portal)."""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from directories.selectors import directory_get, directory_group_get, directory_user_get
from portal.selectors import portal_group_list, portal_group_members, portal_user_groups, portal_user_list
from portal.views.common import admin_page, not_found, paginate, search_term


def _pretty(raw: object) -> str:
    return json.dumps(raw, indent=2, sort_keys=True, ensure_ascii=False)


@admin_page
def user_list(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    q = search_term(request)
    page = paginate(request, portal_user_list(directory=directory, search=q))
    return render(request, "portal/users/list.html", {"directory": directory, "page": page, "q": q, "tab": "users"})


@admin_page
def user_detail(request: HttpRequest, directory_id: str, user_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    user = directory_user_get(directory=directory, user_id=user_id)
    if user is None:
        return not_found(request, "user")
    return render(
        request,
        "portal/users/detail.html",
        {
            "directory": directory,
            "person": user,
            "groups": portal_user_groups(directory=directory, user=user),
            "raw_json": _pretty(user.raw),
            "tab": "users",
        },
    )


@admin_page
def group_list(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    q = search_term(request)
    page = paginate(request, portal_group_list(directory=directory, search=q))
    return render(request, "portal/groups/list.html", {"directory": directory, "page": page, "q": q, "tab": "groups"})


@admin_page
def group_detail(request: HttpRequest, directory_id: str, group_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    group = directory_group_get(directory=directory, group_id=group_id)
    if group is None:
        return not_found(request, "group")
    members = paginate(request, portal_group_members(directory=directory, group=group))
    return render(
        request,
        "portal/groups/detail.html",
        {"directory": directory, "group": group, "page": members, "raw_json": _pretty(group.raw), "tab": "groups"},
    )
