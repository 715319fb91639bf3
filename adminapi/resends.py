"""One more attempt of chosen events of a directory (contract §5.1)."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminView
from core.apiinput import json_object_body
from core.envelope import ok
from webhooks.services import changes_resend, changes_resend_input


class AdminChangesResendApi(AdminView):
    def post(self, request: Request, directory_id: str) -> Response:
        """One more attempt of chosen events (contract §5.1): `{"from": a, "to": b}` or `{"event_ids": [...]}`;
        202 with how many were queued, audited with the admin."""
        directory = self._directory(directory_id)
        asked = changes_resend_input(json_object_body(request))
        queued = changes_resend(
            directory=directory,
            first=asked.first,
            last=asked.last,
            event_ids=asked.event_ids,
            endpoint_id=asked.endpoint_id,
            actor=self._actor(),
        )
        return ok({"queued": queued}, status=202)
