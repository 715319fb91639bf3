"""Reads of a directory's history (contract §5.3): which point a moment or number names, the directory as
it was at a point (users with their groups, groups with their member counts, a group's members), and the
net change between two points.

Every read is scoped by directory and answered from history rows alone (history.models): the directory at
point S is the rows with `valid_from <= S < valid_to`. The caller folds the feed first
(history.services.history_catch_up), so the rows reach the last event the feed shows.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from django.db.models import Count, Max, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from core.errors import NotFound, RosterError, ValidationFailed
from core.timefmt import iso_utc, iso_utc_or_none
from directories.mapping import custom_attributes, roles
from directories.models import Directory
from directories.rendering import previous_attributes
from directories.selectors import after_shown_instant
from history.models import GroupVersion, HistoryPoint, HistoryState, MembershipSpan, UserVersion
from history.services import history_cut

DIFF_LIMIT_DEFAULT = 1000
DIFF_LIMIT_MAX = 1000


class HistoryGone(RosterError):
    """The point is before the oldest event the changes feed still keeps (410)."""

    status = 410


@dataclass(frozen=True, slots=True)
class Point:
    """A point of history: right after event `sequence` (0: before the first), made at `created_at`."""

    sequence: int
    created_at: datetime | None

    def data(self) -> dict[str, Any]:
        return {"sequence": self.sequence, "created_at": iso_utc_or_none(self.created_at)}


def _folded(directory: Directory) -> int:
    return HistoryState.objects.filter(pk=directory.pk).values_list("folded_sequence", flat=True).first() or 0


def _gone(earliest: datetime | None) -> HistoryGone:
    when = iso_utc(earliest) if earliest is not None else "unknown"
    return HistoryGone(f"That point is no longer kept: the earliest available time is {when}.")


def history_point(
    *, directory: Directory, at: datetime | None = None, sequence: int | None = None, name: str = "at"
) -> Point:
    """The point that `sequence`, or the moment `at`, names: for a moment, right after the last event
    whose shown time (to the millisecond) is at or before it. Neither given: now. A point past the last
    event or a moment in the future is a 400; a point before the earliest one history answers for is a 410
    naming the earliest available time.

    While the feed still keeps its first event, history reaches back to the directory's creation: the
    point before event 1 (sequence 0) is the empty directory. Once retention has cut the feed, the
    earliest point is the oldest kept event."""
    last = _folded(directory)
    cut = history_cut(directory=directory)
    if cut <= 1:
        floor, earliest = 0, directory.created_at
    else:
        floor = cut
        earliest = (
            HistoryPoint.objects.filter(directory=directory, sequence=cut).values_list("created_at", flat=True).first()
        )
    if sequence is None:
        if at is not None and at > timezone.now():
            raise ValidationFailed(f"{name} is in the future.", field=name)
        points = HistoryPoint.objects.filter(directory=directory)
        if at is not None:
            # Events show their time to the millisecond: the moment an event shows is at or after it.
            shown_after = after_shown_instant(at)
            if shown_after is not None:
                points = points.filter(created_at__lt=shown_after)
        found = points.aggregate(last=Max("sequence"))["last"]
        if found is None:
            if floor == 0 and (at is None or earliest is None or at >= earliest):
                return Point(sequence=0, created_at=None)
            raise _gone(earliest)
        sequence = int(found)
    elif sequence > last:
        raise ValidationFailed(f"{name} is after the last event of this directory (sequence {last}).", field=name)
    if sequence < floor:
        raise _gone(earliest)
    created_at = (
        HistoryPoint.objects.filter(directory=directory, sequence=sequence).values_list("created_at", flat=True).first()
    )
    return Point(sequence=sequence, created_at=created_at)


# --- the directory at a point ------------------------------------------------------------------------


def _at(queryset: Any, point: Point) -> Any:
    return queryset.filter(valid_from__lte=point.sequence, valid_to__gt=point.sequence)


def _groups_at(directory: Directory, point: Point, group_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, GroupVersion]:
    ids = set(group_ids)
    if not ids:
        return {}
    rows = _at(GroupVersion.objects.filter(directory=directory, group_id__in=ids), point)
    return {row.group_id: row for row in rows.only("group_id", "created_at", "born", "data")}


def group_names_at(*, directory: Directory, point: Point, group_ids: Iterable[Any]) -> dict[str, str]:
    """The names the groups had at the point (those that existed then), by id as text."""
    groups = _groups_at(directory, point, (uuid.UUID(str(group_id)) for group_id in group_ids))
    return {str(group_id): row.data.get("name") or "" for group_id, row in groups.items()}


def _memberships_of(
    directory: Directory, point: Point, user_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[GroupVersion]]:
    """Each user's groups at the point, in the order groups are listed (oldest first)."""
    if not user_ids:
        return {}
    pairs = list(
        _at(MembershipSpan.objects.filter(directory=directory, user_id__in=user_ids), point).values_list(
            "user_id", "group_id"
        )
    )
    groups = _groups_at(directory, point, (group_id for _u, group_id in pairs))
    of: dict[uuid.UUID, list[GroupVersion]] = defaultdict(list)
    for user_id, group_id in pairs:
        if group_id in groups:
            of[user_id].append(groups[group_id])
    for rows in of.values():
        rows.sort(key=lambda g: (g.created_at, g.born, g.group_id))
    return of


