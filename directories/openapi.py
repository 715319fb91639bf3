"""OpenAPI description of the REST API (served at /api/v1/schema by drf-spectacular).

The serializers here only describe shapes for the schema; the views never run them, because
hand-rolled parsing and rendering keep the hot paths fast (see CEILING.md) and the services own
validation. Keep them in step with directories.rendering and directories.services.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from drf_spectacular.views import SpectacularAPIView
from rest_framework import serializers

from directories.auth import ApiKeyAuthentication
from directories.models import DirectoryType

TYPES = [choice.value for choice in DirectoryType]


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "directories.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key from API_KEYS or `manage.py apikey create`.",
        }


class ErrorSerializer(serializers.Serializer):
    message = serializers.CharField()
    code = serializers.IntegerField(help_text="The HTTP status.")


class ErrorEnvelope(serializers.Serializer):
    data = serializers.JSONField(allow_null=True, help_text="Always null on failure.")
    error = ErrorSerializer()


class ScimInfo(serializers.Serializer):
    path = serializers.CharField()
    secret = serializers.CharField(help_text="Bearer token the identity provider sends.")
    endpoint = serializers.CharField(help_text="EXTERNAL_URL + path (+ ?aadOptscim062020 for azure-scim-v2).")


class WebhookInfo(serializers.Serializer):
    endpoint = serializers.CharField(allow_null=True)
    secret = serializers.CharField(allow_null=True)


class DirectorySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    tenant = serializers.CharField()
    product = serializers.CharField()
    type = serializers.ChoiceField(choices=TYPES)
    log_webhook_events = serializers.BooleanField()
    deactivated = serializers.BooleanField()
    scim = ScimInfo()
    webhook = WebhookInfo()
    created_at = serializers.DateTimeField()


class DirectoryCreateInput(serializers.Serializer):
    tenant = serializers.CharField(help_text="Required; no ':'.")
    product = serializers.CharField(help_text="Required; no ':'.")
    name = serializers.CharField(required=False, help_text="Defaults to one built from tenant and product.")
    type = serializers.ChoiceField(choices=TYPES, required=False, default="generic-scim-v2")
    webhook_url = serializers.URLField(required=False, help_text="http or https.")
    webhook_secret = serializers.CharField(required=False, help_text="Needs webhook_url; generated if omitted.")
    log_webhook_events = serializers.BooleanField(required=False, default=False)


class DirectoryPatchInput(serializers.Serializer):
    name = serializers.CharField(required=False)
    webhook_url = serializers.CharField(required=False, allow_blank=True, help_text="Empty removes the webhook.")
    webhook_secret = serializers.CharField(required=False)
    log_webhook_events = serializers.BooleanField(required=False)
    deactivated = serializers.BooleanField(required=False)


class UserSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    email = serializers.CharField()
    active = serializers.BooleanField()
    raw = serializers.JSONField(help_text="The SCIM user as last received, without password.")


class GroupSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    raw = serializers.JSONField(help_text="The SCIM group as last received.")


class MemberSerializer(serializers.Serializer):
    group_id = serializers.UUIDField()
    user_id = serializers.UUIDField()


class GroupDetailSerializer(GroupSerializer):
    members = MemberSerializer(many=True)


def envelope(name: str, data: serializers.Field) -> type[serializers.Serializer]:
    """A `{data, error: null}` success envelope around `data`, named for the schema."""
    return type(
        name,
        (serializers.Serializer,),
        {"data": data, "error": serializers.JSONField(allow_null=True, help_text="Always null on success.")},
    )


DirectoryEnvelope = envelope("DirectoryEnvelope", DirectorySerializer())
DirectoryListEnvelope = envelope("DirectoryListEnvelope", DirectorySerializer(many=True))
EmptyEnvelope = envelope("EmptyEnvelope", serializers.DictField(help_text="An empty object."))
UserEnvelope = envelope("UserEnvelope", UserSerializer())
UserListEnvelope = envelope("UserListEnvelope", UserSerializer(many=True))
GroupEnvelope = envelope("GroupEnvelope", GroupDetailSerializer())
GroupListEnvelope = envelope("GroupListEnvelope", GroupSerializer(many=True))

TENANT = OpenApiParameter("tenant", str, required=True, description="Tenant of the directories.")
PRODUCT = OpenApiParameter("product", str, required=True, description="Product of the directories.")
DIRECTORY_ID = OpenApiParameter("directoryId", str, required=False, description="Only this directory.")
PAGE_OFFSET = OpenApiParameter("pageOffset", int, required=False, description="Rows to skip (default 0).")
PAGE_LIMIT = OpenApiParameter("pageLimit", int, required=False, description="Rows to return (default 100, max 1000).")


def path_uuid(name: str) -> OpenApiParameter:
    # The route takes any string so that a malformed id is an enveloped 404, but ids are UUIDs.
    return OpenApiParameter(name, OpenApiTypes.UUID, OpenApiParameter.PATH)


ERRORS = {
    400: OpenApiResponse(ErrorEnvelope, description="Invalid input"),
    401: OpenApiResponse(ErrorEnvelope, description="Missing or invalid API key"),
    404: OpenApiResponse(ErrorEnvelope, description="Not found (also another tenant's resource)"),
}


def only_rest_api(endpoints: list[tuple[str, str, str, Any]]) -> list[tuple[str, str, str, Any]]:
    """Preprocessing hook: the document covers the REST API; SCIM and the admin API have their own rules."""
    # /api/v1/dsync/… is an alias (see the description); listing it twice would only add noise.
    return [e for e in endpoints if e[0].startswith("/api/v1/directory-sync")]


class RestSchemaView(SpectacularAPIView):
    """GET /api/v1/schema: JSON by default (the API speaks JSON), YAML with ?format=yaml."""

    authentication_classes = [ApiKeyAuthentication]
    permission_classes: list = []
    renderer_classes = [OpenApiJsonRenderer, OpenApiYamlRenderer]
    custom_settings = {
        "PREPROCESSING_HOOKS": ["directories.openapi.only_rest_api"],
        "DESCRIPTION": (
            "Directory sync: directories, users and groups pushed by identity providers over SCIM. "
            "Every path under /api/v1/directory-sync is also served under /api/v1/dsync. Every response "
            'is {"data": ..., "error": null} or {"data": null, "error": {"message": ..., "code": <status>}}.'
        ),
    }
