"""Admin tokens (another one for the caller, disabling one) and admin users (the list, a timezone)."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminView, paged
from adminapi.rendering import admin_token_data, admin_user_list_data
from adminauth import selectors, services
from core.apiinput import fields_known, json_object_body
from core.envelope import ok
from core.errors import NotFound, ValidationFailed


class AdminTokensApi(AdminView):
    def post(self, request: Request) -> Response:
        row, secret = services.admin_token_create(actor=self._actor())
        return ok(admin_token_data(row, secret=secret), status=201)


class AdminTokenApi(AdminView):
    def patch(self, request: Request, token_id: str) -> Response:
        """Disable a token. Any admin may disable any admin's token: revoking a colleague's leaked
        credential must not wait for them. Re-enabling is refused; create a new token instead."""
        token = selectors.admin_token_get(token_id=token_id)
        if token is None:
            raise NotFound("Admin token not found.")
        body = json_object_body(request)
        fields_known(body, ["disabled"], verb="Updatable")
        disabled = body.get("disabled")
        if disabled is not True:
            if disabled is False:
                raise ValidationFailed("A disabled token cannot be re-enabled; create a new one.", field="disabled")
            raise ValidationFailed('Send {"disabled": true}.', field="disabled")
        token = services.admin_token_disable(token=token, actor=self._actor())
        return ok(admin_token_data(token))


class AdminUsersApi(AdminView):
    def get(self, request: Request) -> Response:
        return ok([admin_user_list_data(u) for u in paged(request, selectors.admin_user_list())])


class AdminUserApi(AdminView):
    def put(self, request: Request, user_id: str) -> Response:
        user = selectors.admin_user_get(user_id=user_id)
        if user is None:
            raise NotFound("Admin user not found.")
        body = json_object_body(request)
        fields_known(body, ["timezone"], verb="Updatable")
        user = services.admin_user_timezone_set(user=user, timezone_name=body.get("timezone"), actor=self._actor())
        return ok(admin_user_list_data(user))
