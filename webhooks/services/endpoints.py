"""Webhook endpoints (contract §5.2): create, change, enable or disable, delete, rotate the secret. Each
write is audited in its own transaction, and each one that changes what the endpoint matches or where it
sends closes the revision in force and opens the next one (webhooks.models.WebhookEndpointRevision), so
the worker applies it to the events recorded after it."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.actors import Actor
from audit.services import audit_record
from core.apiinput import fields_known
from core.errors import ValidationFailed
from core.outbound import validate_webhook_url
from directories.models import Directory
from webhooks.models import EndpointFormat, WebhookEndpoint, WebhookEndpointRevision
from webhooks.signing import STANDARD_PREFIX, standard_key, standard_secret_generate

# The events an endpoint may name: a directory's eight (contract §5) and the directory-level ones.
DIRECTORY_EVENTS = (
    "user.created",
    "user.updated",
    "user.deleted",
    "group.created",
    "group.updated",
    "group.deleted",
    "group.user_added",
    "group.user_removed",
)
DSYNC_EVENTS = (
    "dsync.created",
    "dsync.deleted",
    "dsync.activated",
    "dsync.deactivated",
    "dsync.health_changed",
    "dsync.guard_tripped",
)
KNOWN_EVENTS = DIRECTORY_EVENTS + DSYNC_EVENTS
FORMATS = tuple(choice.value for choice in EndpointFormat)
GRACE_SECONDS_MAX = 86400
DESCRIPTION_MAX = 500
SECRET_MAX = 512
CREATE_FIELDS = ("url", "description", "events", "tenant", "product", "directory_id", "format", "enabled", "secret")
UPDATE_FIELDS = ("url", "description", "events", "tenant", "product", "directory_id", "format", "enabled")
# The fields a revision copies: what the worker matches on and where it sends.
_REVISED = ("url", "events", "tenant", "product", "directory_id", "enabled")


def _events(value: object) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ValidationFailed('events must be a non-empty list of event names, or ["*"].', field="events")
    if "*" in value:
        if len(value) != 1:
            raise ValidationFailed('events is either ["*"] or a list of event names, not both.', field="events")
        return ["*"]
    unknown = [v for v in value if v not in KNOWN_EVENTS]
    if unknown:
        raise ValidationFailed(
            f"Unknown event name(s): {', '.join(unknown)}. Known: {', '.join(KNOWN_EVENTS)}, or *.", field="events"
        )
    return list(dict.fromkeys(value))


def _filter_string(data: dict[str, Any], field: str) -> str | None:
    value = data.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise ValidationFailed(f"{field} must be null or a non-empty string of at most 200 characters.", field=field)
    return value.strip()


def _directory_id(value: object) -> uuid.UUID | None:
    if value is None:
        return None
    try:
        directory_id = uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        raise ValidationFailed("directory_id must be null or a directory id.", field="directory_id") from None
    if not Directory.objects.filter(pk=directory_id).exists():
        raise ValidationFailed("directory_id names no existing directory.", field="directory_id")
    return directory_id


def _format(value: object) -> str:
    if value not in FORMATS:
        raise ValidationFailed(f"format must be one of: {', '.join(FORMATS)}.", field="format")
    return str(value)


def _description(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > DESCRIPTION_MAX:
        raise ValidationFailed(
            f"description must be a string of at most {DESCRIPTION_MAX} characters.", field="description"
        )
    return value


def _enabled(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValidationFailed("enabled must be true or false.", field="enabled")
    return value


def secret_for(fmt: str, given: object = None) -> str:
    """The secret given (checked for the format) or a new one: `whsec_…` for `standard`."""
    if given is None:
        return standard_secret_generate()  # of the `whsec_` form whatever the format, so it may switch later
    if not isinstance(given, str) or not given or len(given) > SECRET_MAX:
        raise ValidationFailed(f"secret must be a non-empty string of at most {SECRET_MAX} characters.", field="secret")
    if fmt == EndpointFormat.STANDARD and standard_key(given) is None:
        raise ValidationFailed(
            f"A standard endpoint's secret must be {STANDARD_PREFIX}<base64 of at least 16 bytes>.", field="secret"
        )
    return given


def _url(value: object) -> str:
    if not isinstance(value, str) or len(value) > 2048:
        raise ValidationFailed("url must be a URL of at most 2048 characters.", field="url")
    validate_webhook_url(value, field="url")
    return value


def _body(data: object) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValidationFailed("The body must be a JSON object.")
    return data


def _revise(endpoint: WebhookEndpoint, at: Any, *, deleted: bool = False) -> None:
    """Close the revision in force at `at` and, unless the endpoint was deleted, open the next one."""
    WebhookEndpointRevision.objects.filter(endpoint=endpoint, valid_until__isnull=True).update(valid_until=at)
    if not deleted:
        WebhookEndpointRevision.objects.create(
            endpoint=endpoint, valid_from=at, **{field: getattr(endpoint, field) for field in _REVISED}
        )


def _audit(actor: Actor, action: str, endpoint: WebhookEndpoint, details: dict[str, Any] | None = None) -> None:
    audit_record(
        actor=actor,
        action=action,
        target_type="webhook_endpoint",
        target_id=endpoint.id,
        directory_id=endpoint.directory_id
        if endpoint.directory_id and Directory.objects.filter(pk=endpoint.directory_id).exists()
        else None,
        details={"url": endpoint.url, **(details or {})},
    )


def endpoint_create(*, data: object, actor: Actor) -> WebhookEndpoint:
    """A new endpoint from request data; its secret (given, or generated) is on the returned object, to be
    shown once. Raises ValidationFailed naming the bad field. Audited as `webhook_endpoint.created`."""
    data = _body(data)
    fields_known(data, CREATE_FIELDS, verb="Known")
    if "url" not in data:
        raise ValidationFailed("url is required.", field="url")
    fmt = _format(data.get("format", EndpointFormat.ROSTER))
    endpoint = WebhookEndpoint(
        url=_url(data["url"]),
        description=_description(data.get("description")),
        events=_events(data.get("events", ["*"])),
        tenant=_filter_string(data, "tenant"),
        product=_filter_string(data, "product"),
        directory_id=_directory_id(data.get("directory_id")),
        format=fmt,
        enabled=_enabled(data.get("enabled", True)),
        secret=secret_for(fmt, data.get("secret")),
    )
    with transaction.atomic():
        endpoint.save()
        _revise(endpoint, endpoint.created_at)
        _audit(actor, "webhook_endpoint.created", endpoint, {"events": endpoint.events, "format": endpoint.format})
    return endpoint


def endpoint_update(*, endpoint: WebhookEndpoint, data: object, actor: Actor) -> tuple[WebhookEndpoint, list[str]]:
    """A partial update (url, description, events, filters, format, enabled); returns the endpoint and the
    fields that changed. Switching to `standard` needs a `whsec_` secret: rotate first, or the update is
    refused. Audited as `webhook_endpoint.updated` (or `.enabled` / `.disabled` when only that changed)."""
    data = _body(data)
    fields_known(data, UPDATE_FIELDS, verb="Updatable")
    changes: dict[str, Any] = {}
    if "url" in data:
        changes["url"] = _url(data["url"])
    if "description" in data:
        changes["description"] = _description(data["description"])
    if "events" in data:
        changes["events"] = _events(data["events"])
    for field in ("tenant", "product"):
        if field in data:
            changes[field] = _filter_string(data, field)
    if "directory_id" in data:
        changes["directory_id"] = _directory_id(data["directory_id"])
    if "format" in data:
        changes["format"] = _format(data["format"])
        if changes["format"] == EndpointFormat.STANDARD and standard_key(endpoint.secret) is None:
            raise ValidationFailed(
                f"A standard endpoint needs a {STANDARD_PREFIX} secret: rotate the secret with format standard.",
                field="format",
            )
    if "enabled" in data:
        changes["enabled"] = _enabled(data["enabled"])
    changed = [field for field, value in changes.items() if getattr(endpoint, field) != value]
    if not changed:
        return endpoint, []
    with transaction.atomic():
        for field in changed:
            setattr(endpoint, field, changes[field])
        endpoint.save(update_fields=[*changed, "updated_at"])
        if any(field in _REVISED for field in changed):
            _revise(endpoint, endpoint.updated_at)
        action = "webhook_endpoint.updated"
        if changed == ["enabled"]:
            action = "webhook_endpoint.enabled" if endpoint.enabled else "webhook_endpoint.disabled"
        _audit(actor, action, endpoint, {"fields": changed})
    return endpoint, changed


def endpoint_delete(*, endpoint: WebhookEndpoint, actor: Actor) -> None:
    """Delete the endpoint: it matches no event recorded from now on, and its deliveries still waiting are
    dropped. Its row and delivery log stay, hidden, until the purge. Audited as `webhook_endpoint.deleted`."""
    now = timezone.now()
    with transaction.atomic():
        endpoint.deleted_at = now
        endpoint.enabled = False
        endpoint.save(update_fields=["deleted_at", "enabled", "updated_at"])
        _revise(endpoint, now, deleted=True)
        _audit(actor, "webhook_endpoint.deleted", endpoint)


def grace_seconds_check(value: object) -> int:
    if value is None:
        return 0
    if type(value) is not int or not 0 <= value <= GRACE_SECONDS_MAX:
        raise ValidationFailed(
            f"grace_seconds must be an integer from 0 to {GRACE_SECONDS_MAX}.", field="grace_seconds"
        )
    return value


def endpoint_secret_rotate(*, endpoint: WebhookEndpoint, data: object, actor: Actor) -> WebhookEndpoint:
    """A new secret (given as `secret`, or generated), shown once from the returned object. With
    `grace_seconds` a `standard` endpoint signs with both secrets until the grace ends; a `roster` endpoint
    switches at once (its header carries one signature). `format` may be given to switch the format with
    the new secret. Audited as `webhook_endpoint.secret_rotated`."""
    data = _body(data)
    fields_known(data, ("secret", "grace_seconds", "format"), verb="Known")
    grace = grace_seconds_check(data.get("grace_seconds"))
    fmt = _format(data["format"]) if "format" in data else endpoint.format
    new = secret_for(fmt, data.get("secret"))
    now = timezone.now()
    with transaction.atomic():
        keep_old = grace > 0 and fmt == EndpointFormat.STANDARD and standard_key(endpoint.secret) is not None
        endpoint.previous_secret = endpoint.secret if keep_old else ""
        endpoint.previous_secret_expires_at = now + timedelta(seconds=grace) if keep_old else None
        endpoint.secret = new
        endpoint.format = fmt
        endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_expires_at", "format", "updated_at"])
        _audit(actor, "webhook_endpoint.secret_rotated", endpoint, {"grace_seconds": grace if keep_old else 0})
    return endpoint
