"""OpenAPI description of resending events of the changes feed (contract §5.1): the request body and its answer."""

from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from core.text import INT_MAX
from restapi.openapi_common import envelope
from webhooks.services import RESEND_MAX


def _sequence_field(help_text: str) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=1, max_value=INT_MAX, help_text=help_text)


# "from" is a Python keyword, so this shape is built rather than declared. No other field is accepted
# (additionalProperties is false, see restapi.openapi._tighten); to - from + 1 is at most RESEND_MAX.
ResendRangeInput = type(
    "ResendRangeInput",
    (serializers.Serializer,),
    {
        "from": _sequence_field("The first sequence number to resend (inclusive)."),
        "to": _sequence_field(f"The last one (inclusive): at least from, at most from + {RESEND_MAX - 1}."),
        "endpoint_id": serializers.UUIDField(
            required=False,
            help_text="Send to this webhook endpoint only (contract §5.2); it must take the directory's events "
            "now, else 400. The events of a type it does not take are skipped.",
        ),
    },
)


# Events by id; no other field is accepted (additionalProperties is false, see restapi.openapi._tighten).
class ResendIdsInput(serializers.Serializer):
    event_ids = serializers.ListField(
        child=serializers.UUIDField(),
        min_length=1,
        max_length=RESEND_MAX,
        help_text="Ids of this directory's events (the id of the webhook payload); an unknown one is a 400.",
    )
    endpoint_id = serializers.UUIDField(
        required=False,
        help_text="Send to this webhook endpoint only (contract §5.2); it must take every named event now, else 400.",
    )


RESEND_INPUT = PolymorphicProxySerializer(
    component_name="ResendInput",
    serializers=[ResendRangeInput, ResendIdsInput],
    resource_type_field_name=None,
    many=False,
)


class ResendResult(serializers.Serializer):
    queued = serializers.IntegerField(
        min_value=0,
        max_value=RESEND_MAX,
        help_text="Events put back in line for one more attempt (not those whose attempt is still pending).",
    )


ResendEnvelope = envelope("ResendEnvelope", ResendResult())
