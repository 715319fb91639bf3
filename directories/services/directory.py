"""Creating, changing and deleting a directory (contract §3), each with its event in the same transaction."""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.actors import Actor
from core import ratelimit
from core.apiinput import fields_known
from core.errors import Conflict, ValidationFailed
from core.outbound import validate_webhook_url
from directories.activity.services import scim_health_settle
from directories.guard.rules import guard_setting_merge
from directories.mapping import attribute_map_problem, role_map_problem
from directories.models import Directory, DirectoryType
from directories.oauthsecrets import secrets_live
from directories.outbox import outbox as _events
from directories.rendering import directory_public_data as _public
from directories.services.auditing import directory_audit, update_action, update_details
from directories.services.secrets import secret_generate, standard_secret_generate, standard_secret_valid

ALLOWED_TYPES = [choice.value for choice in DirectoryType]
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")
NAME_MAX_LENGTH = Directory._meta.get_field("name").max_length or 200
UPDATABLE_FIELDS = (
    "name",
    "webhook_url",
    "webhook_secret",
    "webhook_format",
    "log_webhook_events",
    "deactivated",
    "log_scim_requests",
    # mapped attributes and roles (contract §3)
    "attribute_map",
    "role_map",
    # the SCIM object's switch (contract §4.3), as `{"scim": {"static_secret_enabled": …}}` or at the top level
    "scim",
    "static_secret_enabled",
    # the deprovision guard (contract §4.2): a partial object, merged
    "deprovision_guard",
    # its SCIM rate limit (contract §4.5): requests per minute, 0 for none, null for SCIM_RATE_LIMIT
    "scim_rate_limit",
)
# The fields of `scim` an update may name; the rest of the Directory's `scim` object is read-only.
SCIM_UPDATABLE_FIELDS = ("static_secret_enabled",)
# A directory's own SCIM rate limit, in requests per minute (contract §4.5); 0 is no limit.
SCIM_RATE_LIMIT_MIN = 1500
SCIM_RATE_LIMIT_MAX = 600_000


def _string(data: dict[str, Any], field: str, *, max_length: int = 200) -> str | None:
    value = data.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationFailed(f"{field} must be a string.", field=field)
    # Measured as sent, before trimming: the OpenAPI document's maxLength is about the value sent.
    if len(value) > max_length:
        raise ValidationFailed(f"{field} must be at most {max_length} characters.", field=field)
    value = value.strip()
    if _CONTROL_CHARACTERS.search(value):
        # PostgreSQL text cannot hold NUL at all, and no name, tenant, URL or secret needs C0 controls.
        raise ValidationFailed(f"{field} must not contain control characters.", field=field)
    return value


def _boolean(data: dict[str, Any], field: str) -> bool | None:
    value = data.get(field)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise ValidationFailed(f"{field} must be true or false.", field=field)
    return value


def _tenant_or_product(data: dict[str, Any], field: str) -> str:
    value = _string(data, field)
    if not value:
        raise ValidationFailed(f"{field} is required.", field=field)
    if ":" in value:
        raise ValidationFailed(f"{field} must not contain ':'.", field=field)
    return value


def _webhook_fields(data: dict[str, Any], *, current_url: str) -> tuple[str | None, str | None]:
    url = _string(data, "webhook_url", max_length=2048)
    secret = _string(data, "webhook_secret", max_length=512)
    if url:
        validate_webhook_url(url)
    effective_url = current_url if url is None else url
    if secret and not effective_url:
        raise ValidationFailed("webhook_secret needs a webhook_url.", field="webhook_secret")
    return url, secret


WEBHOOK_FORMATS = ("roster", "standard")


def _webhook_format(data: dict[str, Any], *, current: str, secret: str) -> str | None:
    """`webhook_format` as given (None when absent), checked against the secret it will sign with: a
    `standard` webhook needs a `whsec_` secret (contract §5.2)."""
    if "webhook_format" not in data:
        fmt = None
    elif data["webhook_format"] not in WEBHOOK_FORMATS:
        raise ValidationFailed(f"webhook_format must be one of: {', '.join(WEBHOOK_FORMATS)}.", field="webhook_format")
    else:
        fmt = str(data["webhook_format"])
    if (fmt or current) == "standard" and secret and not standard_secret_valid(secret):
        raise ValidationFailed(
            "A standard webhook needs a webhook_secret of the form whsec_<base64 of at least 16 bytes>: send a new "
            "webhook_secret of that form with webhook_format.",
            field="webhook_secret" if data.get("webhook_secret") else "webhook_format",
        )
    return fmt


