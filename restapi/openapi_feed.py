"""OpenAPI description of the changes feed (contract §5.1): its query parameters, an event and the list of them.

Like the rest of the document, these serializers only describe shapes; the feed item is the stored
webhook payload (webhooks.rendering.change_data) and the bounds are core.apiinput.position_bounds's.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from core.apiinput import PAGE_NUMBER_MAX
from restapi.openapi_directories import EventsSummary
from webhooks.feed import FEED_LIMIT_DEFAULT, FEED_LIMIT_MAX
from webhooks.models import EventState

DIRECTORY_EVENTS = [
    "user.created",
    "user.updated",
    "user.deleted",
    "group.created",
    "group.updated",
    "group.deleted",
    "group.user_added",
    "group.user_removed",
]

FEED_DESCRIPTION = (
    "The directory's events with a sequence above `after`, in sequence order, at most `limit`. Each item is "
    "the exact webhook payload (same id, created_at, sequence and data) with `delivery`, the outcome of its "
    "attempts so far. Every directory has a feed, with or without a webhook. A read is always gap-free: it "
    "never shows sequence n+1 before n is visible, so poll again with `after` set to the last sequence "
    "received. Events are kept EVENT_RETENTION_DAYS days; `after` below events.oldest_sequence - 1 is a 410: "
    "resynchronise from the user and group lists, then follow the feed from the events.last_sequence read "
    "before listing (events carry full objects, so applying the overlap again is harmless)."
)

AFTER = OpenApiParameter(
    "after",
    {"type": "integer", "minimum": 0, "maximum": PAGE_NUMBER_MAX},
    required=False,
    description="Return events with a sequence above this one (default 0: from the first kept).",
)
LIMIT = OpenApiParameter(
    "limit",
    {"type": "integer", "minimum": 1, "maximum": PAGE_NUMBER_MAX},
    required=False,
    description=f"Events to return (default {FEED_LIMIT_DEFAULT}); more than {FEED_LIMIT_MAX} is served as "
    f"{FEED_LIMIT_MAX}.",
)


class ChangeDeliverySerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=[state.value for state in EventState],
        help_text="pending: not attempted yet; sending: an attempt is under way; delivered; failed; dropped: "
        "never attempted on purpose (no webhook, or the directory was deactivated).",
    )
    attempts = serializers.IntegerField(min_value=0, help_text="Attempts made so far (resends included).")
    last_attempt_at = serializers.DateTimeField(allow_null=True, help_text="When the last attempt started.")
    status_code = serializers.IntegerField(
        allow_null=True, help_text="The receiver's HTTP status of the last attempt (null: no answer, or none made)."
    )


class ChangeEndpointDeliverySerializer(serializers.Serializer):
    endpoint_id = serializers.UUIDField(help_text="The webhook endpoint (contract §5.2).")
    status = serializers.ChoiceField(choices=[state.value for state in EventState])
    status_code = serializers.IntegerField(allow_null=True, help_text="The receiver's HTTP status, if any.")
    attempted_at = serializers.DateTimeField(allow_null=True, help_text="When the last attempt started.")


class ChangeSerializer(serializers.Serializer):
    id = serializers.UUIDField(help_text="The event's id, as in the webhook.")
    event = serializers.ChoiceField(choices=DIRECTORY_EVENTS)
    created_at = serializers.DateTimeField()
    sequence = serializers.IntegerField(min_value=1, help_text="1, 2, 3… per directory, in commit order.")
    directory_id = serializers.UUIDField()
    tenant = serializers.CharField()
    product = serializers.CharField()
    data = serializers.JSONField(
        help_text="A User for user events, a Group for group events, the User with `group` for membership events."
    )
    previous_attributes = serializers.JSONField(
        required=False,
        help_text="user.updated and group.updated only: the previous value of each top-level field that changed.",
    )
    delivery = ChangeDeliverySerializer()
    deliveries = ChangeEndpointDeliverySerializer(
        many=True, help_text="One per webhook endpoint the event went to (empty until the worker matched it)."
    )


class ChangeListEnvelope(serializers.Serializer):
    data = ChangeSerializer(many=True)
    error = serializers.JSONField(allow_null=True, help_text="Always null on success.")
    events = EventsSummary(help_text="The directory's events summary as of this read, as on the Directory.")
