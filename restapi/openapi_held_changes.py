"""OpenAPI description of the deprovision guard's held changes (contract §4.2): a held change, the body of an
approval or a discard, their answers."""

from __future__ import annotations

from rest_framework import serializers

from directories.guard.services import IDS_MAX
from directories.models import HeldChangeKind
from restapi.openapi_common import envelope


class HeldChangeSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    held_at = serializers.DateTimeField(help_text="When the identity provider's request was held.")
    user_id = serializers.UUIDField()
    user_name = serializers.CharField(help_text="The user's userName as the identity provider last sent it.")
    change = serializers.ChoiceField(
        choices=[choice.value for choice in HeldChangeKind],
        help_text="deactivate: active true to false; delete: the user deleted; update: any other change of a user "
        "with changes held before it.",
    )
    scim_request_id = serializers.CharField(
        allow_null=True, help_text="The request id of the SCIM request (its X-Request-Id and its request log entry)."
    )


HeldChangeListEnvelope = envelope("HeldChangeListEnvelope", HeldChangeSerializer(many=True))


# No other field is accepted (additionalProperties is false); this docstring is the public description.
class HeldResolveInput(serializers.Serializer):
    """Which held changes: ids, or an empty object for all of them; any other field is a 400."""

    ids = serializers.ListField(
        child=serializers.UUIDField(),
        required=False,
        min_length=1,
        max_length=IDS_MAX,
        help_text="Held changes of this directory; an unknown one is a 400 and nothing is done. Approving a change "
        "approves the earlier held changes of the same user with it; discarding one discards the later ones.",
    )


class ApprovedResult(serializers.Serializer):
    approved = serializers.IntegerField(min_value=0, help_text="Held changes applied, in the order they were held.")


class DiscardedResult(serializers.Serializer):
    discarded = serializers.IntegerField(min_value=0, help_text="Held changes dropped.")


ApprovedEnvelope = envelope("HeldApprovedEnvelope", ApprovedResult())
DiscardedEnvelope = envelope("HeldDiscardedEnvelope", DiscardedResult())