def directory_create(*, data: dict[str, Any], actor: Actor) -> Directory:
    """Create a directory from request data (name, tenant, product, type, webhook_url, webhook_secret,
    log_webhook_events, log_scim_requests, scim_rate_limit), raising ValidationFailed with a message naming
    the bad field. Audited as `directory.created`."""
    if not isinstance(data, dict):
        raise ValidationFailed("The body must be a JSON object.")
    tenant = _tenant_or_product(data, "tenant")
    product = _tenant_or_product(data, "product")
    dir_type = _string(data, "type", max_length=64) or DirectoryType.GENERIC.value
    if dir_type not in ALLOWED_TYPES:
        raise ValidationFailed(f"type must be one of: {', '.join(ALLOWED_TYPES)}.", field="type")
    # The built name must fit the column as a given one does: tenant and product may be 200 characters each.
    name = _string(data, "name") or f"{tenant} {product} ({DirectoryType(dir_type).label})"[:NAME_MAX_LENGTH]
    webhook_url, webhook_secret = _webhook_fields(data, current_url="")
    webhook_format = _webhook_format(data, current="roster", secret=webhook_secret or "") or "roster"
    if webhook_url and not webhook_secret:
        webhook_secret = standard_secret_generate() if webhook_format == "standard" else secret_generate()
    log_events = _boolean(data, "log_webhook_events") or False
    log_requests = _boolean(data, "log_scim_requests") or False
    rate_limit = scim_rate_limit_check(data.get("scim_rate_limit"))
    with transaction.atomic():
        directory = Directory.objects.create(
            name=name,
            tenant=tenant,
            product=product,
            type=dir_type,
            log_webhook_events=log_events,
            log_scim_requests=log_requests,
            scim_rate_limit=rate_limit,
            scim_secret=secret_generate(),
            webhook_url=webhook_url or "",
            webhook_secret=webhook_secret if webhook_url else "",
            webhook_format=webhook_format,
        )
        _events().event_record(directory=directory, event_type="dsync.created", data=_public(directory))
        directory_audit(
            actor=actor,
            action="directory.created",
            directory=directory,
            details={"type": directory.type, "webhook": bool(directory.webhook_url)},
        )
    return directory


def directory_update(*, directory: Directory, data: dict[str, Any], actor: Actor) -> tuple[Directory, list[str]]:
    """Apply a partial update; returns the directory and the names of fields that really changed. One audit
    entry names them (directories.services.auditing), none when nothing changed."""
    if not isinstance(data, dict):
        raise ValidationFailed("The body must be a JSON object.")
    fields_known(data, UPDATABLE_FIELDS, verb="Updatable")
    changes: dict[str, Any] = {}
    name = _string(data, "name")
    if "name" in data:
        if not name:
            raise ValidationFailed("name must not be empty.", field="name")
        changes["name"] = name
    if "webhook_url" in data and data["webhook_url"] in ("", None):
        # Removing the webhook removes its secret too: a directory without an endpoint sends nothing.
        changes["webhook_url"] = ""
        changes["webhook_secret"] = ""
        if data.get("webhook_secret"):
            raise ValidationFailed("webhook_secret needs a webhook_url.", field="webhook_secret")
    else:
        url, secret = _webhook_fields(data, current_url=directory.webhook_url)
        if url is not None:
            changes["webhook_url"] = url
            if not directory.webhook_secret and not secret:
                changes["webhook_secret"] = secret_generate()
        if secret:
            changes["webhook_secret"] = secret
    if "webhook_format" in data and data["webhook_format"] == "standard" and not data.get("webhook_secret"):
        if changes.get("webhook_secret"):  # generated above for a new URL: of the form the format needs
            changes["webhook_secret"] = standard_secret_generate()
    fmt = _webhook_format(
        data, current=directory.webhook_format, secret=changes.get("webhook_secret", directory.webhook_secret)
    )
    if fmt is not None:
        changes["webhook_format"] = fmt
    for flag in ("log_webhook_events", "deactivated", "log_scim_requests"):
        value = _boolean(data, flag)
        if value is not None:
            changes[flag] = value
    changes.update(_maps(data))
    static = _static_secret_enabled(data)
    if static is not None:
        changes["scim_static_secret_enabled"] = static
    if "deprovision_guard" in data:
        changes["deprovision_guard"] = guard_setting_merge(directory.deprovision_guard, data["deprovision_guard"])
    if "scim_rate_limit" in data:
        changes["scim_rate_limit"] = scim_rate_limit_check(data["scim_rate_limit"])
    changed = [f for f, v in changes.items() if getattr(directory, f) != v]
    if not changed:
        return directory, []
    with transaction.atomic():
        if "scim_static_secret_enabled" in changed and not changes["scim_static_secret_enabled"]:
            # Under the row's lock, from the row as committed: the directory must keep a way in.
            locked = Directory.objects.select_for_update().filter(pk=directory.pk)
            if not secrets_live(locked.values_list("scim_oauth_secrets", flat=True).first(), timezone.now()):
                raise Conflict(
                    "The static SCIM secret cannot be turned off while OAuth has no client secret (none unexpired): "
                    "the directory would have no way in. Create the OAuth client secret first "
                    "(POST …/scim-oauth-secret).",
                )
        for field in changed:
            setattr(directory, field, changes[field])
        directory.save(update_fields=[*changed, "updated_at"])
        if "deactivated" in changed:
            event = "dsync.deactivated" if directory.deactivated else "dsync.activated"
            _events().event_record(directory=directory, event_type=event, data=_public(directory))
            scim_health_settle(directory=directory)  # `deactivated` is a health state of its own
        if "scim_rate_limit" in changed:
            # A new limit starts with a full bucket, on every node: a throttled directory whose limit was
            # raised (or removed) is not held to what it spent under the old one.
            bucket = ratelimit.scim_bucket(directory.id)
            transaction.on_commit(lambda: ratelimit.forget(bucket))
        directory_audit(
            actor=actor,
            action=update_action(changed, directory),
            directory=directory,
            details=update_details(changed, directory),
        )
    return directory, changed


