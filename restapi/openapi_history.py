"""OpenAPI description of history (contract §5.3): the point parameters, a snapshot's users and groups,
a group's members then, and the diff between two points. Shapes only; history.reading parses and
history.selectors answers."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from restapi.openapi_users_groups import GroupSerializer, MemberSerializer, UserSerializer

AT = OpenApiParameter(
    "at",
    {"type": "string", "format": "date-time"},
    required=False,
    description="The moment (ISO 8601 with a time zone): the directory right after the last event at or before "
    "it. Not with `sequence`; neither means now. In the future: 400; before the earliest point kept (the "
    "directory's creation, or the oldest event retention kept): 410.",
)
SEQUENCE = OpenApiParameter(
    "sequence",
    {"type": "integer", "minimum": 0},
    required=False,
    description="The point right after the event with this sequence number (contract §5.1; 0: before the "
    "first). Past the last event: 400; before the oldest kept event once retention has cut the feed: 410.",
)
ACTIVE = OpenApiParameter("active", {"type": "boolean"}, required=False, description="Only users with this `active`.")
TENANT = OpenApiParameter(
    "tenant", {"type": "string", "minLength": 1}, required=False, description="When given, must be the directory's."
)
PRODUCT = OpenApiParameter(
    "product", {"type": "string", "minLength": 1}, required=False, description="When given, must be the directory's."
)
FROM = OpenApiParameter(
    "from",
    {"type": "string"},
    required=False,
    description="The earlier point: an ISO 8601 time or a sequence number. Required unless `cursor` is given.",
)
TO = OpenApiParameter(
    "to",
    {"type": "string"},
    required=False,
    description="The later point: an ISO 8601 time or a sequence number (default: now).",
)
CURSOR = OpenApiParameter(
    "cursor", {"type": "string"}, required=False, description="`data.next` of the previous page of this diff."
)
DIFF_LIMIT = OpenApiParameter(
    "pageLimit",
    {"type": "integer", "minimum": 1},
    required=False,
    description="Items per page across all the diff's lists (default 1000, at most 1000).",
)

SNAPSHOT_DESCRIPTION = (
    "The directory as it was right after the last event at or before `at` (or the event numbered `sequence`): "
    "what the REST API showed then. `custom_attributes` and `roles` are computed with today's maps. Oldest first, "
    "paged. `as_of` beside `data` names the point shown. History reaches back as far as the changes feed keeps "
    "events; held changes (contract §4.2) appear from their approval."
)
DIFF_DESCRIPTION = (
    "The net change between two points: users and groups created, deleted (as they were) and updated (the fields "
    "`previous_attributes` names, before and after), memberships added and removed. Something created and deleted "
    "between the points is in no list; a field changed and changed back is not an update. Pages go through the "
    "lists in order (users, groups, memberships; created, deleted, updated); `data.next` is the cursor of the next "
    "page, null on the last."
)


class PointSerializer(serializers.Serializer):
    sequence = serializers.IntegerField(min_value=0, help_text="The last event included (0: none).")
    created_at = serializers.DateTimeField(allow_null=True, help_text="When that event was made.")


class HistoryUserSerializer(UserSerializer):
    groups = serializers.ListField(child=serializers.UUIDField(), help_text="The user's groups then.")


class HistoryGroupSerializer(GroupSerializer):
    members = serializers.IntegerField(min_value=0, help_text="How many users the group had then.")


class UpdateSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    before = serializers.JSONField(help_text="The changed fields as they were (`raw`: its changed keys).")
    after = serializers.JSONField(help_text="The same fields as they became.")


class UserChangesSerializer(serializers.Serializer):
    created = UserSerializer(many=True)
    deleted = UserSerializer(many=True)
    updated = UpdateSerializer(many=True)


class GroupChangesSerializer(serializers.Serializer):
    created = GroupSerializer(many=True)
    deleted = GroupSerializer(many=True)
    updated = UpdateSerializer(many=True)


class MembershipChangesSerializer(serializers.Serializer):
    added = MemberSerializer(many=True)
    removed = MemberSerializer(many=True)


class DiffSerializer(serializers.Serializer):
    users = UserChangesSerializer()
    groups = GroupChangesSerializer()
    memberships = MembershipChangesSerializer()
    next = serializers.CharField(allow_null=True, help_text="The cursor of the next page; null on the last.")


def _envelope(name: str, data: serializers.Field, **beside: serializers.Field) -> type[serializers.Serializer]:
    fields = {
        "data": data,
        "error": serializers.JSONField(allow_null=True, help_text="Always null on success."),
        **beside,
    }
    return type(name, (serializers.Serializer,), fields)


HistoryUserListEnvelope = _envelope(
    "HistoryUserListEnvelope", HistoryUserSerializer(many=True), as_of=PointSerializer()
)
HistoryGroupListEnvelope = _envelope(
    "HistoryGroupListEnvelope", HistoryGroupSerializer(many=True), as_of=PointSerializer()
)
HistoryMemberListEnvelope = _envelope(
    "HistoryMemberListEnvelope", serializers.ListField(child=serializers.UUIDField()), as_of=PointSerializer()
)
DiffEnvelope = _envelope("DiffEnvelope", DiffSerializer(), **{"from": PointSerializer(), "to": PointSerializer()})
