"""The admin API under /auditlog/admin/v1. Thin views: parse, call one service, render.

Every answer is the {data, error} envelope except a successful `_login`, which is the bare object
Jackson's clients expect. Lists are paged with pageOffset/pageLimit (default 100, at most 1000).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from adminapi.credentials import AdminAuthentication, AdminThrottled, root_token_matches
from adminapi.rendering import admin_token_data, admin_user_data, admin_user_list_data, audit_data
from adminauth import selectors, services
from adminauth.held import held_changes_resolve_audited
from adminauth.resends import changes_resend_audited
from adminauth.throttle import client_ip, failure_record, failures_clear, throttle_wait_seconds
from core.apiinput import (
    fields_known,
    json_object_body,
    page_bounds,
    query_boolean,
    query_check,
    query_http_status,
)
from core.envelope import EnvelopeOnly, fail, fail_json, ok
from core.errors import NotFound, ValidationFailed
from directories.activity.rendering import scim_log_entry_data
from directories.activity.selectors import scim_log_list
from directories.guard.rendering import held_change_data
from directories.guard.selectors import held_changes
from directories.guard.services import held_resolve_input
from directories.models import Directory
from directories.rendering import (
    directories_data,
    directory_data,
    directory_with_client_secret,
    group_data,
    user_data,
)
from directories.selectors import (
    directory_get,
    directory_groups,
    directory_list_with_counts,
    directory_users,
    user_groups_attach,
)
from directories.services import scim_oauth_secret_rotation_input, scim_secret_rotation_input
from setuplinks.rendering import setup_link_data
from setuplinks.selectors import setup_link_get, setup_link_list
from setuplinks.services import Actor, setup_link_create, setup_link_input, setup_link_revoke
from webhooks.rendering import delivery_data
from webhooks.selectors import delivery_list
from webhooks.services import changes_resend_input


def paged(request: Request, qs: QuerySet) -> list:
    """One page of `qs` by pageOffset/pageLimit, read as on the REST API (core.apiinput)."""
    offset, limit = page_bounds(request)
    return list(qs[offset : offset + limit]) if limit else []


def _body(request: Request) -> dict[str, Any]:
    # Read like a REST body: 413 past the size limit, NUL/surrogates/64-bit checked, any Content-Type.
    return json_object_body(request)


class AdminApiView(EnvelopeOnly, APIView):
    """What every admin API view does: checks the query after authentication (a stranger learns
    nothing), and says when to retry a throttled request."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        query_check(request)

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        if isinstance(exc, exceptions.Throttled) and exc.wait:
            response["Retry-After"] = str(int(exc.wait))
        return response


class AdminView(AdminApiView):
    authentication_classes = [AdminAuthentication]

    def _directory(self, directory_id: str) -> Directory:
        directory = directory_get(directory_id=directory_id)
        if directory is None:
            raise NotFound("Directory not found.")
        return directory

    def _ip(self) -> str | None:
        return client_ip(self.request)

    def _actor(self) -> Actor:
        return Actor(name=self.request.user.email, via="admin-api", admin=self.request.user, client_ip=self._ip())


class LoginApi(AdminApiView):
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
        body = _body(request)
        claims = body.get("claims")
        if not isinstance(claims, dict):
            raise ValidationFailed("claims must be an object with email and upstreamToken.", field="claims")
        upstream = claims.get("upstreamToken")
        if upstream is not None and not isinstance(upstream, str):
            raise ValidationFailed("claims.upstreamToken must be a string.", field="upstreamToken")
        user, token, secret, jwt_token = services.admin_login_record(email=claims.get("email"), client_ip=ip)
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


class DirectoriesApi(AdminView):
    def get(self, request: Request) -> Response:
        qs = directory_list_with_counts(
            tenant=request.query_params.get("tenant") or None,
            product=request.query_params.get("product") or None,
            search=(request.query_params.get("q") or "").strip() or None,
        )
        directories = list(paged(request, qs))
        pages = zip(directories, directories_data(directories), strict=True)
        return ok([_with_counts(data, directory) for directory, data in pages])

    def post(self, request: Request) -> Response:
        directory = services.admin_directory_create(actor=request.user, client_ip=self._ip(), data=_body(request))
        return ok(directory_data(directory), status=201)


