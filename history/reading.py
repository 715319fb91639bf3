"""What every surface of history does with a request (contract §5.3): read the point(s) it names from
the query, fold the feed so history is current, and answer in one shape. The REST API, the admin API and
the portal call these, so that they parse, fail and render alike."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from core.apiinput import PAGE_NUMBER_MAX, query_datetime
from core.errors import NotFound, ValidationFailed
from directories.models import Directory
from history.selectors import (
    DIFF_LIMIT_DEFAULT,
    DIFF_LIMIT_MAX,
    Point,
    diff_cursor,
    diff_cursor_read,
    diff_page,
    history_diff,
    history_point,
    snapshot_group_members,
    snapshot_groups,
    snapshot_users,
)
from history.services import history_catch_up


class _Query:
    """The `query_params` of a DRF request, or a plain mapping (the portal's form, the export command)."""

    def __init__(self, params: Mapping[str, str]) -> None:
        self.query_params = params


def _point(directory: Directory, params: Mapping[str, str], name: str) -> Point | None:
    """The point one parameter names: digits are a sequence number, anything else must be a time."""
    raw = params.get(name)
    if raw is None:
        return None
    if raw.isascii() and raw.isdigit():
        if len(raw) > 18:
            raise ValidationFailed(f"{name} must be a sequence number or an ISO 8601 time.", field=name)
        return history_point(directory=directory, sequence=int(raw), name=name)
    moment = query_datetime(_Query(params), name)  # type: ignore[arg-type]
    return history_point(directory=directory, at=moment, name=name)


def point_named(directory: Directory, text: str) -> Point:
    """The point a person typed (the export command, the portal): an event number, or a time."""
    history_catch_up(directory=directory)
    point = _point(directory, {"at": text}, "at")
    assert point is not None
    return point


def snapshot_point(directory: Directory, params: Mapping[str, str]) -> Point:
    """The point of a snapshot: `at` (a time) or `sequence` (a number), not both; neither is now."""
    history_catch_up(directory=directory)
    if "at" in params and "sequence" in params:
        raise ValidationFailed("Give at or sequence, not both.", field="sequence")
    if "sequence" in params:
        raw = params["sequence"]
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
            raise ValidationFailed("sequence must be a non-negative integer.", field="sequence")
        return history_point(directory=directory, sequence=int(raw), name="sequence")
    if "at" in params:
        if params["at"].isascii() and params["at"].isdigit():
            raise ValidationFailed("at must be an ISO 8601 time; use sequence for a number.", field="at")
        point = _point(directory, params, "at")
        assert point is not None
        return point
    return history_point(directory=directory)


def _page(params: Mapping[str, str], default: int, maximum: int) -> tuple[int, int]:
    values = []
    for name, fallback in (("pageOffset", 0), ("pageLimit", default)):
        raw = params.get(name)
        if raw is None:
            values.append(fallback)
            continue
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 19 and int(raw) <= PAGE_NUMBER_MAX):
            raise ValidationFailed(f"{name} must be a non-negative integer.", field=name)
        values.append(int(raw))
    return min(values[0], 10**15), min(values[1], maximum)


def _active(params: Mapping[str, str]) -> bool | None:
    raw = params.get("active")
    if raw is None:
        return None
    if raw not in ("true", "false"):
        raise ValidationFailed("active must be true or false.", field="active")
    return raw == "true"


def users_answer(directory: Directory, params: Mapping[str, str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(the page of users, `{"as_of": …}`)."""
    point = snapshot_point(directory, params)
    offset, limit = _page(params, 100, 1000)
    users = snapshot_users(directory=directory, point=point, offset=offset, limit=limit, active=_active(params))
    return users, {"as_of": point.data()}


def groups_answer(directory: Directory, params: Mapping[str, str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    point = snapshot_point(directory, params)
    offset, limit = _page(params, 100, 1000)
    return snapshot_groups(directory=directory, point=point, offset=offset, limit=limit), {"as_of": point.data()}


def members_answer(directory: Directory, group_id: str, params: Mapping[str, str]) -> tuple[list[str], dict[str, Any]]:
    try:
        group = uuid.UUID(group_id)
    except ValueError:
        raise NotFound("Group not found at that point.") from None
    point = snapshot_point(directory, params)
    offset, limit = _page(params, 100, 1000)
    members = snapshot_group_members(directory=directory, point=point, group_id=group, offset=offset, limit=limit)
    return members, {"as_of": point.data()}


def diff_answer(directory: Directory, params: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The diff's page (with `next`, the cursor of the next page or null) and `{"from", "to"}`: the two
    points it compares. A `cursor` fixes both points and the position; `from` is required otherwise."""
    history_catch_up(directory=directory)
    _offset, limit = _page(params, DIFF_LIMIT_DEFAULT, DIFF_LIMIT_MAX)
    if limit < 1:
        raise ValidationFailed("pageLimit must be at least 1.", field="pageLimit")
    cursor = params.get("cursor")
    if cursor is not None:
        first, last, offset = diff_cursor_read(cursor)
        start = history_point(directory=directory, sequence=first, name="cursor")
        end = history_point(directory=directory, sequence=last, name="cursor")
    else:
        if "from" not in params:
            raise ValidationFailed("from is required: a time or a sequence number.", field="from")
        start = _point(directory, params, "from")
        end = _point(directory, params, "to") or history_point(directory=directory)
        assert start is not None
        offset = 0
        if start.sequence > end.sequence:
            raise ValidationFailed("from must not be after to.", field="from")
    diff = history_diff(directory=directory, start=start, end=end)
    page, following = diff_page(diff, offset=offset, limit=limit)
    page["next"] = (
        diff_cursor(start=start.sequence, end=end.sequence, offset=following) if following is not None else None
    )
    return page, {"from": start.data(), "to": end.data()}