def scim_rate_limit_check(value: object) -> int | None:
    """A directory's `scim_rate_limit`: null (SCIM_RATE_LIMIT applies), 0 (no limit) or an integer from
    SCIM_RATE_LIMIT_MIN to SCIM_RATE_LIMIT_MAX requests per minute (not a bool, a float or a string)."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not (value == 0 or SCIM_RATE_LIMIT_MIN <= value <= SCIM_RATE_LIMIT_MAX)
    ):
        raise ValidationFailed(
            f"scim_rate_limit must be an integer from {SCIM_RATE_LIMIT_MIN} to {SCIM_RATE_LIMIT_MAX} requests per "
            "minute, 0 for no limit, or null for the deployment's SCIM_RATE_LIMIT.",
            field="scim_rate_limit",
        )
    return value


def _maps(data: dict[str, Any]) -> dict[str, Any]:
    """attribute_map and role_map of an update, validated whole (a 400 names the offending key, and
    nothing is saved); null clears a map."""
    changes: dict[str, Any] = {}
    for field, problem in (("attribute_map", attribute_map_problem), ("role_map", role_map_problem)):
        if field not in data:
            continue
        value = {} if data[field] is None else data[field]
        found = problem(value)
        if found is not None:
            raise ValidationFailed(found[1], field=field)
        changes[field] = value
    return changes


def _static_secret_enabled(data: dict[str, Any]) -> bool | None:
    """`static_secret_enabled` of an update's `scim` object (contract §4.3), also accepted as a top-level
    `static_secret_enabled`; None when absent. Both forms at once must agree."""
    values = []
    if data.get("scim") is not None:
        scim = data["scim"]
        if not isinstance(scim, dict):
            raise ValidationFailed('scim must be an object, e.g. {"static_secret_enabled": false}.', field="scim")
        fields_known(scim, SCIM_UPDATABLE_FIELDS, verb="Updatable in scim")
        if scim.get("static_secret_enabled") is not None:
            values.append(_flag(scim["static_secret_enabled"], "scim.static_secret_enabled"))
    if data.get("static_secret_enabled") is not None:
        values.append(_flag(data["static_secret_enabled"], "static_secret_enabled"))
    if len(set(values)) > 1:
        raise ValidationFailed(
            "scim.static_secret_enabled and static_secret_enabled disagree: send one.", field="static_secret_enabled"
        )
    return values[0] if values else None


def _flag(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationFailed(f"{field} must be true or false.", field=field)
    return value


def directory_delete(*, directory: Directory, actor: Actor) -> None:
    """Delete a directory with its users, groups, memberships, pending events and delivery log. Audited as
    `directory.deleted`: the entry keeps the directory's id, name, tenant and product after the row is gone."""
    with transaction.atomic():
        payload = _public(directory)
        outbox = _events()
        outbox.events_delete(directory_id=directory.id)
        outbox.event_record(directory=directory, event_type="dsync.deleted", data=payload)
        directory_audit(actor=actor, action="directory.deleted", directory=directory)
        directory.delete()
