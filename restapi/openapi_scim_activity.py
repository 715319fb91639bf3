"""OpenAPI description of the SCIM connection (contract §4.1, §4.3): the SCIM secret rotation body, the SCIM
request log, and the body of the OAuth client secret's rotation."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from core.apiinput import HTTP_STATUS_MAX, HTTP_STATUS_MIN
from directories.services import GRACE_SECONDS_MAX
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
