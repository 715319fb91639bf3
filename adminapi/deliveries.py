"""A directory's webhook delivery log (`?failed=true` for the failures)."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminView, paged
from core.envelope import ok
from core.errors import ValidationFailed
from webhooks.rendering import delivery_data
from webhooks.selectors import delivery_list


class AdminDirectoryEventsApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        directory = self._directory(directory_id)
        raw = (request.query_params.get("failed") or "").strip().lower()
        if raw in ("", "all"):
            failed = None
        elif raw in ("true", "1", "yes"):
            failed = True
        elif raw in ("false", "0", "no"):
            failed = False
        else:
            raise ValidationFailed("failed must be true or false.", field="failed")
        qs = delivery_list(directory=directory, failed=failed)
        return ok([delivery_data(d) for d in paged(request, qs)])
