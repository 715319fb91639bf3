"""Directories of every tenant: list and search them, create one, read, change or delete one."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminView, paged
from core.apiinput import json_object_body
from core.envelope import ok
from directories.models import Directory
from directories.rendering import directories_data, directory_data
from directories.selectors import directory_list_with_counts
from directories.services import directory_create, directory_delete, directory_update


class AdminDirectoriesApi(AdminView):
    def get(self, request: Request) -> Response:
        qs = directory_list_with_counts(
            tenant=request.query_params.get("tenant") or None,
            product=request.query_params.get("product") or None,
            search=(request.query_params.get("q") or "").strip() or None,
        )
        directories = list(paged(request, qs))
        pages = zip(directories, directories_data(directories), strict=True)
        return ok([_with_counts(data, directory) for directory, data in pages])

    def post(self, request: Request) -> Response:
        directory = directory_create(data=json_object_body(request), actor=self._actor())
        return ok(directory_data(directory), status=201)


def _with_counts(data: dict[str, Any], directory: Directory) -> dict[str, Any]:
    data["user_count"] = directory.user_count
    data["group_count"] = directory.group_count
    return data


class AdminDirectoryApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        return ok(directory_data(self._directory(directory_id)))

    def patch(self, request: Request, directory_id: str) -> Response:
        directory = self._directory(directory_id)
        directory, _changed = directory_update(directory=directory, data=json_object_body(request), actor=self._actor())
        return ok(directory_data(directory))

    def delete(self, request: Request, directory_id: str) -> Response:
        directory_delete(directory=self._directory(directory_id), actor=self._actor())
        return ok({})
