"""The OpenAPI document of the REST API (served at /api/v1/schema by drf-spectacular): the view that
serves it, its API-key scheme, and the hooks that choose its routes and add what serializers cannot say.

Each topic's pieces are in an openapi_* module beside this one (openapi_common for the shared ones).
Their serializers only describe shapes for the schema; the views never run them, because hand-rolled
parsing and rendering keep the hot paths fast and the services own validation. Keep them in step with
directories.rendering, directories.services and core.apiinput: tests/contract runs schemathesis
against the server with this document, so a bound stated there that the server does not enforce (or
the other way round) fails the suite.
"""

from __future__ import annotations

from typing import Any

from django.urls import get_resolver
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.renderers import (
    OpenApiJsonRenderer,
    OpenApiJsonRenderer2,
    OpenApiYamlRenderer,
    OpenApiYamlRenderer2,
)
from drf_spectacular.settings import patched_settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from drf_spectacular.views import SpectacularAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from core.apiinput import PAGE_NUMBER_MAX, query_check
from core.envelope import EnvelopeOnly
from core.errors import ValidationFailed
from core.requestid import HEADER
from directories.mapping import ATTRIBUTE_MAP_MAX, GROUP_KEY_MAX, NAME_MAX, PATH_MAX, ROLE_MAP_MAX, ROLE_MAX
from directories.services import SCIM_RATE_LIMIT_MAX, SCIM_RATE_LIMIT_MIN
from restapi import openapi_marks
from restapi.apikeys import ApiKeyAuthentication
from restapi.openapi_common import errors
from restapi.renderers import OrjsonRenderer


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "restapi.apikeys.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key from API_KEYS or `manage.py apikey create`.",
        }


REST_PREFIXES = ("/api/v1/directory-sync", "/api/v1/dsync", "/api/v1/schema", "/api/v1/webhook-endpoints")
_ALIAS = "/api/v1/dsync"


def only_rest_api(endpoints: list[tuple[str, str, str, Any]]) -> list[tuple[str, str, str, Any]]:
    """Preprocessing hook: the document covers the REST API; SCIM and the admin API have their own rules."""
    return [e for e in endpoints if e[0].startswith(REST_PREFIXES)]


def _response_headers(status: str) -> dict[str, Any]:
    headers: dict[str, Any] = {
        HEADER: {
            "required": True,
            "schema": {"type": "string"},
            "description": "The request's id: the client's own X-Request-Id when it is 1-128 of A-Z a-z 0-9 . _ -, "
            "else a new one. Quote it when reporting a 500.",
        }
    }
    if status == "401":
        headers["WWW-Authenticate"] = {"required": True, "schema": {"type": "string"}}
    else:
        headers.update(RATE_LIMIT_HEADERS)
    if status == "429":
        headers["Retry-After"] = {
            "required": True,
            "schema": {"type": "integer", "minimum": 1},
            "description": "Whole seconds after which a request of this API key is accepted again.",
        }
    if status == "503":
        headers["Retry-After"] = {
            "required": True,
            "schema": {"type": "integer", "minimum": 1},
            "description": "Seconds to wait before retrying.",
        }
    return headers


# On every answer to a request counted by the API key's rate limit (not when API_RATE_LIMIT is 0), as in
# the IETF RateLimit header fields draft.
RATE_LIMIT_HEADERS: dict[str, Any] = {
    "RateLimit-Limit": {
        "required": False,
        "schema": {"type": "integer", "minimum": 1},
        "description": "The API key's limit, in requests per minute.",
    },
    "RateLimit-Remaining": {
        "required": False,
        "schema": {"type": "integer", "minimum": 0},
        "description": "Requests the key may make back to back from now (at most a tenth of the limit).",
    },
    "RateLimit-Reset": {
        "required": False,
        "schema": {"type": "integer", "minimum": 0},
        "description": "Whole seconds until RateLimit-Remaining is back at its most.",
    },
}

# Bodies that refuse any field they do not list (a 400).
_CLOSED_BODIES = (
    "DirectoryPatchInput",
    "ScimPatchInput",
    "ScimSecretRotateInput",
    "ScimOAuthSecretRotateInput",
    "ScimOAuthSecretAddInput",
    "ResendRangeInput",
    "ResendIdsInput",
    "SetupLinkCreateInput",
    "DeprovisionGuardInput",
    "HeldResolveInput",
)


def _tighten(result: dict[str, Any], **_: Any) -> dict[str, Any]:
    """Postprocessing hook: what the serializers of the openapi_* modules cannot say.

    - /api/v1/dsync/... serves the same views as /api/v1/directory-sync/..., so their operations share
      extend_schema's operationId; the alias's get a `_dsync` suffix (drf-spectacular would otherwise
      number them with a warning).
    - A PATCH naming a field that cannot be updated is a 400: no additional properties.
    - The headers every answer carries (X-Request-Id), those of an API key's rate limit, and those of 401,
      429 and 503.
    """
    for path, operations in result["paths"].items():
        for operation in operations.values():
            if path.startswith(_ALIAS):
                operation["operationId"] += "_dsync"
            for status, response in operation["responses"].items():
                response["headers"] = _response_headers(status)
    for name, schema in result["components"]["schemas"].items():
        # drf-spectacular names the PATCH body "Patched<serializer>".
        if name.endswith(_CLOSED_BODIES):
            schema["additionalProperties"] = False
        if name.endswith("DirectoryPatchInput"):
            for field, bounds in MAP_SCHEMAS.items():
                schema["properties"][field].update(bounds)
        if name.endswith(("DirectoryPatchInput", "DirectoryCreateInput")):
            rate_limit = schema["properties"]["scim_rate_limit"]
            rate_limit.pop("type", None)
            rate_limit["anyOf"] = SCIM_RATE_LIMIT_SCHEMA
    return result


