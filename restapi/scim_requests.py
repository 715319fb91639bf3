"""REST API: a directory's SCIM request log (`GET /api/v1/directory-sync/<id>/scim-requests`, contract §4.1)."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from core.apiinput import page_bounds, query_boolean, query_http_status
from core.envelope import ok
from core.errors import NotFound
from directories.activity.rendering import scim_log_entry_data
from directories.activity.selectors import scim_log_list
from directories.selectors import directory_get
from restapi import openapi_common as doc
from restapi import openapi_scim_activity as scim_doc
from restapi.apis import ApiView
from restapi.openapi_marks import extend_schema


class DirectoryScimRequestsApi(ApiView):
    @extend_schema(
        operation_id="directory_scim_requests_list",
        summary="The SCIM request log of a directory",
        description=(
            "Newest first. Every SCIM request that ended in a 4xx or 5xx (a 401 naming this directory included) "
            "is kept, successful ones while the directory's log_scim_requests is on, for SCIM_LOG_RETENTION_DAYS "
            "days. Bodies are capped (16 KiB asked, 4 KiB answered) with password values replaced by ***; no "
            "header is kept but the user agent."
        ),
        parameters=[
            doc.path_uuid("directory_id"),
            doc.PAGE_OFFSET,
            doc.PAGE_LIMIT,
            scim_doc.SCIM_FAILED,
            scim_doc.HTTP_STATUS,
        ],
        responses={200: scim_doc.ScimRequestListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, directory_id: str) -> Response:
        directory = directory_get(directory_id=directory_id)
        if directory is None:
            raise NotFound("Directory not found.")
        offset, limit = page_bounds(request)
        failed = query_boolean(request, "failed")
        status = query_http_status(request)
        if limit == 0:
            return ok([])
        entries = scim_log_list(directory=directory, failed=failed, status=status)[offset : offset + limit]
        return ok([scim_log_entry_data(entry) for entry in entries])
