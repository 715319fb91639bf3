"""OpenAPI description of the SCIM connection (contract §4.1, §4.3): the SCIM secret rotation body, the SCIM
request log, and the OAuth client's secrets: the rotation's body, one added, the list."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from core.apiinput import HTTP_STATUS_MAX, HTTP_STATUS_MIN
from directories.services import EXPIRES_IN_DAYS_DEFAULT, EXPIRES_IN_DAYS_MAX, EXPIRES_IN_DAYS_MIN, GRACE_SECONDS_MAX
from restapi.openapi_common import envelope

SCIM_FAILED = OpenApiParameter(
    "failed", bool, required=False, description="true: requests answered 4xx/5xx only; false: the others only."
)
HTTP_STATUS = OpenApiParameter(
    "status",
    {"type": "integer", "minimum": HTTP_STATUS_MIN, "maximum": HTTP_STATUS_MAX},
    required=False,
    description="Only requests answered with this HTTP status (with failed, those matching both).",
)


# additionalProperties is set to false by restapi.openapi._tighten; this docstring is the public description.
class ScimSecretRotateInput(serializers.Serializer):
    """The optional body of a rotation; any other field is a 400."""

    grace_seconds = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=GRACE_SECONDS_MAX,
        help_text="Seconds the previous secret keeps working (default 0: it stops at once). An integer: "
        "not a string, a float or a boolean.",
    )


# additionalProperties is set to false by restapi.openapi._tighten; this docstring is the public description.
class ScimOAuthSecretRotateInput(serializers.Serializer):
    """No body, or {}: any field is a 400."""


# additionalProperties is set to false by restapi.openapi._tighten; this docstring is the public description.
class ScimOAuthSecretAddInput(serializers.Serializer):
    """The optional body of a new client secret; any other field is a 400."""

    expires_in_days = serializers.IntegerField(
        required=False,
        min_value=EXPIRES_IN_DAYS_MIN,
        max_value=EXPIRES_IN_DAYS_MAX,
        help_text=f"Days the secret works (default {EXPIRES_IN_DAYS_DEFAULT}). An integer: not a string, a float "
        "or a boolean.",
    )


class ScimOAuthSecretSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(help_text="From then on it obtains no token, and its tokens end.")
    last_used_at = serializers.DateTimeField(allow_null=True, help_text="When it last obtained an access token.")
    hint = serializers.CharField(help_text="The secret's last 4 characters (empty for one made before hints).")


class NewScimOAuthSecretSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    client_secret = serializers.CharField(help_text="Shown in this answer only: only its SHA-256 digest is stored.")
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()


ScimOAuthSecretListEnvelope = envelope("ScimOAuthSecretListEnvelope", ScimOAuthSecretSerializer(many=True))
NewScimOAuthSecretEnvelope = envelope("NewScimOAuthSecretEnvelope", NewScimOAuthSecretSerializer())


class ScimRequestSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    directory_id = serializers.UUIDField()
    at = serializers.DateTimeField(help_text="When the request arrived.")
    method = serializers.CharField()
    path = serializers.CharField(help_text="Relative to the directory's SCIM base, e.g. /Users/<id>.")
    query = serializers.CharField(allow_blank=True, help_text="The query string, decoded.")
    status = serializers.IntegerField(help_text="The HTTP status of the answer.")
    failed = serializers.BooleanField(help_text="status is 400 or more.")
    scim_type = serializers.CharField(allow_null=True, help_text="The scimType of an error answer.")
    detail = serializers.CharField(allow_null=True, help_text="The detail of an error answer.")
    latency_ms = serializers.IntegerField(min_value=0)
    request_id = serializers.CharField(help_text="Also the answer's X-Request-Id header.")
    client_ip = serializers.CharField(allow_null=True)
    user_agent = serializers.CharField(allow_blank=True)
    request_body = serializers.CharField(
        allow_blank=True, help_text="The first 16 KiB, as text, password values replaced by ***."
    )
    request_truncated = serializers.BooleanField()
    response_body = serializers.CharField(allow_blank=True, help_text="The first 4 KiB, as text.")
    response_truncated = serializers.BooleanField()


ScimRequestListEnvelope = envelope("ScimRequestListEnvelope", ScimRequestSerializer(many=True))
