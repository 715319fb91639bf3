"""A directory's history (contract §5.3), for admins: the same routes as the REST API's, under
`…/directories/<id>/history/…` and `…/directories/<id>/diff`, answered by history.reading."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminView
from core.envelope import ok
from history.reading import diff_answer, groups_answer, members_answer, users_answer


class AdminHistoryUsersApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        """The directory's users at `at` or `sequence` (default now), each with its groups then; `as_of`."""
        data, extra = users_answer(self._directory(directory_id), request.query_params)
        return ok(data, extra=extra)


class AdminHistoryGroupsApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        """The directory's groups at the point, each with its member count then; `as_of`."""
        data, extra = groups_answer(self._directory(directory_id), request.query_params)
        return ok(data, extra=extra)


class AdminHistoryGroupMembersApi(AdminView):
    def get(self, request: Request, directory_id: str, group_id: str) -> Response:
        """The ids of the users in the group at the point; `as_of`."""
        data, extra = members_answer(self._directory(directory_id), group_id, request.query_params)
        return ok(data, extra=extra)


class AdminHistoryDiffApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        """The net change between `from` and `to` (default now), paged with the `next` cursor; `from`, `to`."""
        data, extra = diff_answer(self._directory(directory_id), request.query_params)
        return ok(data, extra=extra)