def _user(directory: Directory, kept: dict[str, Any], groups: list[GroupVersion]) -> dict[str, Any]:
    """A User as it was (contract §3), with `custom_attributes` and `roles` computed with today's maps."""
    data = dict(kept)
    data["custom_attributes"] = custom_attributes(data.get("raw") or {}, directory.attribute_map)
    data["roles"] = roles(((g.group_id, g.data.get("name") or "") for g in groups), directory.role_map)
    return data


def snapshot_users(
    *, directory: Directory, point: Point, offset: int, limit: int, active: bool | None = None
) -> list[dict[str, Any]]:
    """A page of the directory's users at the point, oldest first, each with `groups` (ids) then."""
    rows = _at(UserVersion.objects.filter(directory=directory), point)
    if active is not None:
        rows = rows.filter(data__active=active)
    page = list(rows.order_by("created_at", "born", "user_id")[offset : offset + limit])
    groups = _memberships_of(directory, point, [row.user_id for row in page])
    users = []
    for row in page:
        user = _user(directory, row.data, groups.get(row.user_id, []))
        user["groups"] = [str(g.group_id) for g in groups.get(row.user_id, [])]
        users.append(user)
    return users


def snapshot_groups(*, directory: Directory, point: Point, offset: int, limit: int) -> list[dict[str, Any]]:
    """A page of the directory's groups at the point, oldest first, each with `members` (a count) then."""
    rows = _at(GroupVersion.objects.filter(directory=directory), point)
    page = list(rows.order_by("created_at", "born", "group_id")[offset : offset + limit])
    counts = dict(
        _at(MembershipSpan.objects.filter(directory=directory, group_id__in=[g.group_id for g in page]), point)
        .values("group_id")
        .annotate(n=Count("id"))
        .values_list("group_id", "n")
        .order_by()
    )
    return [dict(row.data) | {"members": counts.get(row.group_id, 0)} for row in page]


def snapshot_group_members(
    *, directory: Directory, point: Point, group_id: uuid.UUID, offset: int, limit: int
) -> list[str]:
    """The ids of the users in the group at the point, in the order they joined. A group that did not
    exist then is a 404."""
    if not _at(GroupVersion.objects.filter(directory=directory, group_id=group_id), point).exists():
        raise NotFound("Group not found at that point.")
    spans = _at(MembershipSpan.objects.filter(directory=directory, group_id=group_id), point)
    return [
        str(u) for u in spans.order_by("valid_from", "id").values_list("user_id", flat=True)[offset : offset + limit]
    ]


# --- the change between two points ---------------------------------------------------------------------


