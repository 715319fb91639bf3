"""OpenAPI description of directories: the directory and its parts, the create and update bodies, the envelopes."""

from __future__ import annotations

from rest_framework import serializers

from directories.guard.rendering import ARMED, OFF, TRIPPED
from directories.guard.rules import BOUNDS, DEFAULTS
from directories.models import DirectoryType, HealthState
from restapi.openapi_common import envelope

TYPES = [choice.value for choice in DirectoryType]


class ScimOAuthInfo(serializers.Serializer):
    client_id = serializers.CharField(help_text="The OAuth client's id: the directory's id.")
    token_endpoint = serializers.CharField(
        help_text="Where the identity provider posts grant_type=client_credentials: <SCIM endpoint>/oauth/token."
    )
    enabled = serializers.BooleanField(
        help_text="The client has a secret, so the token endpoint issues access tokens (POST .../scim-oauth-secret)."
    )
    client_secret_created_at = serializers.DateTimeField(
        allow_null=True, help_text="When the current client secret was made (null: none yet, OAuth is off)."
    )
    client_secret = serializers.CharField(
        required=False,
        help_text="Only in the answer of POST .../scim-oauth-secret, which made it: only its digest is stored.",
    )


class ScimInfo(serializers.Serializer):
    path = serializers.CharField()
    secret = serializers.CharField(help_text="Bearer token the identity provider sends.")
    endpoint = serializers.CharField(help_text="EXTERNAL_URL + path (+ ?aadOptscim062020 for azure-scim-v2).")
    static_secret_enabled = serializers.BooleanField(
        help_text="The static secret (and a previous one under grace) authenticates SCIM requests; false: only "
        "OAuth access tokens do."
    )
    oauth = ScimOAuthInfo(help_text="OAuth 2.0 client credentials for the SCIM endpoint (RFC 6749 §4.4).")
    previous_secret_expires_at = serializers.DateTimeField(
        allow_null=True, help_text="Until when the secret before the last rotation still works (null: it does not)."
    )
    last_used_at = serializers.DateTimeField(
        allow_null=True, help_text="The current secret's last use by a SCIM request (may lag up to a minute)."
    )
    previous_secret_last_used_at = serializers.DateTimeField(
        allow_null=True, help_text="The previous secret's last use while a rotation kept it working."
    )


HEALTH_STATES = [choice.value for choice in HealthState]


class HealthSerializer(serializers.Serializer):
    state = serializers.ChoiceField(
        choices=HEALTH_STATES,
        help_text="First match wins: deactivated; invalid_credentials (a 401 and no authenticated request "
        "since); throttled (more than half of the last minute's requests were refused by the rate limit); "
        "failing (the last 5 authenticated requests failed); silent (no request for SCIM_SILENT_DAYS); "
        "healthy; never_connected.",
    )
    last_request_at = serializers.DateTimeField(allow_null=True)
    last_success_at = serializers.DateTimeField(allow_null=True)
    last_error_at = serializers.DateTimeField(allow_null=True)
    requests_24h = serializers.IntegerField(min_value=0, help_text="Requests naming the directory, 401s included.")
    errors_24h = serializers.IntegerField(min_value=0, help_text="Of which answered 4xx or 5xx.")
    auth_failures_24h = serializers.IntegerField(min_value=0, help_text="Of which answered 401.")


class WebhookInfo(serializers.Serializer):
    endpoint = serializers.CharField(allow_null=True)
    secret = serializers.CharField(allow_null=True)


class EventsSummary(serializers.Serializer):
    last_sequence = serializers.IntegerField(
        min_value=0, help_text="The sequence of the directory's last event (0 before the first one)."
    )
    oldest_sequence = serializers.IntegerField(
        min_value=1,
        allow_null=True,
        help_text="The smallest sequence still kept in the changes feed (null when none is kept).",
    )


