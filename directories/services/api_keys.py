"""The REST API's keys (`manage.py apikey`): made, shown once, revoked; each audited."""

from __future__ import annotations

import secrets

from django.db import transaction
from django.utils import timezone

from audit.actors import Actor
from audit.services import audit_record
from core.errors import ValidationFailed
from directories.models import ApiKey, api_key_hash


def _audit(actor: Actor, action: str, row: ApiKey) -> None:
    # The prefix tells keys apart in lists; it is not the key.
    details = {"name": row.name, "prefix": row.prefix}
    audit_record(actor=actor, action=action, target_type="api_key", target_id=str(row.id), details=details)


def api_key_create(*, name: str, actor: Actor) -> tuple[ApiKey, str]:
    """Create an API key; returns the row and the key itself, which is not stored and shown only once."""
    name = (name or "").strip()
    if not name:
        raise ValidationFailed("name is required.", field="name")
    key = "rk_" + secrets.token_urlsafe(32)
    with transaction.atomic():
        row = ApiKey.objects.create(name=name, prefix=key[:10], key_hash=api_key_hash(key))
        _audit(actor, "api_key.created", row)
    return row, key


def api_key_revoke(*, api_key: ApiKey, actor: Actor) -> ApiKey:
    """Revoke a key now; revoking a revoked key changes nothing and leaves no second entry."""
    if api_key.revoked_at is None:
        with transaction.atomic():
            api_key.revoked_at = timezone.now()
            api_key.save(update_fields=["revoked_at"])
            _audit(actor, "api_key.revoked", api_key)
    return api_key
