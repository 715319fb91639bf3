"""The REST API under /api/v1/directory-sync (and the /api/v1/dsync alias): the base of every view, and the
directories themselves (list, create, read, change, delete; the SCIM secret and the OAuth client secrets).
Users and groups are in restapi.users_groups, the other topics in a module each (restapi.urls).

Views are thin: read the query or body, call one selector or service, render the public shape in the
`{data, error}` envelope. Bodies are parsed with orjson and validated by the services instead of DRF
serializers, which would double the cost of a request and duplicate the rules.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.apiinput import json_body, json_object_body, page_bounds, query_check, query_required
from core.envelope import EnvelopeOnly, ok
from core.errors import NotFound
from directories.models import Directory
from directories.oauthsecrets import secret_public
from directories.rendering import directories_data, directory_data, directory_with_client_secret, oauth_secret_new_data
from directories.selectors import directory_get, directory_list
from directories.services import (
    directory_create,
    directory_delete,
    directory_previous_scim_secret_revoke,
    directory_scim_oauth_secret_add,
    directory_scim_oauth_secret_revoke,
    directory_scim_oauth_secret_rotate,
    directory_scim_secret_rotate,
    directory_update,
    scim_oauth_secret_add_input,
    scim_oauth_secret_rotation_input,
    scim_secret_rotation_input,
)
from restapi import openapi_common as doc
from restapi import openapi_directories as directories_doc
from restapi import openapi_scim_activity as scim_doc
from restapi.apikeys import ApiKeyAuthentication, actor_of
from restapi.openapi_marks import extend_schema
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


def directory_or_404(directory_id: str) -> Directory:
    directory = directory_get(directory_id=directory_id)
    if directory is None:
        raise NotFound("Directory not found.")
    return directory


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
        directory = directory_create(data=json_body(request), actor=actor_of(request))
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
        directory, _changed = directory_update(directory=directory, data=json_body(request), actor=actor_of(request))
        return ok(directory_data(directory))

    @extend_schema(
        operation_id="directories_delete",
        summary="Delete a directory with its users, groups and logs",
        parameters=[doc.path_uuid("directory_id")],
        responses={200: doc.EmptyEnvelope, **doc.errors(404)},
    )
    def delete(self, request: Request, directory_id: str) -> Response:
        directory_delete(directory=directory_or_404(directory_id), actor=actor_of(request))
        return ok({})


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
        directory = directory_scim_secret_rotate(directory=directory, grace_seconds=grace, actor=actor_of(request))
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
        directory, _revoked = directory_previous_scim_secret_revoke(directory=directory, actor=actor_of(request))
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
        directory, secret, _first = directory_scim_oauth_secret_rotate(directory=directory, actor=actor_of(request))
        return ok(directory_with_client_secret(directory, secret))


class ScimOAuthSecretsApi(ApiView):
    @extend_schema(
        operation_id="directories_scim_oauth_secrets_list",
        summary="List the OAuth client secrets of the SCIM endpoint",
        description=(
            "Newest first, expired ones included (their expires_at is past), revoked ones not. Never the secret: "
            "its last 4 characters (hint) tell which one an identity provider holds."
        ),
        parameters=[doc.path_uuid("directory_id")],
        responses={200: scim_doc.ScimOAuthSecretListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, directory_id: str) -> Response:
        directory = directory_or_404(directory_id)
        return ok([secret_public(entry) for entry in directory.scim_oauth_secrets])

    @extend_schema(
        operation_id="directories_scim_oauth_secrets_add",
        summary="Add an OAuth client secret to the SCIM endpoint",
        description=(
            "A new client secret, shown in this answer only, working expires_in_days days (default 365); the "
            "other secrets keep working, so an identity provider can be moved to the new one before the old one "
            "is revoked. The first one turns OAuth on. At most 5 unexpired secrets: a sixth is a 409."
        ),
        parameters=[doc.path_uuid("directory_id")],
        request=scim_doc.ScimOAuthSecretAddInput,
        responses={201: scim_doc.NewScimOAuthSecretEnvelope, **doc.errors(404, 409, 413)},
    )
    def post(self, request: Request, directory_id: str) -> Response:
        directory = directory_or_404(directory_id)
        days = scim_oauth_secret_add_input(json_object_body(request))
        _directory, entry, secret = directory_scim_oauth_secret_add(
            directory=directory, expires_in_days=days, actor=actor_of(request)
        )
        return ok(oauth_secret_new_data(entry, secret), status=201)


class ScimOAuthSecretsItemApi(ApiView):
    @extend_schema(
        operation_id="directories_scim_oauth_secrets_revoke",
        summary="Revoke one OAuth client secret of the SCIM endpoint",
        description=(
            "At once, on every node: the secret obtains no more access tokens and the ones it obtained stop "
            "working; the other secrets and their tokens keep working."
        ),
        parameters=[doc.path_uuid("directory_id"), doc.path_uuid("secret_id")],
        responses={204: OpenApiResponse(description="Revoked; no body."), **doc.errors(404)},
    )
    def delete(self, request: Request, directory_id: str, secret_id: str) -> Response:
        directory = directory_or_404(directory_id)
        directory_scim_oauth_secret_revoke(directory=directory, secret_id=secret_id, actor=actor_of(request))
        return Response(status=204)
