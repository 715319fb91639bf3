"""OpenAPI description of setup links (contract §3.1): the create body, a link, the envelopes."""

from __future__ import annotations

from rest_framework import serializers

from restapi.openapi_common import envelope
from setuplinks.models import SetupLinkStatus
from setuplinks.services import EXPIRES_IN_DEFAULT, EXPIRES_IN_MAX, EXPIRES_IN_MIN, RETURN_URL_MAX


# No other field is accepted (additionalProperties is false); this docstring is the public description.
class SetupLinkCreateInput(serializers.Serializer):
    """The optional body of a new setup link; any other field is a 400."""

    expires_in = serializers.IntegerField(
        required=False,
        min_value=EXPIRES_IN_MIN,
        max_value=EXPIRES_IN_MAX,
        help_text=f"Seconds the link works (default {EXPIRES_IN_DEFAULT}: 3 days). An integer: not a string, a "
        "float or a boolean.",
    )
    return_url = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=RETURN_URL_MAX,
        help_text='Where the page\'s "Done" link goes: an https URL without user name or password (http only to '
        "localhost while DEBUG is on). Empty or null: no Done link.",
    )
    allow_mapping = serializers.BooleanField(
        required=False,
        help_text="Whether the page lets the IT admin choose the SCIM attribute of each attribute_map name and the "
        "groups of each role of the role_map (default false).",
    )


STATUSES = [choice.value for choice in SetupLinkStatus]


class SetupLinkSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    # Its enum is named SetupLinkStatusEnum (ENUM_NAME_OVERRIDES in the settings), apart from the deliveries'.
    status = serializers.ChoiceField(choices=STATUSES, help_text="At the time of the answer.")
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    created_by = serializers.CharField(help_text="Who made it: an API key, an admin's email, or manage.py.")
    revoked_at = serializers.DateTimeField(allow_null=True)
    last_opened_at = serializers.DateTimeField(allow_null=True, help_text="The last time the page was opened.")
    opened_count = serializers.IntegerField(min_value=0, help_text="How many times the page was opened.")
    return_url = serializers.CharField(allow_null=True)
    allow_mapping = serializers.BooleanField()


class NewSetupLinkSerializer(SetupLinkSerializer):
    url = serializers.CharField(
        help_text="EXTERNAL_URL/setup/<token>: send it to the customer's IT admin. Only this answer shows it; "
        "Roster keeps no copy of the token."
    )


NewSetupLinkEnvelope = envelope("NewSetupLinkEnvelope", NewSetupLinkSerializer())
SetupLinkListEnvelope = envelope("SetupLinkListEnvelope", SetupLinkSerializer(many=True))
