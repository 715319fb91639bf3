"""REST API: the changes a directory's deprovision guard holds (contract §4.2), `…/<id>/held-changes` to list
them, `…/held-changes/approve` and `…/held-changes/discard` to resolve them. Audited with the API key's name."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from core.apiinput import json_object_body, page_bounds
from core.envelope import ok
from directories.guard.rendering import held_change_data
from directories.guard.selectors import held_changes
from directories.guard.services import held_changes_resolve, held_resolve_input
from restapi import openapi_common as doc
from restapi import openapi_held_changes as held_doc
from restapi.apikeys import actor_of
from restapi.apis import ApiView, directory_or_404
from restapi.openapi_marks import extend_schema


class HeldChangesApi(ApiView):
    @extend_schema(
        operation_id="directory_held_changes_list",
        summary="List the changes the deprovision guard holds",
        description="In the order they were held (and are applied on approval). The identity provider was answered "
        "as if each had been applied; the users, webhooks and changes feed are as before it until it is approved.",
        parameters=[doc.path_uuid("directory_id"), doc.PAGE_OFFSET, doc.PAGE_LIMIT],
        responses={200: held_doc.HeldChangeListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, directory_id: str) -> Response:
        directory = directory_or_404(directory_id)
        offset, limit = page_bounds(request)
        changes = held_changes(directory=directory)[offset : offset + limit] if limit else []
        return ok([held_change_data(change) for change in changes])


def _resolve(request: Request, directory_id: str, *, approve: bool) -> Response:
    directory = directory_or_404(directory_id)
    ids = held_resolve_input(json_object_body(request))
    resolved = held_changes_resolve(directory=directory, ids=ids, approve=approve, actor=actor_of(request))
    return ok({"approved" if approve else "discarded": resolved.count})


class HeldChangesApproveApi(ApiView):
    @extend_schema(
        operation_id="directory_held_changes_approve",
        summary="Apply held changes",
        description="Applies the chosen held changes (all with an empty object) in the order they were held, in one "
        "transaction: each produces its normal event now (numbered now, with held_since, the time it was held). "
        "When nothing is held any more the guard re-arms with an empty window.",
        parameters=[doc.path_uuid("directory_id")],
        request=held_doc.HeldResolveInput,
        responses={200: held_doc.ApprovedEnvelope, **doc.errors(404, 413)},
    )
    def post(self, request: Request, directory_id: str) -> Response:
        return _resolve(request, directory_id, approve=True)


class HeldChangesDiscardApi(ApiView):
    @extend_schema(
        operation_id="directory_held_changes_discard",
        summary="Drop held changes",
        description="Drops the chosen held changes (all with an empty object): the identity provider's view of those "
        "users is the application's again, so its next push or import sends them afresh. No event. When "
        "nothing is held any more the guard re-arms with an empty window.",
        parameters=[doc.path_uuid("directory_id")],
        request=held_doc.HeldResolveInput,
        responses={200: held_doc.DiscardedEnvelope, **doc.errors(404, 413)},
    )
    def post(self, request: Request, directory_id: str) -> Response:
        return _resolve(request, directory_id, approve=False)
