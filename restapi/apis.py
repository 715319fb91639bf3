"""The REST API under /api/v1/directory-sync (and the /api/v1/dsync alias).

Views are thin: read the query or body, call one selector or service, render the public shape in the
`{data, error}` envelope. Bodies are parsed with orjson and validated by the services instead of DRF
serializers, which would double the cost of a request and duplicate the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from adminauth.services import audit_record, directory_update_action, directory_update_details
from core.apiinput import (
    json_body,
    json_object_body,
    page_bounds,
    query_boolean,
    query_check,
    query_datetime,
    query_nonempty,
    query_required,
    query_uuid,
)
from core.envelope import EnvelopeOnly, ok
from core.errors import NotFound
from directories.models import ApiKey, Directory
from directories.rendering import (
    directories_data,
    directory_data,
    directory_with_client_secret,
    group_data,
    group_with_members_data,
    users_data,
)
from directories.selectors import (
    UserFilters,
    directory_get,
    directory_list,
    group_member_ids,
    tenant_group_get,
    tenant_groups_page,
    tenant_user_get,
    tenant_users_page,
    user_groups_page,
)
from directories.services import (
    directory_create,
    directory_delete,
    directory_previous_scim_secret_revoke,
    directory_scim_oauth_secret_rotate,
    directory_scim_secret_rotate,
    directory_update,
    scim_oauth_secret_rotation_input,
    scim_secret_rotation_input,
)
from restapi import openapi_common as doc
from restapi import openapi_directories as directories_doc
from restapi import openapi_scim_activity as scim_doc
from restapi import openapi_users_groups as users_groups_doc
from restapi.apikeys import ApiKeyAuthentication
from restapi.renderers import OrjsonRenderer


class ApiView(EnvelopeOnly, APIView):
    """Base of every REST view: API-key auth, orjson out, errors through core.envelope."""

    authentication_classes = [ApiKeyAuthentication]
    permission_classes: list = []
    renderer_classes = [OrjsonRenderer]
    # Bodies are read by json_body(); the parser is listed so the schema says the API takes JSON.
    parser_classes = [JSONParser]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # authentication first: a stranger learns nothing
        query_check(request)


def tenant_product(request: Request) -> tuple[str, str]:
    """The required `tenant` and `product` query parameters."""
    return query_required(request, "tenant"), query_required(request, "product")


def _directory_filter(request: Request, tenant: str, product: str) -> Directory | None:
    """The optional `directoryId`: it must be a directory of this tenant + product, else 404 (an empty or
    malformed id too: the document says it is a UUID)."""
    directory_id = request.query_params.get("directoryId")
    if directory_id is None:
        return None
    directory = directory_get(directory_id=directory_id, tenant=tenant, product=product)
    if directory is None:
        raise NotFound("Directory not found.")
    return directory


def directory_or_404(directory_id: str) -> Directory:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        raise NotFound("Directory not found.")
    return directory


def credential_name(request: Request) -> str:
    """The API key of the request as the audit trail names it: `api key <name> (<prefix>…)`, or API_KEYS
    for a key of that setting (which has no name)."""
    principal = request.auth
    return f"api key {principal.name} ({principal.prefix}…)" if isinstance(principal, ApiKey) else "API_KEYS"


def _audit(request: Request, *, action: str, directory: Directory, details: dict[str, Any] | None = None) -> None:
    """Record a change made over the REST API in the audit trail (same action names as the admin side);
    there is no admin actor, so the details name the API key that made it."""
    credential = credential_name(request)
    audit_record(
        actor=None,
        action=action,
        target_type="directory",
        target_id=directory.id,
        directory_id=directory.id,
        client_ip=request.META.get("REMOTE_ADDR") or None,
        details={
            "via": "rest-api",
            "credential": credential,
            "name": directory.name,
            "tenant": directory.tenant,
            "product": directory.product,
            **(details or {}),
        },
    )


class DirectoryListCreateApi(ApiView):
    @extend_schema(
        operation_id="directories_list",
        summary="List the directories of a tenant and product",
        description="Oldest first. Both query parameters are required.",
        parameters=[doc.TENANT, doc.PRODUCT, doc.PAGE_OFFSET, doc.PAGE_LIMIT],
        responses={200: directories_doc.DirectoryListEnvelope, **doc.errors()},
    )
    def get(self, request: Request) -> Response:
        tenant, product = tenant_product(request)
        offset, limit = page_bounds(request)
        directories = directory_list(tenant=tenant, product=product)[offset : offset + limit] if limit else []
        return ok(directories_data(directories))

    @extend_schema(
        operation_id="directories_create",
        summary="Create a directory",
        description="Answers the directory with its SCIM endpoint and secret, to paste into the identity provider.",
        request=directories_doc.DirectoryCreateInput,
        responses={201: directories_doc.DirectoryEnvelope, **doc.errors(413)},
    )
    def post(self, request: Request) -> Response:
        data = json_body(request)
        with transaction.atomic():
            directory = directory_create(data=data)
            _audit(request, action="directory.created", directory=directory)
        return ok(directory_data(directory), status=201)


class DirectoryDetailApi(ApiView):
    """One directory, by id: read it, change its settings, or delete it with everything it holds."""

    @extend_schema(
        operation_id="directories_get",
        summary="Get a directory",
        parameters=[doc.path_uuid("directory_id")],
        responses={200: directories_doc.DirectoryEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, directory_id: str) -> Response:
        return ok(directory_data(directory_or_404(directory_id)))

    @extend_schema(
        operation_id="directories_update",
        summary="Update a directory",
        description=(
            "Any of the listed fields; other fields are refused. An empty webhook_url removes the webhook. "
            "Turning the static SCIM secret off while OAuth has no client secret is a 409."
        ),
        parameters=[doc.path_uuid("directory_id")],
        request=directories_doc.DirectoryPatchInput,
        responses={200: directories_doc.DirectoryEnvelope, **doc.errors(404, 409, 413)},
    )
    def patch(self, request: Request, directory_id: str) -> Response:
        directory = directory_or_404(directory_id)
        data = json_body(request)
        with transaction.atomic():
            directory, changed = directory_update(directory=directory, data=data)
            if changed:
                action, details = (
                    directory_update_action(changed, directory),
                    directory_update_details(changed, directory),
                )
                _audit(request, action=action, directory=directory, details=details)
        return ok(directory_data(directory))

    @extend_schema(
        operation_id="directories_delete",
        summary="Delete a directory with its users, groups and logs",
        parameters=[doc.path_uuid("directory_id")],
        responses={200: doc.EmptyEnvelope, **doc.errors(404)},
    )
    def delete(self, request: Request, directory_id: str) -> Response:
        directory = directory_or_404(directory_id)
        with transaction.atomic():
            _audit(request, action="directory.deleted", directory=directory)
            directory_delete(directory=directory)
        return ok({})


def _tenant_list(
    request: Request, page: Callable[..., Any], render: Callable[[list[Any]], list[dict[str, Any]]], **filters: Any
) -> Response:
    """One page of a tenant and product's users or groups (`page`: the selector), optionally of one
    directory (`directoryId`), rendered with `render`; `filters` go to the selector."""
    tenant, product = tenant_product(request)
    offset, limit = page_bounds(request)
    directory = _directory_filter(request, tenant, product)
    if limit == 0:
        return ok([])
    rows = page(
        tenant=tenant,
        product=product,
        directory_id=directory.id if directory else None,
        offset=offset,
        limit=limit,
        **filters,
    )
    return ok(render(rows))


def _groups_data(groups: list[Any]) -> list[dict[str, Any]]:
    return [group_data(group) for group in groups]


class UserListApi(ApiView):
    @extend_schema(
        operation_id="users_list",
        summary="List the users of a tenant and product",
        description="Users of every directory of the tenant and product (or of directoryId), oldest first.",
        parameters=[*users_groups_doc.LIST_PARAMETERS, *users_groups_doc.USER_FILTERS],
        responses={200: users_groups_doc.UserListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request) -> Response:
        tenant, product = tenant_product(request)
        offset, limit = page_bounds(request)
        filters = UserFilters(
            active=query_boolean(request, "active"),
            email=query_nonempty(request, "email"),
            group_id=query_uuid(request, "group"),
            updated_after=query_datetime(request, "updatedAfter"),
        )
        named = _directory_filter(request, tenant, product)
        # The tenant's directories, read once: they scope the page and give its users' maps.
        directories = [named] if named is not None else list(directory_list(tenant=tenant, product=product))
        if limit == 0:
            return ok([])
        users = tenant_users_page(directories=directories, offset=offset, limit=limit, filters=filters)
        return ok(users_data(users, {d.id: d for d in directories}))


class UserDetailApi(ApiView):
    @extend_schema(
        operation_id="users_get",
        summary="Get a user of a tenant and product",
        description="A user of another tenant or product is a 404, like a missing one.",
        parameters=[doc.path_uuid("user_id"), doc.TENANT, doc.PRODUCT],
        responses={200: users_groups_doc.UserEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        tenant, product = tenant_product(request)
        user = tenant_user_get(tenant=tenant, product=product, user_id=user_id)
        if user is None:
            raise NotFound("User not found.")
        return ok(users_data([user])[0])


class UserGroupsApi(ApiView):
    @extend_schema(
        operation_id="users_groups_list",
        summary="List the groups a user of a tenant and product is a member of (without members)",
        description="Oldest group first. A user of another tenant or product is a 404, like a missing one.",
        parameters=[doc.path_uuid("user_id"), doc.TENANT, doc.PRODUCT, doc.PAGE_OFFSET, doc.PAGE_LIMIT],
        responses={200: users_groups_doc.GroupListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        tenant, product = tenant_product(request)
        offset, limit = page_bounds(request)
        user = tenant_user_get(tenant=tenant, product=product, user_id=user_id)
        if user is None:
            raise NotFound("User not found.")
        return ok(_groups_data(user_groups_page(user=user, offset=offset, limit=limit) if limit else []))


class GroupListApi(ApiView):
    @extend_schema(
        operation_id="groups_list",
        summary="List the groups of a tenant and product (without members)",
        description="Groups of every directory of the tenant and product (or of directoryId), oldest first.",
        parameters=[*users_groups_doc.LIST_PARAMETERS, users_groups_doc.GROUP_NAME],
        responses={200: users_groups_doc.GroupListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request) -> Response:
        return _tenant_list(request, tenant_groups_page, _groups_data, name=query_nonempty(request, "name"))


class GroupDetailApi(ApiView):
    @extend_schema(
        operation_id="groups_get",
        summary="Get a group of a tenant and product, with its members",
        description="A group of another tenant or product is a 404, like a missing one.",
        parameters=[doc.path_uuid("group_id"), doc.TENANT, doc.PRODUCT],
        responses={200: users_groups_doc.GroupEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, group_id: str) -> Response:
        tenant, product = tenant_product(request)
        group = tenant_group_get(tenant=tenant, product=product, group_id=group_id)
        if group is None:
            raise NotFound("Group not found.")
        return ok(group_with_members_data(group, group_member_ids(group=group)))


# --- the SCIM secret: rotation with grace, and revoking the previous one (contract §4.1) ---------------


class ScimSecretApi(ApiView):
    @extend_schema(
        operation_id="directories_scim_secret_rotate",
        summary="Rotate the SCIM secret",
        description=(
            "A new SCIM secret, shown in the answer. With grace_seconds, the previous secret keeps working that "
            "many seconds (scim.previous_secret_expires_at), so the identity provider can be updated without a "
            "failed push; with 0 (the default) it stops at once, and so does any secret an earlier rotation kept."
        ),
        parameters=[doc.path_uuid("directory_id")],
        request=scim_doc.ScimSecretRotateInput,
        responses={200: directories_doc.DirectoryEnvelope, **doc.errors(404, 413)},
    )
    def post(self, request: Request, directory_id: str) -> Response:
        directory = directory_or_404(directory_id)
        grace = scim_secret_rotation_input(json_object_body(request))
        with transaction.atomic():
            directory = directory_scim_secret_rotate(directory=directory, grace_seconds=grace)
            details = {"grace_seconds": grace}
            _audit(request, action="directory.scim_secret_rotated", directory=directory, details=details)
        return ok(directory_data(directory))


class PreviousScimSecretApi(ApiView):
    @extend_schema(
        operation_id="directories_previous_scim_secret_revoke",
        summary="Stop the previous SCIM secret now",
        description="Ends the grace a rotation gave the previous secret; nothing to stop is not an error.",
        parameters=[doc.path_uuid("directory_id")],
        responses={200: directories_doc.DirectoryEnvelope, **doc.errors(404)},
    )
    def delete(self, request: Request, directory_id: str) -> Response:
        directory = directory_or_404(directory_id)
        with transaction.atomic():
            directory, revoked = directory_previous_scim_secret_revoke(directory=directory)
            if revoked:
                _audit(request, action="directory.previous_scim_secret_revoked", directory=directory)
        return ok(directory_data(directory))


# --- OAuth client credentials for SCIM (contract §4.3) ---------------------------------------------------


class ScimOAuthSecretApi(ApiView):
    @extend_schema(
        operation_id="directories_scim_oauth_secret_rotate",
        summary="Create or rotate the OAuth client secret of the SCIM endpoint",
        description=(
            "A new client secret for the directory's OAuth client, shown in this answer only (client_secret in "
            "the oauth object of scim): only its SHA-256 digest is stored. The first one turns OAuth on (the "
            "token endpoint, token_endpoint in the same object, issues access tokens from then on); each later "
            "one ends every access token issued before, at once. The body is empty or {}."
        ),
        parameters=[doc.path_uuid("directory_id")],
        request=scim_doc.ScimOAuthSecretRotateInput,
        responses={200: directories_doc.DirectoryEnvelope, **doc.errors(404, 413)},
    )
    def post(self, request: Request, directory_id: str) -> Response:
        directory = directory_or_404(directory_id)
        scim_oauth_secret_rotation_input(json_object_body(request))
        with transaction.atomic():
            directory, secret, first = directory_scim_oauth_secret_rotate(directory=directory)
            details = {"first": first}
            _audit(request, action="directory.scim_oauth_secret_rotated", directory=directory, details=details)
        return ok(directory_with_client_secret(directory, secret))
