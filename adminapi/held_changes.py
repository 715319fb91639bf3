"""The changes a directory's deprovision guard holds (contract §4.2): list, approve, discard."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminView, paged
from core.apiinput import json_object_body
from core.envelope import ok
from directories.guard.rendering import held_change_data
from directories.guard.selectors import held_changes
from directories.guard.services import held_changes_resolve, held_resolve_input


class AdminHeldChangesApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        """The changes the directory's deprovision guard holds, in the order they were held (contract §4.2)."""
        qs = held_changes(directory=self._directory(directory_id))
        return ok([held_change_data(change) for change in paged(request, qs)])


class _AdminHeldResolveApi(AdminView):
    approve = True

    def post(self, request: Request, directory_id: str) -> Response:
        """Approve (apply, with their events) or discard held changes: `{"ids": [...]}`, or `{}` for all;
        audited with the admin and the count."""
        directory = self._directory(directory_id)
        ids = held_resolve_input(json_object_body(request))
        resolved = held_changes_resolve(directory=directory, ids=ids, approve=self.approve, actor=self._actor())
        return ok({"approved" if self.approve else "discarded": resolved.count})


class AdminHeldChangesApproveApi(_AdminHeldResolveApi):
    approve = True


class AdminHeldChangesDiscardApi(_AdminHeldResolveApi):
    approve = False