def _with_counts(data: dict[str, Any], directory: Directory) -> dict[str, Any]:
    data["user_count"] = directory.user_count
    data["group_count"] = directory.group_count
    return data


class DirectoryApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        return ok(directory_data(self._directory(directory_id)))

    def patch(self, request: Request, directory_id: str) -> Response:
        directory = self._directory(directory_id)
        directory = services.admin_directory_update(
            actor=request.user, client_ip=self._ip(), directory=directory, data=_body(request)
        )
        return ok(directory_data(directory))

    def delete(self, request: Request, directory_id: str) -> Response:
        directory = self._directory(directory_id)
        services.admin_directory_delete(actor=request.user, client_ip=self._ip(), directory=directory)
        return ok({})


class ScimSecretApi(AdminView):
    def post(self, request: Request, directory_id: str) -> Response:
        """Rotate; an optional `{"grace_seconds": N}` keeps the previous secret working N seconds (§4.1)."""
        directory = self._directory(directory_id)
        grace = scim_secret_rotation_input(_body(request))
        directory = services.admin_directory_scim_secret_rotate(
            actor=request.user, client_ip=self._ip(), directory=directory, grace_seconds=grace
        )
        return ok(directory_data(directory))


class ScimOAuthSecretApi(AdminView):
    def post(self, request: Request, directory_id: str) -> Response:
        """Create or rotate the OAuth client secret (contract §4.3): the answer shows it, once."""
        directory = self._directory(directory_id)
        scim_oauth_secret_rotation_input(_body(request))
        directory, secret = services.admin_directory_scim_oauth_secret_rotate(
            actor=request.user, client_ip=self._ip(), directory=directory
        )
        return ok(directory_with_client_secret(directory, secret))


class WebhookSecretApi(AdminView):
    def post(self, request: Request, directory_id: str) -> Response:
        directory = services.admin_directory_webhook_secret_rotate(
            actor=request.user, client_ip=self._ip(), directory=self._directory(directory_id)
        )
        return ok(directory_data(directory))


class DirectoryUsersApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        directory = self._directory(directory_id)
        users = paged(request, directory_users(directory=directory))
        if directory.role_map:
            user_groups_attach(users=users)  # roles come from the users' groups (one query)
        return ok([user_data(u, directory=directory) for u in users])


class DirectoryGroupsApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        qs = directory_groups(directory=self._directory(directory_id))
        return ok([group_data(g) for g in paged(request, qs)])


class DirectoryEventsApi(AdminView):
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


class ChangesResendApi(AdminView):
    def post(self, request: Request, directory_id: str) -> Response:
        """One more attempt of chosen events (contract §5.1): `{"from": a, "to": b}` or `{"event_ids": [...]}`;
        202 with how many were queued, audited with the admin."""
        directory = self._directory(directory_id)
        asked = changes_resend_input(_body(request))
        queued = changes_resend_audited(
            directory=directory,
            first=asked.first,
            last=asked.last,
            event_ids=asked.event_ids,
            actor=request.user,
            actor_name=request.user.email,
            via="admin-api",
            client_ip=self._ip(),
        )
        return ok({"queued": queued}, status=202)


class PreviousScimSecretApi(AdminView):
    def delete(self, request: Request, directory_id: str) -> Response:
        """Stop the previous SCIM secret now, before the end of its grace."""
        directory, _revoked = services.admin_directory_previous_scim_secret_revoke(
            actor=request.user, client_ip=self._ip(), directory=self._directory(directory_id)
        )
        return ok(directory_data(directory))


class DirectoryScimRequestsApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        """The SCIM request log, newest first (`failed`, `status`, paging as on the REST API)."""
        directory = self._directory(directory_id)
        failed = query_boolean(request, "failed")
        status = query_http_status(request)
        qs = scim_log_list(directory=directory, failed=failed, status=status)
        return ok([scim_log_entry_data(entry) for entry in paged(request, qs)])


class SetupLinksApi(AdminView):
    """A directory's setup links (contract §3.1): list them newest first, or create one (its URL shown in
    this answer only), audited with the admin."""

    def get(self, request: Request, directory_id: str) -> Response:
        directory = self._directory(directory_id)
        now = timezone.now()
        return ok([setup_link_data(link, now=now) for link in paged(request, setup_link_list(directory=directory))])

    def post(self, request: Request, directory_id: str) -> Response:
        directory = self._directory(directory_id)
        asked = setup_link_input(_body(request))
        link, token = setup_link_create(directory=directory, actor=self._actor(), asked=asked)
        return ok(setup_link_data(link, token=token), status=201)


