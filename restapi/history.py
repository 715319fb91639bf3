"""REST API: a directory's history (contract §5.3): its users, groups and a group's members at a point,
and the diff between two points. Parsing and answering are history.reading's, shared with the admin API
and the portal."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from core.envelope import ok
from core.errors import NotFound
from directories.models import Directory
from directories.selectors import directory_get
from history.reading import diff_answer, groups_answer, members_answer, users_answer
from restapi import openapi_common as doc
from restapi import openapi_history as history_doc
from restapi.apis import ApiView
from restapi.openapi_marks import extend_schema


def _directory(request: Request, directory_id: str) -> Directory:
    """The directory; with `tenant` or `product` given, one of another tenant or product is a 404 too."""
    directory = directory_get(
        directory_id=directory_id,
        tenant=request.query_params.get("tenant"),
        product=request.query_params.get("product"),
    )
    if directory is None:
        raise NotFound("Directory not found.")
    return directory


_SCOPE = [doc.path_uuid("directory_id"), history_doc.TENANT, history_doc.PRODUCT]
_POINT = [history_doc.AT, history_doc.SEQUENCE, doc.PAGE_OFFSET, doc.PAGE_LIMIT]


class HistoryUsersApi(ApiView):
    @extend_schema(
        operation_id="directory_history_users",
        summary="The users of a directory at a point, with their groups then",
        description=history_doc.SNAPSHOT_DESCRIPTION,
        parameters=[*_SCOPE, *_POINT, history_doc.ACTIVE],
        responses={200: history_doc.HistoryUserListEnvelope, **doc.errors(404, 410)},
    )
    def get(self, request: Request, directory_id: str) -> Response:
        data, extra = users_answer(_directory(request, directory_id), request.query_params)
        return ok(data, extra=extra)


class HistoryGroupsApi(ApiView):
    @extend_schema(
        operation_id="directory_history_groups",
        summary="The groups of a directory at a point, with their member counts then",
        description=history_doc.SNAPSHOT_DESCRIPTION,
        parameters=[*_SCOPE, *_POINT],
        responses={200: history_doc.HistoryGroupListEnvelope, **doc.errors(404, 410)},
    )
    def get(self, request: Request, directory_id: str) -> Response:
        data, extra = groups_answer(_directory(request, directory_id), request.query_params)
        return ok(data, extra=extra)


class HistoryGroupMembersApi(ApiView):
    @extend_schema(
        operation_id="directory_history_group_members",
        summary="The user ids in a group at a point",
        description="In the order they joined, paged. A group that did not exist at that point is a 404.",
        parameters=[*_SCOPE, doc.path_uuid("group_id"), *_POINT],
        responses={200: history_doc.HistoryMemberListEnvelope, **doc.errors(404, 410)},
    )
    def get(self, request: Request, directory_id: str, group_id: str) -> Response:
        data, extra = members_answer(_directory(request, directory_id), group_id, request.query_params)
        return ok(data, extra=extra)


class HistoryDiffApi(ApiView):
    @extend_schema(
        operation_id="directory_history_diff",
        summary="What changed in a directory between two points",
        description=history_doc.DIFF_DESCRIPTION,
        parameters=[*_SCOPE, history_doc.FROM, history_doc.TO, history_doc.CURSOR, history_doc.DIFF_LIMIT],
        responses={200: history_doc.DiffEnvelope, **doc.errors(404, 410)},
    )
    def get(self, request: Request, directory_id: str) -> Response:
        data, extra = diff_answer(_directory(request, directory_id), request.query_params)
        return ok(data, extra=extra)
