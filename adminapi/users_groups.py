"""A directory's users and groups."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminView, paged
from core.envelope import ok
from directories.rendering import group_data, user_data
from directories.selectors import directory_groups, directory_users, user_groups_attach


class AdminDirectoryUsersApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        directory = self._directory(directory_id)
        users = paged(request, directory_users(directory=directory))
        if directory.role_map:
            user_groups_attach(users=users)  # roles come from the users' groups (one query)
        return ok([user_data(u, directory=directory) for u in users])


class AdminDirectoryGroupsApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        qs = directory_groups(directory=self._directory(directory_id))
        return ok([group_data(g) for g in paged(request, qs)])
