"""OpenAPI description of webhook endpoints (contract §5.2): the bodies, the resource, its deliveries, the
test's outcome, and the envelopes."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from restapi.openapi_common import envelope
from webhooks.services.endpoints import FORMATS, GRACE_SECONDS_MAX, KNOWN_EVENTS

EVENT_NAMES = [*KNOWN_EVENTS, "*"]
_EVENTS_HELP = 'The events sent: names of §5 events (directory and dsync.* ones), or ["*"] for all of them.'
_FILTER_HELP = "Only events of directories with this {0} (null: any)."


class WebhookEndpointUpdateInput(serializers.Serializer):
    """A partial update; any other field is a 400. A change applies to events recorded after it."""

    url = serializers.URLField(required=False, help_text="http or https; no private address unless allowed.")
    description = serializers.CharField(required=False, allow_blank=True, max_length=500)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_NAMES), required=False, help_text=_EVENTS_HELP
    )
    tenant = serializers.CharField(required=False, allow_null=True, help_text=_FILTER_HELP.format("tenant"))
    product = serializers.CharField(required=False, allow_null=True, help_text=_FILTER_HELP.format("product"))
    directory_id = serializers.UUIDField(
        required=False, allow_null=True, help_text="Only this directory's events (null: any). Must exist."
    )
    format = serializers.ChoiceField(
        choices=list(FORMATS),
        required=False,
        help_text="roster: the Roster-Signature header. standard: Standard Webhooks v1 (needs a whsec_ secret).",
    )
    enabled = serializers.BooleanField(required=False)


class WebhookEndpointCreateInput(WebhookEndpointUpdateInput):
    """A new endpoint; any other field is a 400."""

    url = serializers.URLField(help_text="http or https; no private address unless allowed.")
    secret = serializers.CharField(
        required=False,
        max_length=512,
        help_text="Given, or generated as whsec_<base64 of 32 bytes>. A standard endpoint needs the whsec_ form.",
    )


class WebhookEndpointRotateInput(serializers.Serializer):
    """The optional body of a rotation; any other field is a 400."""

    secret = serializers.CharField(required=False, max_length=512, help_text="Given, or generated.")
    grace_seconds = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=GRACE_SECONDS_MAX,
        help_text="standard endpoints: deliveries carry both signatures (new, old) for this long (default 0). "
        "A roster endpoint switches at once.",
    )
    format = serializers.ChoiceField(choices=list(FORMATS), required=False, help_text="Switch the format too.")


class WebhookEndpointSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    url = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    events = serializers.ListField(child=serializers.CharField(), help_text=_EVENTS_HELP)
    tenant = serializers.CharField(allow_null=True)
    product = serializers.CharField(allow_null=True)
    directory_id = serializers.UUIDField(allow_null=True)
    format = serializers.ChoiceField(choices=list(FORMATS))
    enabled = serializers.BooleanField()
    previous_secret_expires_at = serializers.DateTimeField(
        allow_null=True, help_text="While the previous secret still signs (a standard rotation's grace)."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class NewWebhookEndpointSerializer(WebhookEndpointSerializer):
    secret = serializers.CharField(help_text="Shown in this answer only.")


class EndpointDeliveryErrorSerializer(serializers.Serializer):
    # `class` is a Python keyword: the field is declared under another name and renamed below.
    message = serializers.CharField()


EndpointDeliveryErrorSerializer._declared_fields["class"] = serializers.CharField()


class EndpointDeliverySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    endpoint_id = serializers.UUIDField()
    event_id = serializers.UUIDField()
    event = serializers.CharField()
    directory_id = serializers.UUIDField()
    sequence = serializers.IntegerField(allow_null=True)
    url = serializers.CharField(help_text="The endpoint's URL when the event was recorded.")
    status = serializers.ChoiceField(choices=["pending", "sending", "delivered", "failed", "dropped"])
    delivered = serializers.BooleanField()
    attempts = serializers.IntegerField(min_value=0)
    status_code = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.IntegerField(allow_null=True)
    error = EndpointDeliveryErrorSerializer(allow_null=True)
    response_excerpt = serializers.CharField(
        allow_blank=True, help_text="Kept only while the directory's log_webhook_events is on."
    )
    resend = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    attempted_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class EndpointTestSerializer(serializers.Serializer):
    delivered = serializers.BooleanField()
    status_code = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.IntegerField()
    error = serializers.CharField(allow_null=True)


ENABLED = OpenApiParameter("enabled", bool, required=False, description="Only enabled (true) or disabled (false) ones.")
TENANT_FILTER = OpenApiParameter("tenant", str, required=False, description="Endpoints whose tenant filter is this.")
PRODUCT_FILTER = OpenApiParameter("product", str, required=False, description="Endpoints whose product filter is this.")
DIRECTORY_FILTER = OpenApiParameter(
    "directory_id", {"type": "string", "format": "uuid"}, required=False, description="Endpoints for this directory."
)
FAILED = OpenApiParameter("failed", bool, required=False, description="true: only failed or dropped deliveries.")

WebhookEndpointEnvelope = envelope("WebhookEndpointEnvelope", WebhookEndpointSerializer())
NewWebhookEndpointEnvelope = envelope("NewWebhookEndpointEnvelope", NewWebhookEndpointSerializer())
WebhookEndpointListEnvelope = envelope("WebhookEndpointListEnvelope", WebhookEndpointSerializer(many=True))
EndpointDeliveryListEnvelope = envelope("EndpointDeliveryListEnvelope", EndpointDeliverySerializer(many=True))
EndpointTestEnvelope = envelope("EndpointTestEnvelope", EndpointTestSerializer())
