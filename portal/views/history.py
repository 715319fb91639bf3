"""A directory's "History" tab (contract §5.3): the users and their groups at a moment, or what changed
between two moments, each downloadable as CSV (an access review). Moments are typed as a UTC date and
time (the browser's `datetime-local`), an ISO 8601 time with its zone, or an event number."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render

from core.errors import RosterError
from directories.models import Directory
from directories.selectors import directory_get
from history.reading import point_named
from history.selectors import Point, group_names_at, history_diff, history_point, snapshot_users
from portal.views.common import admin_page, not_found

PER_PAGE = 50
CSV_CHUNK = 1000
# What `<input type="datetime-local">` sends: no zone (the form says UTC), seconds optional.
_LOCAL = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?")


def _moment(text: str) -> str:
    text = text.strip()
    if _LOCAL.fullmatch(text):
        return text + (":00Z" if text.count(":") == 1 else "Z")
    return text


def _point(directory: Directory, text: str) -> Point:
    return point_named(directory, _moment(text)) if text.strip() else history_point(directory=directory)


def _group_names(directory: Directory, point: Point, users: list[dict[str, Any]]) -> dict[str, str]:
    ids = {group_id for user in users for group_id in user["groups"]}
    return group_names_at(directory=directory, point=point, group_ids=ids)


@admin_page
def history_page(request: HttpRequest, directory_id: str) -> HttpResponse:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    at, to = request.GET.get("at", ""), request.GET.get("to", "")
    mode = "diff" if request.GET.get("mode") == "diff" else "snapshot"
    context: dict[str, Any] = {"directory": directory, "tab": "history", "at": at, "to": to, "mode": mode}
    try:
        page = max(int(request.GET.get("page", "1")), 1)
    except ValueError:
        page = 1
    try:
        if mode == "diff":
            start, end = _point(directory, at), _point(directory, to)
            if start.sequence > end.sequence:
                start, end = end, start
            context.update(start=start, end=end, diff=history_diff(directory=directory, start=start, end=end))
        else:
            point = _point(directory, at)
            users = snapshot_users(directory=directory, point=point, offset=(page - 1) * PER_PAGE, limit=PER_PAGE + 1)
            names = _group_names(directory, point, users)
            for user in users:
                user["group_names"] = [names.get(group_id, group_id) for group_id in user["groups"]]
            context.update(
                point=point,
                users=users[:PER_PAGE],
                page=page,
                has_next=len(users) > PER_PAGE,
                previous_page=page - 1,
                next_page=page + 1,
            )
    except RosterError as exc:
        context["problem"] = exc.message
        return render(request, "portal/directories/history.html", context, status=exc.status)
    return render(request, "portal/directories/history.html", context)


def _csv(rows: Iterator[list[Any]], filename: str) -> StreamingHttpResponse:
    class _Echo:
        def write(self, value: str) -> str:
            return value

    writer = csv.writer(_Echo())
    response = StreamingHttpResponse((writer.writerow(row) for row in rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _snapshot_rows(directory: Directory, point: Point) -> Iterator[list[Any]]:
    yield ["user_id", "email", "first_name", "last_name", "active", "groups", "group_ids", "roles", "as_of_sequence"]
    offset = 0
    while users := snapshot_users(directory=directory, point=point, offset=offset, limit=CSV_CHUNK):
        names = _group_names(directory, point, users)
        for user in users:
            yield [
                user["id"],
                user["email"],
                user["first_name"],
                user["last_name"],
                "true" if user["active"] else "false",
                "; ".join(names.get(g, g) for g in user["groups"]),
                "; ".join(user["groups"]),
                "; ".join(user["roles"]),
                point.sequence,
            ]
        offset += len(users)


def _diff_rows(diff: dict[str, Any]) -> Iterator[list[Any]]:
    yield ["kind", "change", "id", "name", "field", "before", "after"]
    for kind in ("users", "groups"):
        label = kind[:-1]
        for change in ("created", "deleted"):
            for item in diff[kind][change]:
                yield [label, change, item["id"], item.get("email") or item.get("name") or "", "", "", ""]
        for item in diff[kind]["updated"]:
            for field, before in item["before"].items():
                if field == "raw":
                    for key, raw_before in before.items():
                        after = item["after"]["raw"].get(key)
                        yield [label, "updated", item["id"], "", f"raw.{key}", _cell(raw_before), _cell(after)]
                else:
                    yield [label, "updated", item["id"], "", field, _cell(before), _cell(item["after"].get(field))]
    for change in ("added", "removed"):
        for member in diff["memberships"][change]:
            yield ["membership", change, member["user_id"], member["group_id"], "", "", ""]


@admin_page
def history_csv(request: HttpRequest, directory_id: str) -> HttpResponse:
    """The snapshot (`?at=`) or, with `?mode=diff`, the diff (`?at=` to `?to=`) as CSV."""
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        return not_found(request, "directory")
    try:
        if request.GET.get("mode") == "diff":
            start, end = _point(directory, request.GET.get("at", "")), _point(directory, request.GET.get("to", ""))
            if start.sequence > end.sequence:
                start, end = end, start
            diff = history_diff(directory=directory, start=start, end=end)
            name = f"{directory.tenant}-{directory.product}-diff-{start.sequence}-{end.sequence}.csv"
            return _csv(_diff_rows(diff), name)
        point = _point(directory, request.GET.get("at", ""))
    except RosterError as exc:
        return render(
            request,
            "portal/directories/history.html",
            {"directory": directory, "tab": "history", "problem": exc.message, "at": "", "to": "", "mode": "snapshot"},
            status=exc.status,
        )
    return _csv(_snapshot_rows(directory, point), f"{directory.tenant}-{directory.product}-at-{point.sequence}.csv")