class SetupLinkApi(AdminView):
    def delete(self, request: Request, directory_id: str, link_id: str) -> Response:
        """Revoke now, on every node: 204, also for a link already revoked or expired."""
        link = setup_link_get(directory=self._directory(directory_id), link_id=link_id)
        if link is None:
            raise NotFound("Setup link not found.")
        setup_link_revoke(link=link, actor=self._actor())
        return Response(status=204)


class HeldChangesApi(AdminView):
    def get(self, request: Request, directory_id: str) -> Response:
        """The changes the directory's deprovision guard holds, in the order they were held (contract §4.2)."""
        qs = held_changes(directory=self._directory(directory_id))
        return ok([held_change_data(change) for change in paged(request, qs)])


class _HeldResolveApi(AdminView):
    approve = True

    def post(self, request: Request, directory_id: str) -> Response:
        """Approve (apply, with their events) or discard held changes: `{"ids": [...]}`, or `{}` for all;
        audited with the admin and the count."""
        directory = self._directory(directory_id)
        ids = held_resolve_input(_body(request))
        count = held_changes_resolve_audited(
            directory=directory,
            ids=ids,
            approve=self.approve,
            actor=request.user,
            actor_name=request.user.email,
            via="admin-api",
            client_ip=self._ip(),
        )
        return ok({"approved" if self.approve else "discarded": count})


class HeldChangesApproveApi(_HeldResolveApi):
    approve = True


class HeldChangesDiscardApi(_HeldResolveApi):
    approve = False


class TokensApi(AdminView):
    def post(self, request: Request) -> Response:
        row, secret = services.admin_token_create(actor=request.user, client_ip=self._ip())
        return ok(admin_token_data(row, secret=secret), status=201)


class TokenApi(AdminView):
    def patch(self, request: Request, token_id: str) -> Response:
        """Disable a token. Any admin may disable any admin's token: revoking a colleague's leaked
        credential must not wait for them. Re-enabling is refused; create a new token instead."""
        token = selectors.admin_token_get(token_id=token_id)
        if token is None:
            raise NotFound("Admin token not found.")
        body = _body(request)
        fields_known(body, ["disabled"], verb="Updatable")
        disabled = body.get("disabled")
        if disabled is not True:
            if disabled is False:
                raise ValidationFailed("A disabled token cannot be re-enabled; create a new one.", field="disabled")
            raise ValidationFailed('Send {"disabled": true}.', field="disabled")
        token = services.admin_token_disable(actor=request.user, client_ip=self._ip(), token=token)
        return ok(admin_token_data(token))


class AdminUsersApi(AdminView):
    def get(self, request: Request) -> Response:
        return ok([admin_user_list_data(u) for u in paged(request, selectors.admin_user_list())])


class AdminUserApi(AdminView):
    def put(self, request: Request, user_id: str) -> Response:
        user = selectors.admin_user_get(user_id=user_id)
        if user is None:
            raise NotFound("Admin user not found.")
        body = _body(request)
        fields_known(body, ["timezone"], verb="Updatable")
        user = services.admin_user_timezone_set(
            actor=request.user, client_ip=self._ip(), user=user, timezone_name=body.get("timezone")
        )
        return ok(admin_user_list_data(user))


class AuditApi(AdminView):
    def get(self, request: Request) -> Response:
        directory = (request.query_params.get("directory") or "").strip() or None
        if directory is not None:
            # Only the id's form is checked: a deleted directory's entries must stay findable.
            try:
                uuid.UUID(directory)
            except ValueError:
                raise ValidationFailed("directory must be a directory id (UUID).", field="directory") from None
        qs = selectors.audit_list(
            actor=(request.query_params.get("actor") or "").strip() or None,
            action=(request.query_params.get("action") or "").strip() or None,
            directory_id=directory,
        )
        return ok([audit_data(e) for e in paged(request, qs)])


@csrf_exempt
def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Unknown routes under the admin prefix answer in the envelope, not with Django's HTML page."""
    return fail_json("Not found.", 404)
