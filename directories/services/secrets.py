"""A directory's secrets: the SCIM secret, rotated with grace and the previous one stopped (contract §4.1), and
its webhook secret. The OAuth client secrets of its SCIM endpoint (contract §4.3) are in `oauth_secrets`."""

from __future__ import annotations

import base64
import binascii
import secrets
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.actors import Actor
from core.apiinput import fields_known
from core.errors import NotFound, ValidationFailed
from directories.activity.services import scim_previous_secret_forgotten, scim_secret_rotated
from directories.models import Directory
from directories.services.auditing import directory_audit

# A rotation may keep the previous SCIM secret working this long (contract §4.1: 7 days).
GRACE_SECONDS_MAX = 7 * 24 * 3600


def secret_generate() -> str:
    """A url-safe secret with 32 random bytes (256 bits) behind it."""
    return secrets.token_urlsafe(32)


def standard_secret_generate() -> str:
    """A Standard Webhooks secret (contract §5.2): `whsec_` and the base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def standard_secret_valid(secret: str) -> bool:
    """Whether `secret` is `whsec_<base64 of at least 16 bytes>`, what a `standard` webhook signs with."""
    if not secret.startswith("whsec_"):
        return False
    try:
        return len(base64.b64decode(secret[6:], validate=True)) >= 16
    except (binascii.Error, ValueError):
        return False


def grace_seconds_check(value: object) -> int:
    """`grace_seconds` of a SCIM secret rotation: an integer from 0 to GRACE_SECONDS_MAX (not a bool,
    a float or a string of digits), else ValidationFailed naming the field."""
    if type(value) is not int or not 0 <= value <= GRACE_SECONDS_MAX:
        raise ValidationFailed(
            f"grace_seconds must be an integer from 0 to {GRACE_SECONDS_MAX} (seconds the old secret keeps working).",
            field="grace_seconds",
        )
    return value


def scim_secret_rotation_input(data: dict[str, Any]) -> int:
    """The `grace_seconds` of a rotation request's body (`{}` or `{"grace_seconds": N}`; 0 when absent)."""
    fields_known(data, ["grace_seconds"])
    return grace_seconds_check(data.get("grace_seconds", 0))


def directory_scim_secret_rotate(*, directory: Directory, grace_seconds: int = 0, actor: Actor) -> Directory:
    """A new SCIM secret. With `grace_seconds`, the one it replaces keeps working that long (contract
    §4.1), so the identity provider can be updated without a failed push; with 0 it stops at once, and
    so does any secret an earlier rotation kept. Only one previous secret is kept. Audited, never with a
    secret."""
    grace = grace_seconds_check(grace_seconds)
    with transaction.atomic():
        # Under the row's lock: of two rotations at once, the second keeps the secret the first made.
        locked = Directory.objects.select_for_update().filter(pk=directory.pk)
        old = locked.values_list("scim_secret", flat=True).first()
        if old is None:
            raise NotFound("Directory not found.")  # deleted since it was read
        directory.scim_secret = secret_generate()
        directory.previous_scim_secret = old if grace else ""
        directory.previous_scim_secret_expires_at = timezone.now() + timedelta(seconds=grace) if grace else None
        directory.save(
            update_fields=["scim_secret", "previous_scim_secret", "previous_scim_secret_expires_at", "updated_at"]
        )
        scim_secret_rotated(directory=directory, previous_kept=bool(grace))
        directory_audit(
            actor=actor, action="directory.scim_secret_rotated", directory=directory, details={"grace_seconds": grace}
        )
    return directory


def directory_previous_scim_secret_revoke(*, directory: Directory, actor: Actor) -> tuple[Directory, bool]:
    """Stop the previous SCIM secret now, before its grace ends; returns the directory and whether there
    was one to stop (audited only then)."""
    had = directory.previous_scim_secret_valid(timezone.now())
    if not directory.previous_scim_secret and directory.previous_scim_secret_expires_at is None:
        return directory, False
    with transaction.atomic():
        directory.previous_scim_secret = ""
        directory.previous_scim_secret_expires_at = None
        directory.save(update_fields=["previous_scim_secret", "previous_scim_secret_expires_at", "updated_at"])
        scim_previous_secret_forgotten(directory=directory)
        if had:
            directory_audit(actor=actor, action="directory.previous_scim_secret_revoked", directory=directory)
    return directory, had


def directory_webhook_secret_rotate(*, directory: Directory, actor: Actor) -> Directory:
    """A new webhook secret; the old one stops at once. Audited, never with a secret."""
    if not directory.webhook_url:
        raise ValidationFailed("This directory has no webhook_url, so it has no webhook secret to rotate.")
    with transaction.atomic():
        # A standard webhook keeps a secret of the form it signs with (contract §5.2).
        standard = directory.webhook_format == "standard"
        directory.webhook_secret = standard_secret_generate() if standard else secret_generate()
        directory.save(update_fields=["webhook_secret", "updated_at"])
        directory_audit(actor=actor, action="directory.webhook_secret_rotated", directory=directory)
    return directory