def _changed(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    """`{"id", "before", "after"}` with the fields `previous_attributes` names (contract §5.1), or None
    when none of them differs (changed and changed back is no change)."""
    previous = previous_attributes(before, after)
    if not previous:
        return None
    later: dict[str, Any] = {field: after.get(field) for field in previous if field != "raw"}
    if "raw" in previous:
        new_raw = after.get("raw") or {}
        later["raw"] = {key: new_raw.get(key) for key in previous["raw"]}
    return {"id": after["id"], "before": previous, "after": later}


def _ending(queryset: Any, a: int, b: int) -> Any:
    """Rows valid at `a` that ended by `b`: what a window (a, b] took away or replaced."""
    return queryset.filter(valid_from__lte=a, valid_to__gt=a, valid_to__lte=b)


def _starting(queryset: Any, a: int, b: int) -> Any:
    """Rows that a window (a, b] made and that still held at `b`."""
    return queryset.filter(valid_from__gt=a, valid_from__lte=b, valid_to__gt=b)


def _version_diff(
    before: dict[uuid.UUID, Any], after: dict[uuid.UUID, Any], render_before: Any, render_after: Any
) -> dict[str, list[Any]]:
    created = [render_after(after[key]) for key in after if key not in before]
    deleted = [render_before(before[key]) for key in before if key not in after]
    updated = []
    for key in before:
        if key in after:
            change = _changed(render_before(before[key]), render_after(after[key]))
            if change is not None:
                updated.append(change)
    return {"created": created, "deleted": deleted, "updated": updated}


def _versions(queryset: Any, key: str) -> dict[uuid.UUID, dict[str, Any]]:
    """`{id: data}` of the rows, oldest first. Read as text and decoded with orjson, without model
    instances: a diff across 10,000 events reads about as many rows (bench/README.md, "Code kept for
    speed", "History diff without model instances")."""
    rows = queryset.order_by("created_at", "born", key).values_list(key, Cast("data", TextField()))
    return {object_id: orjson.loads(text) for object_id, text in rows}


def history_diff(*, directory: Directory, start: Point, end: Point) -> dict[str, Any]:
    """The net change from `start` to `end` (contract §5.3): users and groups created, deleted (as they
    were) and updated (before and after of the changed fields), memberships added and removed."""
    a, b = start.sequence, end.sequence
    users = UserVersion.objects.filter(directory=directory)
    users_before = _versions(_ending(users, a, b), "user_id")
    users_after = _versions(_starting(users, a, b), "user_id")
    spans = MembershipSpan.objects.filter(directory=directory).order_by("valid_from", "id")
    pairs_before = list(dict.fromkeys(_ending(spans, a, b).values_list("group_id", "user_id")))
    pairs_after = list(dict.fromkeys(_starting(spans, a, b).values_list("group_id", "user_id")))
    before_set, after_set = set(pairs_before), set(pairs_after)
    groups_a: dict[uuid.UUID, list[GroupVersion]] = {}
    groups_b: dict[uuid.UUID, list[GroupVersion]] = {}
    if directory.role_map:
        # A user's roles follow its groups: one whose memberships (or whose groups' names) changed in the
        # window may be "updated" with no version of its own in it.
        renamed = {row.group_id for row in _ending(GroupVersion.objects.filter(directory=directory), a, b)}
        moved = {u for _g, u in before_set ^ after_set}
        if renamed:
            moved |= set(
                spans.filter(group_id__in=renamed, valid_from__lte=b, valid_to__gt=a).values_list("user_id", flat=True)
            )
        moved -= set(users_before) | set(users_after)
        if moved:
            unchanged = _at(users.filter(user_id__in=moved, valid_to__gt=b), start).filter(valid_from__lte=a)
            for user_id, data in _versions(unchanged, "user_id").items():
                users_before[user_id] = users_after[user_id] = data
        groups_a = _memberships_of(directory, start, list(users_before))
        groups_b = _memberships_of(directory, end, list(users_after))
    groups = GroupVersion.objects.filter(directory=directory)
    groups_before = _versions(_ending(groups, a, b), "group_id")
    groups_after = _versions(_starting(groups, a, b), "group_id")
    return {
        "users": _version_diff(
            users_before,
            users_after,
            lambda data: _user(directory, data, groups_a.get(uuid.UUID(data["id"]), [])),
            lambda data: _user(directory, data, groups_b.get(uuid.UUID(data["id"]), [])),
        ),
        "groups": _version_diff(groups_before, groups_after, dict, dict),
        "memberships": {
            "added": [{"group_id": str(g), "user_id": str(u)} for g, u in pairs_after if (g, u) not in before_set],
            "removed": [{"group_id": str(g), "user_id": str(u)} for g, u in pairs_before if (g, u) not in after_set],
        },
    }


# The order in which a diff's lists are paged through.
DIFF_LISTS = (
    ("users", "created"),
    ("users", "deleted"),
    ("users", "updated"),
    ("groups", "created"),
    ("groups", "deleted"),
    ("groups", "updated"),
    ("memberships", "added"),
    ("memberships", "removed"),
)


def diff_page(diff: dict[str, Any], *, offset: int, limit: int) -> tuple[dict[str, Any], int | None]:
    """Items `offset … offset + limit` of the diff's lists taken one after another (DIFF_LISTS), in the
    diff's shape; and the offset of the next page (None when this is the last)."""
    page: dict[str, Any] = {"users": {}, "groups": {}, "memberships": {}}
    position = 0
    for outer, inner in DIFF_LISTS:
        items = diff[outer][inner]
        start = min(max(offset - position, 0), len(items))
        stop = min(max(offset + limit - position, 0), len(items))
        page[outer][inner] = items[start:stop]
        position += len(items)
    return page, (offset + limit if offset + limit < position else None)


def diff_cursor(*, start: int, end: int, offset: int) -> str:
    """An opaque cursor for the next page of one diff: both points are fixed by number, so `to` meaning
    "now" does not move between pages."""
    text = orjson.dumps({"f": start, "t": end, "o": offset})
    return base64.urlsafe_b64encode(text).decode().rstrip("=")


def diff_cursor_read(cursor: str) -> tuple[int, int, int]:
    """(from, to, offset) of a cursor; a 400 for anything `diff_cursor` did not make."""
    try:
        raw = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        values = (raw["f"], raw["t"], raw["o"])
    except (ValueError, TypeError, KeyError, binascii.Error, orjson.JSONDecodeError):
        values = None
    if values is None or not all(type(v) is int and 0 <= v < 2**62 for v in values) or values[0] > values[1]:
        raise ValidationFailed("cursor is not one this API gave.", field="cursor")
    return values
