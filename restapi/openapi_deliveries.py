"""OpenAPI description of the webhook delivery log: its filters, a delivery attempt and the list of them."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from restapi.openapi_common import envelope

FAILED = OpenApiParameter(
    "failed", bool, required=False, description="true: failed attempts only; false: delivered ones only."
)
STATUS = OpenApiParameter(
    "status",
    {"type": "string", "enum": ["delivered", "failed"]},
    required=False,
    description="Same filter as failed, by name; both given must agree.",
)


# "class" is a Python keyword, so this shape is built rather than declared.
DeliveryErrorSerializer = type(
    "DeliveryErrorSerializer",
    (serializers.Serializer,),
    {
        "class": serializers.CharField(help_text="What went wrong, e.g. HTTPStatus, Timeout."),
        "message": serializers.CharField(),
    },
)


class DeliverySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    event_id = serializers.UUIDField()
    event = serializers.CharField(help_text="The event type, e.g. user.created.")
    directory_id = serializers.UUIDField()
    endpoint = serializers.CharField()
    delivered = serializers.BooleanField()
    status = serializers.ChoiceField(choices=["delivered", "failed"])
    status_code = serializers.IntegerField(allow_null=True, help_text="The receiver's HTTP status, if it answered.")
    latency_ms = serializers.IntegerField(allow_null=True)
    error = DeliveryErrorSerializer(allow_null=True)
    response_excerpt = serializers.CharField()
    payload = serializers.JSONField(help_text="The body that was sent (JSON; a string if it was not JSON).")
    created_at = serializers.DateTimeField()
    attempted_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


DeliveryListEnvelope = envelope("DeliveryListEnvelope", DeliverySerializer(many=True))