def _guard_number(key: str, help_text: str, *, required: bool) -> serializers.IntegerField:
    low, high = BOUNDS[key]
    return serializers.IntegerField(
        min_value=low, max_value=high, required=required, help_text=f"{help_text} Default {DEFAULTS[key]}."
    )


class DeprovisionGuardSetting(serializers.Serializer):
    enabled = serializers.BooleanField(help_text="Whether deprovisions are counted and, past the limits, held.")
    max_users = _guard_number("max_users", "Deprovisions a window may hold before the guard can trip.", required=True)
    max_percent = _guard_number(
        "max_percent", "Percentage of the users active at the window's start it may take out.", required=True
    )
    window_minutes = _guard_number("window_minutes", "The sliding window, in minutes.", required=True)


# Any of the setting's keys; the others keep their values. additionalProperties is false (restapi.openapi).
class DeprovisionGuardInput(serializers.Serializer):
    """A partial setting, merged into the current one; any other key is a 400."""

    enabled = serializers.BooleanField(required=False)
    max_users = _guard_number("max_users", "At least 1.", required=False)
    max_percent = _guard_number("max_percent", "From 1 to 100 (100: counted, never held).", required=False)
    window_minutes = _guard_number("window_minutes", "From 1 to 10080 (7 days).", required=False)


class GuardSerializer(serializers.Serializer):
    state = serializers.ChoiceField(
        choices=[ARMED, TRIPPED, OFF],
        help_text="off: the setting is off; tripped: changes are held until a person approves or discards them; "
        "armed: counting.",
    )
    held = serializers.IntegerField(min_value=0, help_text="Changes held (GET .../held-changes).")
    tripped_at = serializers.DateTimeField(allow_null=True, help_text="When it tripped; null unless changes are held.")
    window_deprovisions = serializers.IntegerField(
        min_value=0, help_text="Deprovisions let through in the current window (since the last re-arm)."
    )


class DirectorySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    tenant = serializers.CharField()
    product = serializers.CharField()
    type = serializers.ChoiceField(choices=TYPES)
    log_webhook_events = serializers.BooleanField()
    deactivated = serializers.BooleanField()
    scim = ScimInfo()
    webhook = WebhookInfo()
    webhook_format = serializers.ChoiceField(
        choices=["roster", "standard"], help_text="How the directory's own webhook is signed (contract §5.2)."
    )
    created_at = serializers.DateTimeField()
    # mapped attributes and roles (contract §3)
    attribute_map = serializers.DictField(
        child=serializers.CharField(), help_text="{name: SCIM attribute path}: each User's custom_attributes."
    )
    role_map = serializers.DictField(
        child=serializers.CharField(), help_text="{group displayName or id: role}: each User's roles."
    )
    log_scim_requests = serializers.BooleanField(help_text="Successful SCIM requests are logged too.")
    health = HealthSerializer()
    events = EventsSummary(help_text="Where the directory's changes feed stands (GET .../changes).")
    deprovision_guard = DeprovisionGuardSetting(help_text="The deprovision guard's setting.")
    guard = GuardSerializer(help_text="The deprovision guard's state.")
    scim_rate_limit = serializers.IntegerField(
        allow_null=True,
        help_text="SCIM requests per minute this directory may make (a tenth of it at once); 0: no limit; null: "
        "the deployment's SCIM_RATE_LIMIT. Beyond it, SCIM answers 429 with Retry-After.",
    )


def _optional_text(max_length: int, help_text: str) -> serializers.CharField:
    # Optional fields take null and "" as "not given" (the services read them alike), so the document
    # says nullable; lengths are counted before surrounding spaces are trimmed.
    return serializers.CharField(
        required=False, allow_null=True, allow_blank=True, max_length=max_length, help_text=help_text
    )


def _tenant_field() -> serializers.CharField:
    return serializers.CharField(min_length=1, max_length=200, help_text="Required; no ':' or control characters.")


