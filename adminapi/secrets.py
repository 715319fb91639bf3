"""A directory's secrets: the SCIM secret (rotated with grace, the previous one stopped; contract §4.1), the
OAuth client secrets of its SCIM endpoint (contract §4.3: the single-secret rotation, and several secrets
listed, added, revoked one by one) and its webhook secret."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminView
from core.apiinput import json_object_body
from core.envelope import ok
from directories.oauthsecrets import secret_public
from directories.rendering import directory_data, directory_with_client_secret, oauth_secret_new_data
from directories.services import (
    directory_previous_scim_secret_revoke,
    directory_scim_oauth_secret_add,
    directory_scim_oauth_secret_revoke,
    directory_scim_oauth_secret_rotate,
    directory_scim_secret_rotate,
    directory_webhook_secret_rotate,
    scim_oauth_secret_add_input,
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


class AdminScimOAuthSecretsApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        """The OAuth client secrets, newest first, never their value (contract §4.3)."""
        directory = self._directory(directory_id)
        return ok([secret_public(entry) for entry in directory.scim_oauth_secrets])

    def post(self, request: Request, directory_id: str) -> Response:
        """Add a client secret (`{"expires_in_days": d}`, 1…1095, default 365): 201, shown once; 409 past 5."""
        directory = self._directory(directory_id)
        days = scim_oauth_secret_add_input(json_object_body(request))
        _directory, entry, secret = directory_scim_oauth_secret_add(
            directory=directory, expires_in_days=days, actor=self._actor()
        )
        return ok(oauth_secret_new_data(entry, secret), status=201)


class AdminScimOAuthSecretsItemApi(AdminView):
    def delete(self, request: Request, directory_id: str, secret_id: str) -> Response:
        """Revoke one client secret, and end its tokens, at once on every node: 204; unknown: 404."""
        directory = self._directory(directory_id)
        directory_scim_oauth_secret_revoke(directory=directory, secret_id=secret_id, actor=self._actor())
        return Response(status=204)


class AdminWebhookSecretApi(AdminView):
    def post(self, request: Request, directory_id: str) -> Response:
        directory = directory_webhook_secret_rotate(directory=self._directory(directory_id), actor=self._actor())
        return ok(directory_data(directory))
