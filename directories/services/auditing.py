"""The audit entry of a change to a directory, one shape whichever surface asked: the directory as its target,
its name, tenant and product (the entry outlives the directory), and what the change says of itself.

How an update is named is decided here too, once for every surface: one update leaves exactly one entry;
when it changes only one of the flags the portal offers as a separate switch, the entry carries that
switch's own name, so `?action=directory.webhook_logging_toggled` finds the toggles an auditor looks for. A
mixed update is `directory.updated` and its details still say the flags' new values.
"""

from __future__ import annotations

from typing import Any

from audit.actors import Actor
from audit.services import audit_record
from directories.models import Directory

# The flags whose new values an update's audit entry states (flags are not secrets).
UPDATE_FLAGS = ("log_webhook_events", "deactivated", "log_scim_requests", "scim_static_secret_enabled")


def directory_audit(*, actor: Actor, action: str, directory: Directory, details: dict[str, Any] | None = None) -> None:
    """Record `action` on `directory` by `actor`; call it inside the change's transaction."""
    audit_record(
        actor=actor,
        action=action,
        target_type="directory",
        target_id=directory.id,
        directory_id=directory.id,
        details={"name": directory.name, "tenant": directory.tenant, "product": directory.product, **(details or {})},
    )


def update_action(changed: list[str], directory: Directory) -> str:
    """The audit action of one update (the module's docstring)."""
    if changed == ["log_webhook_events"]:
        return "directory.webhook_logging_toggled"
    if changed == ["log_scim_requests"]:
        return "directory.scim_logging_toggled"
    if changed == ["deactivated"]:
        return "directory.deactivated" if directory.deactivated else "directory.activated"
    if changed == ["scim_static_secret_enabled"]:
        # Contract §4.3: every switch of the static SCIM secret is audited under its own name.
        return "directory.scim_static_secret_toggled"
    return "directory.updated"


def update_details(changed: list[str], directory: Directory) -> dict[str, Any]:
    """What an update's audit entry says: the fields changed, the new values of the flags among them and the
    new guard setting (the new name is the entry's `name`)."""
    details: dict[str, Any] = {"fields": changed}
    for flag in UPDATE_FLAGS:
        if flag in changed:
            details[flag] = getattr(directory, flag)
    if "deprovision_guard" in changed:
        details["deprovision_guard"] = directory.deprovision_guard
    if "scim_rate_limit" in changed:
        details["scim_rate_limit"] = directory.scim_rate_limit
    return details
