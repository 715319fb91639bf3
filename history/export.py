"""`manage.py directories export <id> --at <time>` (contract §5.3): the directory as it was at a point, as
the rows of the export (JSON lines `{"type": "user"|"group", "data": …}`): each user with its `groups` then,
each group with its `members` then (`[{group_id, user_id}]`, as the REST group detail), oldest first, read
in pages so memory stays flat."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.management.base import CommandError

from core.errors import RosterError
from directories.models import Directory
from history.reading import point_named
from history.selectors import Point, snapshot_group_members, snapshot_groups, snapshot_users

CHUNK = 1000


def export_at(directory: Directory, at: str) -> tuple[str, Iterator[tuple[str, dict[str, Any]]]]:
    """(" as of sequence n (time)", the rows) of the directory at `at`: a time or an event number."""
    try:
        point = point_named(directory, at.strip())
    except RosterError as exc:
        raise CommandError(f"--at: {exc.message}") from None
    when = point.data()["created_at"] or "before the first event"
    return f" as of sequence {point.sequence} ({when})", _rows(directory, point)


def _rows(directory: Directory, point: Point) -> Iterator[tuple[str, dict[str, Any]]]:
    offset = 0
    while page := snapshot_users(directory=directory, point=point, offset=offset, limit=CHUNK):
        yield from (("user", user) for user in page)
        offset += len(page)
    offset = 0
    while groups := snapshot_groups(directory=directory, point=point, offset=offset, limit=CHUNK):
        for group in groups:
            members, start = [], 0
            while ids := snapshot_group_members(
                directory=directory, point=point, group_id=group["id"], offset=start, limit=CHUNK
            ):
                members += [{"group_id": group["id"], "user_id": user_id} for user_id in ids]
                start += len(ids)
            yield "group", {key: value for key, value in group.items() if key != "members"} | {"members": members}
        offset += len(groups)
