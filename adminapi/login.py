"""`POST /user/_login` (contract §6): an admin token and a JWT for the root token's holder."""

from __future__ import annotations

from django.conf import settings
from rest_framework.request import Request
from rest_framework.response import Response

from adminapi.base import AdminApiView
from adminapi.credentials import AdminThrottled, actor_of, root_token_matches
from adminapi.rendering import admin_token_data, admin_user_data
from adminauth import services
from adminauth.throttle import failure_record, failures_clear, throttle_wait_seconds
from core.apiinput import json_object_body
from core.clientaddress import client_ip
from core.envelope import fail
from core.errors import ValidationFailed


class AdminLoginApi(AdminApiView):
    """POST /user/_login: root token in `Authorization: token=<root>`, the admin's email in claims."""

    authentication_classes: list = []

    def post(self, request: Request) -> Response:
        if not settings.ADMIN_ROOT_TOKEN:
            # No root token configured: the admin API's login does not exist.
            return fail("Not found.", 404)
        ip = client_ip(request)
        wait = throttle_wait_seconds(ip=ip)
        if wait:
            raise AdminThrottled(wait)
        if not root_token_matches(_root_from_header(request.META.get("HTTP_AUTHORIZATION"))):
            failure_record(ip=ip)
            return fail("Missing or invalid root token. Send Authorization: token=<ADMIN_ROOT_TOKEN>.", 401)
        failures_clear(ip=ip)
        body = json_object_body(request)
        claims = body.get("claims")
        if not isinstance(claims, dict):
            raise ValidationFailed("claims must be an object with email and upstreamToken.", field="claims")
        upstream = claims.get("upstreamToken")
        if upstream is not None and not isinstance(upstream, str):
            raise ValidationFailed("claims.upstreamToken must be a string.", field="upstreamToken")
        user, token, secret, jwt_token = services.admin_login_record(email=claims.get("email"), actor=actor_of(request))
        return Response(
            {
                "user": admin_user_data(user),
                "token": jwt_token,
                "adminToken": admin_token_data(token, secret=secret),
            }
        )


def _root_from_header(header: str | None) -> str | None:
    """The root token of `Authorization: token=<root>` (the `token` key is case-insensitive)."""
    if not header:
        return None
    key, eq, value = header.strip().partition("=")
    if not eq or key.strip().lower() != "token":
        return None
    value = value.strip()
    return value or None
