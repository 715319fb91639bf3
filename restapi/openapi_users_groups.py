"""OpenAPI description of users and groups: the lists' query parameters, the shapes and their envelopes."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from restapi.openapi_common import PAGE_LIMIT, PAGE_OFFSET, PRODUCT, TENANT, envelope

DIRECTORY_ID = OpenApiParameter(
    "directoryId",
    OpenApiTypes.UUID,
    required=False,
    description="Only this directory (404 if it is not one of the tenant and product, or not an id).",
)
USER_FILTERS = [
    OpenApiParameter("active", bool, required=False, description="Only active (true) or inactive (false) users."),
    OpenApiParameter(
        "email",
        {"type": "string", "minLength": 1, "maxLength": 512},
        required=False,
        description="Only users with this email (exact, case-insensitive).",
    ),
    OpenApiParameter(
        "group", OpenApiTypes.UUID, required=False, description="Only members of this group ([] if it matches none)."
    ),
    OpenApiParameter(
        "updatedAfter",
        OpenApiTypes.DATETIME,
        required=False,
        description="Only users updated strictly after this RFC 3339 date-time (with Z or an offset).",
    ),
]
GROUP_NAME = OpenApiParameter(
    "name",
    {"type": "string", "minLength": 1, "maxLength": 512},
    required=False,
    description="Only the group of this displayName (exact, case-insensitive).",
)
# What the user list and the group list both take, in this order: whose rows, then which page.
LIST_PARAMETERS = [TENANT, PRODUCT, DIRECTORY_ID, PAGE_OFFSET, PAGE_LIMIT]


class UserSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    email = serializers.CharField()
    active = serializers.BooleanField()
    raw = serializers.JSONField(help_text="The SCIM user as last received, without password.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    custom_attributes = serializers.DictField(
        child=serializers.JSONField(allow_null=True),
        help_text="One entry per name of the directory's attribute_map: the value at its path, null if none.",
    )
    roles = serializers.ListField(
        child=serializers.CharField(), help_text="Sorted, distinct roles the role_map gives the user's groups."
    )


class GroupSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    raw = serializers.JSONField(help_text="The SCIM group as last received.")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class MemberSerializer(serializers.Serializer):
    group_id = serializers.UUIDField()
    user_id = serializers.UUIDField()


class GroupDetailSerializer(GroupSerializer):
    members = MemberSerializer(many=True)


UserEnvelope = envelope("UserEnvelope", UserSerializer())
UserListEnvelope = envelope("UserListEnvelope", UserSerializer(many=True))
GroupEnvelope = envelope("GroupEnvelope", GroupDetailSerializer())
GroupListEnvelope = envelope("GroupListEnvelope", GroupSerializer(many=True))