# directories.services.directory.scim_rate_limit_check: 0, or MIN to MAX (null: nullable).
SCIM_RATE_LIMIT_SCHEMA: list[dict[str, Any]] = [
    {"type": "integer", "enum": [0]},
    {"type": "integer", "minimum": SCIM_RATE_LIMIT_MIN, "maximum": SCIM_RATE_LIMIT_MAX},
]


# The bounds directories.mapping enforces on the two maps of DirectoryPatchInput (openapi_directories).
MAP_SCHEMAS: dict[str, dict[str, Any]] = {
    "attribute_map": {
        "maxProperties": ATTRIBUTE_MAP_MAX,
        "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "maxLength": NAME_MAX},
        "additionalProperties": {"type": "string", "minLength": 1, "maxLength": PATH_MAX},
    },
    "role_map": {
        "maxProperties": ROLE_MAP_MAX,
        "propertyNames": {"minLength": 1, "maxLength": GROUP_KEY_MAX},
        "additionalProperties": {"type": "string", "minLength": 1, "maxLength": ROLE_MAX},
    },
}


SCHEMA_FORMATS = ("json", "yaml")
_DOCUMENT = {"type": "object", "description": "The OpenAPI 3 document."}


class RestSchemaGenerator(SchemaGenerator):
    """drf-spectacular's generator, once the views' notes (restapi.openapi_marks) are applied."""

    def get_schema(self, request: Any = None, public: bool = False) -> dict[str, Any]:
        get_resolver().url_patterns  # noqa: B018 - every view module imported, every note taken
        openapi_marks.apply()
        return super().get_schema(request=request, public=public)


class RestSchemaView(EnvelopeOnly, SpectacularAPIView):
    """GET /api/v1/schema: the OpenAPI document of the REST API.

    JSON unless asked otherwise: `?format=yaml` or `Accept: application/yaml` gives YAML. Without an
    Accept header (or with `*/*`) the JSON comes as application/vnd.oai.openapi+json, the type
    registered for OpenAPI documents; `Accept: application/json` gets the same bytes as
    application/json. Errors are the JSON envelope as on every REST route, whatever was asked for.
    """

    authentication_classes = [ApiKeyAuthentication]
    permission_classes: list = []
    generator_class = RestSchemaGenerator
    renderer_classes = [OpenApiJsonRenderer, OpenApiJsonRenderer2, OpenApiYamlRenderer, OpenApiYamlRenderer2]
    custom_settings = {
        "PREPROCESSING_HOOKS": ["restapi.openapi.only_rest_api"],
        "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "restapi.openapi._tighten"],
        "DESCRIPTION": (
            "Directory sync: directories, users and groups pushed by identity providers over SCIM. "
            "Every path under /api/v1/directory-sync is also served under /api/v1/dsync (operationIds "
            "with the suffix `_dsync`). Every response is "
            '{"data": ..., "error": null} or {"data": null, "error": {"message": ..., "code": <status>}}, '
            "with an X-Request-Id header (the client's own when it sends a sane one). A method a path does "
            "not list answers 405 with an Allow header; an unknown path 404; both enveloped. Integers in "
            f"the query are 0 to {PAGE_NUMBER_MAX}, digits only; a query value with a NUL character is a 400."
        ),
    }

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # Checked before DRF's content negotiation, which answers an unknown ?format= with a 404 and, like
        # these checks, runs before authentication.
        query_check(request)
        fmt = request.query_params.get("format")
        if fmt is not None and fmt not in SCHEMA_FORMATS:
            raise ValidationFailed("format must be json or yaml.", field="format")
        super().initial(request, *args, **kwargs)

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        # The document's renderers would label the error envelope as an OpenAPI document (or fail to
        # render it as YAML); errors leave as plain JSON like every REST error.
        self.request.accepted_renderer = OrjsonRenderer()
        self.request.accepted_media_type = OrjsonRenderer.media_type
        return response

    @extend_schema(
        operation_id="schema_get",
        summary="This OpenAPI document",
        parameters=[
            OpenApiParameter(
                "format",
                {"type": "string", "enum": list(SCHEMA_FORMATS)},
                required=False,
                description="yaml for YAML; json (the default) for JSON. Overrides the Accept header.",
            )
        ],
        responses={
            (200, OpenApiJsonRenderer.media_type): _DOCUMENT,
            (200, OpenApiJsonRenderer2.media_type): _DOCUMENT,
            (200, OpenApiYamlRenderer.media_type): _DOCUMENT,
            (200, OpenApiYamlRenderer2.media_type): _DOCUMENT,
            **{(status, OrjsonRenderer.media_type): response for status, response in errors().items()},
        },
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


def rest_document() -> dict[str, Any]:
    """The document GET /api/v1/schema serves, built without a request: what the client libraries are
    generated from (`manage.py openapi_document`, scripts/clients-generate.sh)."""
    view = RestSchemaView
    with patched_settings(view.custom_settings):
        generator = view.generator_class(urlconf=view.urlconf, api_version=view.api_version, patterns=view.patterns)
        return generator.get_schema(request=None, public=view.serve_public)
