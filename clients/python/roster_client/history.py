"""A directory's history (`roster.history`, contract §5.3): its users, groups and a group's members as they
were at a moment or after an event number, and what changed between two points. One route per method,
like client.py's namespaces.

A point is `at` (a datetime, or an ISO 8601 string) or `sequence` (an event number); neither means now.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Optional, Union

from roster_client._generated.models import Diff, HistoryGroup, HistoryUser
from roster_client._http import Namespace, segment
from roster_client.paging import PAGE_LIMIT_MAX, Paged, paged

BASE = "/api/v1/directory-sync"

Moment = Union[datetime, str, int]


def _point(at: Optional[Union[datetime, str]], sequence: Optional[int]) -> dict[str, Any]:
    if at is not None and sequence is not None:
        raise ValueError("give at or sequence, not both")
    return {"at": at, "sequence": sequence}


class History(Namespace):
    def users(
        self,
        directory_id: str,
        *,
        at: Optional[Union[datetime, str]] = None,
        sequence: Optional[int] = None,
        active: Optional[bool] = None,
        page_limit: int = 100,
    ) -> Paged[HistoryUser]:
        """The directory's users at the point, oldest first, each with `groups` (ids) as they were then."""
        params = {**_point(at, sequence), "active": active}
        return paged(self._t, f"{BASE}/{segment(directory_id)}/history/users", HistoryUser, params, page_limit)

    def groups(
        self,
        directory_id: str,
        *,
        at: Optional[Union[datetime, str]] = None,
        sequence: Optional[int] = None,
        page_limit: int = 100,
    ) -> Paged[HistoryGroup]:
        """The directory's groups at the point, oldest first, each with `members` (a count) then."""
        path = f"{BASE}/{segment(directory_id)}/history/groups"
        return paged(self._t, path, HistoryGroup, _point(at, sequence), page_limit)

    def group_members(
        self,
        directory_id: str,
        group_id: str,
        *,
        at: Optional[Union[datetime, str]] = None,
        sequence: Optional[int] = None,
        page_limit: int = 1000,
    ) -> list[str]:
        """The ids of the users in the group at the point, in the order they joined (every page read)."""
        if not 1 <= page_limit <= PAGE_LIMIT_MAX:
            raise ValueError(f"page_limit must be from 1 to {PAGE_LIMIT_MAX}")
        path = f"{BASE}/{segment(directory_id)}/history/groups/{segment(group_id)}/members"
        members: list[str] = []
        while True:
            query = {**_point(at, sequence), "pageOffset": len(members), "pageLimit": page_limit}
            page = self._t.call("GET", path, params=query).body.get("data") or []
            members += [str(user_id) for user_id in page]
            if len(page) < page_limit:
                return members

    def diff_pages(
        self, directory_id: str, *, from_: Moment, to: Optional[Moment] = None, page_limit: int = 1000
    ) -> Iterator[Diff]:
        """The diff's pages, each a Diff with its share of the lists, following `next` to the last."""
        path = f"{BASE}/{segment(directory_id)}/diff"
        params: dict[str, Any] = {"from": from_, "to": to, "pageLimit": page_limit}
        while True:
            data = self._t.call("GET", path, params=params).body["data"]
            yield Diff.from_dict(data)
            if not data.get("next"):
                return
            params = {"cursor": data["next"], "pageLimit": page_limit}

    def diff(self, directory_id: str, *, from_: Moment, to: Optional[Moment] = None, page_limit: int = 1000) -> Diff:
        """The net change from `from_` to `to` (default: now), a time or an event number each, every page read
        and joined: users and groups created, deleted and updated (before/after), memberships added and removed."""
        joined: dict[str, Any] = {
            "users": {"created": [], "deleted": [], "updated": []},
            "groups": {"created": [], "deleted": [], "updated": []},
            "memberships": {"added": [], "removed": []},
            "next": None,
        }
        for page in self.diff_pages(directory_id, from_=from_, to=to, page_limit=page_limit):
            data = page.to_dict()
            for part in ("users", "groups", "memberships"):
                for name, items in data[part].items():
                    joined[part][name] += items
        return Diff.from_dict(joined)
