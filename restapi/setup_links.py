"""REST API: a directory's setup links (contract §3.1), `…/<id>/setup-links` to create and list them and
`…/<id>/setup-links/<link_id>` to revoke one. Audited with the API key's name."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse
from rest_framework.request import Request
from rest_framework.response import Response

from core.apiinput import json_body, page_bounds
from core.envelope import ok
from core.errors import NotFound
from restapi import openapi_common as doc
from restapi import openapi_setup_links as links_doc
from restapi.apikeys import actor_of
from restapi.apis import ApiView, directory_or_404
from restapi.openapi_marks import extend_schema
from setuplinks.rendering import setup_link_data
from setuplinks.selectors import setup_link_get, setup_link_list
from setuplinks.services import setup_link_create, setup_link_input, setup_link_revoke


class SetupLinksApi(ApiView):
    @extend_schema(
        operation_id="directory_setup_links_list",
        summary="List a directory's setup links",
        description="Newest first, each with its status now. The token of a link is never shown again.",
        parameters=[doc.path_uuid("directory_id"), doc.PAGE_OFFSET, doc.PAGE_LIMIT],
        responses={200: links_doc.SetupLinkListEnvelope, **doc.errors(404)},
    )
    def get(self, request: Request, directory_id: str) -> Response:
        directory = directory_or_404(directory_id)
        offset, limit = page_bounds(request)
        links = setup_link_list(directory=directory)[offset : offset + limit] if limit else []
        now = timezone.now()
        return ok([setup_link_data(link, now=now) for link in links])

    @extend_schema(
        operation_id="directory_setup_links_create",
        summary="Create a setup link for the customer's IT admin",
        description=(
            "A link to a page where the customer's IT admin connects their identity provider to this directory "
            "without an account: provider steps, the SCIM base URL, a button that generates the SCIM secret, "
            "the connection status, and (with allow_mapping) the attribute and role maps. The answer's url "
            "carries the link's token and is shown only here. 409 when the directory is deactivated."
        ),
        parameters=[doc.path_uuid("directory_id")],
        request=links_doc.SetupLinkCreateInput,
        responses={201: links_doc.NewSetupLinkEnvelope, **doc.errors(404, 409, 413)},
    )
    def post(self, request: Request, directory_id: str) -> Response:
        directory = directory_or_404(directory_id)
        asked = setup_link_input(json_body(request))
        link, token = setup_link_create(directory=directory, actor=actor_of(request), asked=asked)
        return ok(setup_link_data(link, token=token), status=201)


class SetupLinkApi(ApiView):
    @extend_schema(
        operation_id="directory_setup_link_revoke",
        summary="Revoke a setup link",
        description="From the next request on, on every node, the link's page answers 404. Revoking a revoked or "
        "expired link is not an error.",
        parameters=[doc.path_uuid("directory_id"), doc.path_uuid("link_id")],
        responses={204: OpenApiResponse(description="Revoked; no body."), **doc.errors(404)},
    )
    def delete(self, request: Request, directory_id: str, link_id: str) -> Response:
        link = setup_link_get(directory=directory_or_404(directory_id), link_id=link_id)
        if link is None:
            raise NotFound("Setup link not found.")
        setup_link_revoke(link=link, actor=actor_of(request))
        return Response(status=204)
