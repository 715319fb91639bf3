"""The client secrets of a directory's OAuth client (contract §4.3): add one (shown once, with an expiry),
revoke one, rotate (revoke them all and add one: the single-secret route), and note when one was used.

They are kept on the directory's row (directories.oauthsecrets says why); every write here takes the row's
lock first, so two writes at once never lose one another's secrets, and is audited, never with a secret
(the entry names the secret by its id as `credential_id`: the audit trail drops any key naming a secret).
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.actors import Actor
from core.apiinput import fields_known
from core.crypto import secret_digest
from core.errors import Conflict, NotFound, ValidationFailed
from core.timefmt import iso_utc
from directories.models import Directory
from directories.oauthsecrets import EXPIRED_KEPT, LIVE_MAX, secret_live, secrets_live
from directories.services.auditing import directory_audit
from directories.services.secrets import secret_generate

EXPIRES_IN_DAYS_MIN = 1
EXPIRES_IN_DAYS_MAX = 1095
EXPIRES_IN_DAYS_DEFAULT = 365


def scim_oauth_secret_add_input(data: dict[str, Any]) -> int:
    """The `expires_in_days` of an add request's body (`{}` or `{"expires_in_days": d}`, 1…1095, 365 when
    absent); any other field, or another value, is a 400 naming it."""
    fields_known(data, ["expires_in_days"])
    days = data.get("expires_in_days", EXPIRES_IN_DAYS_DEFAULT)
    if type(days) is not int or not EXPIRES_IN_DAYS_MIN <= days <= EXPIRES_IN_DAYS_MAX:
        raise ValidationFailed(
            f"expires_in_days must be an integer from {EXPIRES_IN_DAYS_MIN} to {EXPIRES_IN_DAYS_MAX} "
            "(days the client secret works).",
            field="expires_in_days",
        )
    return days


def scim_oauth_secret_rotation_input(data: dict[str, Any]) -> None:
    """The body of a client secret rotation: `{}` (or none). Any field is a 400 naming it."""
    fields_known(data, [])


def _locked(directory: Directory) -> list[dict[str, Any]]:
    """The directory's secrets as committed, its row locked until the transaction ends."""
    row = Directory.objects.select_for_update().filter(pk=directory.pk).values_list("scim_oauth_secrets", flat=True)
    stored = row.first()
    if stored is None:
        raise NotFound("Directory not found.")  # deleted since it was read
    return list(stored)


def _entry(secret: str, days: int) -> dict[str, Any]:
    now = timezone.now()
    return {
        "id": str(uuid.uuid4()),
        "hash": secret_digest(secret),
        "hint": secret[-4:],
        "created_at": iso_utc(now),
        "expires_at": iso_utc(now + timedelta(days=days)),
        "last_used_at": None,
    }


def _kept(stored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The list with only the newest EXPIRED_KEPT expired secrets left in it."""
    now = timezone.now()
    expired = 0
    kept = []
    for entry in stored:
        if not secret_live(entry, now):
            expired += 1
            if expired > EXPIRED_KEPT:
                continue
        kept.append(entry)
    return kept


def _save(directory: Directory, stored: list[dict[str, Any]]) -> None:
    directory.scim_oauth_secrets = stored
    directory.save(update_fields=["scim_oauth_secrets", "updated_at"])


def directory_scim_oauth_secret_add(
    *, directory: Directory, expires_in_days: int = EXPIRES_IN_DAYS_DEFAULT, actor: Actor
) -> tuple[Directory, dict[str, Any], str]:
    """A new client secret, working `expires_in_days` days: returns the directory, the secret's entry and
    the secret itself (only its digest is stored: shown in this answer only). The directory's other
    secrets keep working. A sixth unexpired one is a Conflict (409)."""
    secret = secret_generate()
    entry = _entry(secret, expires_in_days)
    with transaction.atomic():
        stored = _locked(directory)
        if len(secrets_live(stored, timezone.now())) >= LIVE_MAX:
            raise Conflict(
                f"This directory already has {LIVE_MAX} unexpired OAuth client secrets; revoke one "
                "(DELETE …/scim-oauth-secrets/<secret_id>) before adding another."
            )
        _save(directory, _kept([entry, *stored]))
        directory_audit(
            actor=actor,
            action="directory.scim_oauth_secret_added",
            directory=directory,
            details={"credential_id": entry["id"], "expires_at": entry["expires_at"]},
        )
    return directory, entry, secret


def directory_scim_oauth_secret_revoke(*, directory: Directory, secret_id: str, actor: Actor) -> Directory:
    """Revoke one client secret: it obtains no more tokens, and the tokens it obtained stop working at the
    next request, on every node (scim/access_tokens.py); the other secrets and their tokens keep working. An
    unknown id is NotFound (404)."""
    with transaction.atomic():
        stored = _locked(directory)
        kept = [entry for entry in stored if entry["id"] != str(secret_id)]
        if len(kept) == len(stored):
            raise NotFound("No such OAuth client secret for this directory.")
        _save(directory, kept)
        directory_audit(
            actor=actor,
            action="directory.scim_oauth_secret_revoked",
            directory=directory,
            details={"credential_id": str(secret_id)},
        )
    return directory


def directory_scim_oauth_secret_rotate(*, directory: Directory, actor: Actor) -> tuple[Directory, str, bool]:
    """The single-secret route (contract §4.3): revoke every client secret and add one, expiring after
    EXPIRES_IN_DAYS_DEFAULT days. Returns the directory, the secret (shown in this answer only) and whether
    it is the first (OAuth was off until now). Every access token issued before stops working at once, on
    every node. Audited, never with the secret."""
    secret = secret_generate()
    entry = _entry(secret, EXPIRES_IN_DAYS_DEFAULT)
    with transaction.atomic():
        stored = _locked(directory)
        first = not secrets_live(stored, timezone.now())
        _save(directory, [entry])
        details = {"first": first}
        directory_audit(actor=actor, action="directory.scim_oauth_secret_rotated", directory=directory, details=details)
    return directory, secret, first


def scim_oauth_secret_used(*, directory: Directory, secret_id: str) -> None:
    """Note that the secret `secret_id` just obtained an access token (its `last_used_at`). A record of use,
    not a change anyone made: not audited. Nothing happens when the secret was revoked meanwhile."""
    with transaction.atomic():
        stored = _locked(directory)
        for entry in stored:
            if entry["id"] == secret_id:
                entry["last_used_at"] = iso_utc(timezone.now())
                Directory.objects.filter(pk=directory.pk).update(scim_oauth_secrets=stored)
                directory.scim_oauth_secrets = stored
                return