class DirectoryCreateInput(serializers.Serializer):
    tenant = _tenant_field()
    product = _tenant_field()
    name = _optional_text(200, "Defaults (when absent, null or empty) to one built from tenant and product.")
    type = serializers.ChoiceField(
        choices=TYPES,
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="generic-scim-v2 when absent, null or empty.",
    )
    webhook_url = _optional_text(2048, "An http or https URL on a public address; absent, null or empty: no webhook.")
    webhook_secret = _optional_text(512, "Needs webhook_url; generated if omitted.")
    webhook_format = serializers.ChoiceField(
        choices=["roster", "standard"],
        required=False,
        help_text="roster (default): the Roster-Signature header. standard: Standard Webhooks v1, which needs a "
        "webhook_secret of the form whsec_<base64>.",
    )
    log_webhook_events = serializers.BooleanField(required=False, allow_null=True, default=False)
    log_scim_requests = serializers.BooleanField(required=False, allow_null=True, default=False)
    # its bounds are set by restapi.openapi._tighten, as DirectoryPatchInput's
    scim_rate_limit = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="SCIM requests per minute, 1500 to 600000; 0 for no limit; null or absent for the deployment's "
        "SCIM_RATE_LIMIT.",
    )


def _map_input(help_text: str) -> serializers.DictField:
    return serializers.DictField(
        child=serializers.CharField(),
        required=False,
        allow_null=True,
        help_text=f"Replaces the whole map; null or {{}} clears it. {help_text}",
    )


# additionalProperties is set to false by restapi.openapi._tighten; this docstring is the public description.
class ScimPatchInput(serializers.Serializer):
    """The SCIM connection's settings; any other field is a 400."""

    static_secret_enabled = serializers.BooleanField(
        required=False,
        allow_null=True,
        help_text="false: the static SCIM secret stops authenticating (409 while OAuth has no client secret); "
        "true: it works again.",
    )


# additionalProperties is set to false by restapi.openapi._tighten; this docstring is the public description.
class DirectoryPatchInput(serializers.Serializer):
    """Any of these fields; any other field is a 400."""

    name = serializers.CharField(required=False, min_length=1, max_length=200)
    webhook_url = _optional_text(2048, "Empty or null removes the webhook.")
    webhook_secret = _optional_text(512, "Needs a webhook_url.")
    webhook_format = serializers.ChoiceField(
        choices=["roster", "standard"],
        required=False,
        help_text="roster (default): the Roster-Signature header. standard: Standard Webhooks v1, which needs a "
        "webhook_secret of the form whsec_<base64>.",
    )
    log_webhook_events = serializers.BooleanField(required=False, allow_null=True)
    deactivated = serializers.BooleanField(required=False, allow_null=True)
    # mapped attributes and roles: bounds and key patterns are set by restapi.openapi._tighten (MAP_SCHEMAS)
    attribute_map = _map_input(
        'Values are SCIM attribute paths (`[URN:]attr[.sub]`, or `attr[sub eq "x"].sub`); names are '
        "identifiers that are not User fields."
    )
    role_map = _map_input("Keys name a group by displayName (case-insensitive) or id.")
    log_scim_requests = serializers.BooleanField(required=False, allow_null=True)
    scim = ScimPatchInput(required=False, allow_null=True)
    static_secret_enabled = serializers.BooleanField(
        required=False, allow_null=True, help_text="The same as static_secret_enabled in scim; both, when sent, agree."
    )
    deprovision_guard = DeprovisionGuardInput(required=False)
    # its bounds (0, or SCIM_RATE_LIMIT_MIN to SCIM_RATE_LIMIT_MAX) are set by restapi.openapi._tighten
    scim_rate_limit = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="SCIM requests per minute, 1500 to 600000; 0 for no limit; null for the deployment's "
        "SCIM_RATE_LIMIT. A new limit starts with a full budget.",
    )


DirectoryEnvelope = envelope("DirectoryEnvelope", DirectorySerializer())
DirectoryListEnvelope = envelope("DirectoryListEnvelope", DirectorySerializer(many=True))
