"""A directory's secrets: the SCIM secret (rotated with grace, the previous one stopped; contract §4.1), the
OAuth client secret of its SCIM endpoint (contract §4.3) and its webhook secret."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminView
from core.apiinput import json_object_body
from core.envelope import ok
from directories.rendering import directory_data, directory_with_client_secret
from directories.services import (
    directory_previous_scim_secret_revoke,
    directory_scim_oauth_secret_rotate,
    directory_scim_secret_rotate,
    directory_webhook_secret_rotate,
    scim_oauth_secret_rotation_input,
    scim_secret_rotation_input,
)


class AdminScimSecretApi(AdminView):
    def post(self, request: Request, directory_id: str) -> Response:
        """Rotate; an optional `{"grace_seconds": N}` keeps the previous secret working N seconds (§4.1)."""
        directory = self._directory(directory_id)
        grace = scim_secret_rotation_input(json_object_body(request))
        directory = directory_scim_secret_rotate(directory=directory, grace_seconds=grace, actor=self._actor())
        return ok(directory_data(directory))


class AdminPreviousScimSecretApi(AdminView):
    def delete(self, request: Request, directory_id: str) -> Response:
        """Stop the previous SCIM secret now, before the end of its grace."""
        directory, _revoked = directory_previous_scim_secret_revoke(
            directory=self._directory(directory_id), actor=self._actor()
        )
        return ok(directory_data(directory))


class AdminScimOAuthSecretApi(AdminView):
    def post(self, request: Request, directory_id: str) -> Response:
        """Create or rotate the OAuth client secret (contract §4.3): the answer shows it, once."""
        directory = self._directory(directory_id)
        scim_oauth_secret_rotation_input(json_object_body(request))
        directory, secret, _first = directory_scim_oauth_secret_rotate(directory=directory, actor=self._actor())
        return ok(directory_with_client_secret(directory, secret))


class AdminWebhookSecretApi(AdminView):
    def post(self, request: Request, directory_id: str) -> Response:
        directory = directory_webhook_secret_rotate(directory=self._directory(directory_id), actor=self._actor())
        return ok(directory_data(directory))
