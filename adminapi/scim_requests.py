"""A directory's SCIM request log (contract §4.1)."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminView, paged
from core.apiinput import query_boolean, query_http_status
from core.envelope import ok
from directories.activity.rendering import scim_log_entry_data
from directories.activity.selectors import scim_log_list


class AdminDirectoryScimRequestsApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        """The SCIM request log, newest first (`failed`, `status`, paging as on the REST API)."""
        directory = self._directory(directory_id)
        failed = query_boolean(request, "failed")
        status = query_http_status(request)
        qs = scim_log_list(directory=directory, failed=failed, status=status)
        return ok([scim_log_entry_data(entry) for entry in paged(request, qs)])
