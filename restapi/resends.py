"""REST API: `POST /api/v1/directory-sync/<id>/changes/resend` (contract §5.1), one more attempt of chosen
events of a directory, asked for explicitly and audited with the API key's name."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from core.apiinput import json_body
from core.envelope import ok
from core.errors import NotFound
from directories.selectors import directory_get
from restapi import openapi_common as doc
from restapi import openapi_resends as resends_doc
from restapi.apikeys import actor_of
from restapi.apis import ApiView
from restapi.openapi_marks import extend_schema
from webhooks.services import RESEND_MAX, changes_resend, changes_resend_input


class ChangesResendApi(ApiView):
    @extend_schema(
        operation_id="directory_changes_resend",
        summary="Resend events of a directory's changes feed",
        description=(
            "One more attempt of each chosen event, in sequence order, to the directory's current webhook "
            "endpoint: the same id, sequence and body, signed with a fresh timestamp. Either a range of "
            f"sequence numbers, both ends inclusive, at most {RESEND_MAX} of them (numbers purged or not "
            "given yet are skipped), or event ids of this directory (an unknown one is a 400 and nothing is "
            "queued). Events whose attempt is still pending or under way are left as they are and not "
            "counted in queued. Nothing is ever resent automatically. 409 when the directory is "
            "deactivated or has no webhook_url."
        ),
        parameters=[doc.path_uuid("directory_id")],
        request=resends_doc.RESEND_INPUT,
        responses={202: resends_doc.ResendEnvelope, **doc.errors(404, 409, 413)},
    )
    def post(self, request: Request, directory_id: str) -> Response:
        directory = directory_get(directory_id=directory_id)
        if directory is None:
            raise NotFound("Directory not found.")
        asked = changes_resend_input(json_body(request))
        queued = changes_resend(
            directory=directory,
            first=asked.first,
            last=asked.last,
            event_ids=asked.event_ids,
            endpoint_id=asked.endpoint_id,
            actor=actor_of(request),
        )
        return ok({"queued": queued}, status=202)
