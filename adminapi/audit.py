"""The audit trail (contract §6): who did what, when, to which target."""

from __future__ import annotations

import uuid

from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminView, paged
from adminapi.rendering import audit_data
from audit.selectors import audit_list
from core.envelope import ok
from core.errors import ValidationFailed


class AdminAuditApi(AdminView):
    def get(self, request: Request) -> Response:
        directory = (request.query_params.get("directory") or "").strip() or None
        if directory is not None:
            # Only the id's form is checked: a deleted directory's entries must stay findable.
            try:
                uuid.UUID(directory)
            except ValueError:
                raise ValidationFailed("directory must be a directory id (UUID).", field="directory") from None
        qs = audit_list(
            actor=(request.query_params.get("actor") or "").strip() or None,
            action=(request.query_params.get("action") or "").strip() or None,
            directory_id=directory,
        )
        return ok([audit_data(e) for e in paged(request, qs)])
