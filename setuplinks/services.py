"""Writes on setup links (contract §3.1), each with its audit entry in the same transaction.

The REST API, the admin API, the portal and `manage.py directories setup-link` create and revoke links
here; the setup page itself opens a link, generates the directory's SCIM secret (or its OAuth client
secret, while OAuth is on) and saves its maps here.
Who asked is an `Actor` (audit.actors), which the surface builds: the audit trail records an admin as the
entry's actor, anyone else (an API key, the OS user of a command, a link) by name in the entry's details.
What a link does is audited as `setup-link:<id>`, the Actor the setup page builds (setuplinks.views).

Every write through a link locks the link's row first and checks it is still active and its directory
still active, so a revocation committed on any node stops the next request through the link, and a
revocation racing a write through the link waits for it (or the write waits and is refused).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from audit.actors import Actor
from audit.services import audit_record
from core.apiinput import fields_known
from core.crypto import secret_digest
from core.errors import Conflict, NotFound, RosterError, ValidationFailed
from core.text import text_problem
from directories.activity import recorder
from directories.activity.rendering import health_row
from directories.mapping import attribute_map_problem, role_map_problem
from directories.models import Directory
from directories.services import (
    directory_scim_oauth_secret_rotate,
    directory_scim_secret_rotate,
    directory_update,
    secret_generate,
)
from setuplinks.models import SetupLink, SetupLinkStatus

# expires_in (seconds): 5 minutes to 30 days, 3 days unless asked.
EXPIRES_IN_MIN = 300
EXPIRES_IN_MAX = 30 * 24 * 3600
EXPIRES_IN_DEFAULT = 3 * 24 * 3600
RETURN_URL_MAX = 2048
INPUT_FIELDS = ("expires_in", "return_url", "allow_mapping")
# A secret generated through a link keeps the previous one working this long when the directory is in
# use (an authenticated SCIM request within IN_USE_WITHIN), so the IdP can be updated without a failed
# push; a directory not in use has nothing to keep working.
GRACE_WHEN_IN_USE = 3600
IN_USE_WITHIN = timedelta(hours=24)
_LOOPBACK_NAMES = ("localhost", "localhost.")


@dataclass(frozen=True)
class SetupLinkInput:
    expires_in: int = EXPIRES_IN_DEFAULT
    return_url: str = ""
    allow_mapping: bool = False


def expires_in_check(value: object) -> int:
    if type(value) is not int or not EXPIRES_IN_MIN <= value <= EXPIRES_IN_MAX:
        raise ValidationFailed(
            f"expires_in must be an integer from {EXPIRES_IN_MIN} to {EXPIRES_IN_MAX} (seconds the link works).",
            field="expires_in",
        )
    return value


def _loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def return_url_check(value: object) -> str:
    """A return URL: https with a host and no user name or password in it, at most RETURN_URL_MAX
    characters; http only to a loopback host while DEBUG is on (a developer's own application). ""
    (or null) for none."""
    if value is None or value == "":
        return ""
    local = " (or http on localhost while DEBUG is on)." if settings.DEBUG else "."
    message = f"return_url must be an https URL without a user name or password{local}"
    if not isinstance(value, str) or len(value) > RETURN_URL_MAX or text_problem(value) is not None:
        raise ValidationFailed(message, field="return_url")
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in value):
        raise ValidationFailed(message, field="return_url")  # spaces and controls: not one URL
    try:
        parts = urlsplit(value)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise ValidationFailed(message, field="return_url") from None
    if not host or parts.username is not None or parts.password is not None:
        raise ValidationFailed(message, field="return_url")
    scheme = parts.scheme.lower()
    if scheme == "https" or (scheme == "http" and settings.DEBUG and _loopback(host)):
        return value
    raise ValidationFailed(message, field="return_url")


def setup_link_input(data: Any) -> SetupLinkInput:
    """The body of a create request: `{}` or any of expires_in, return_url, allow_mapping. Any other field
    is a 400 naming it, so a misspelt option (`expires_at`, `allowMapping`) is not silently ignored."""
    if not isinstance(data, dict):
        raise ValidationFailed("The body must be a JSON object.")
    fields_known(data, INPUT_FIELDS)
    allow_mapping = data.get("allow_mapping", False)
    if not isinstance(allow_mapping, bool):
        raise ValidationFailed("allow_mapping must be true or false.", field="allow_mapping")
    return SetupLinkInput(
        expires_in=expires_in_check(data.get("expires_in", EXPIRES_IN_DEFAULT)),
        return_url=return_url_check(data.get("return_url")),
        allow_mapping=allow_mapping,
    )


def _audit(
    *, actor: Actor, action: str, link: SetupLink, directory: Directory, details: dict[str, Any] | None = None
) -> None:
    """An entry about the link itself (created, revoked, first opened): its target is the link."""
    audit_record(
        actor=actor,
        action=action,
        target_type="setup_link",
        target_id=link.id,
        directory_id=directory.id,
        details={"setup_link_id": str(link.id), "name": directory.name, **(details or {})},
    )


def setup_link_create(
    *, directory: Directory, actor: Actor, asked: SetupLinkInput | None = None
) -> tuple[SetupLink, str]:
    """A new link to `directory`; returns the link and its token, which is not stored and shown only in
    this answer. A deactivated directory is a 409: its link could do nothing."""
    asked = asked or SetupLinkInput()
    expires_in_check(asked.expires_in)
    token = secret_generate()
    now = timezone.now()
    with transaction.atomic():
        # Under the directory's lock: a deactivation committed meanwhile is seen, not raced.
        locked = Directory.objects.select_for_update().filter(pk=directory.pk)
        current = locked.values("deactivated", "role_map").first()
        if current is None:
            raise NotFound("Directory not found.")
        if current["deactivated"]:
            raise Conflict("The directory is deactivated: activate it before inviting someone to set it up.")
        link = SetupLink.objects.create(
            directory=directory,
            token_hash=secret_digest(token),
            created_by=actor.name[:400],
            created_at=now,
            expires_at=now + timedelta(seconds=asked.expires_in),
            return_url=return_url_check(asked.return_url),
            allow_mapping=asked.allow_mapping,
            roles=sorted({r for r in (current["role_map"] or {}).values() if isinstance(r, str)}),
        )
        _audit(
            actor=actor,
            action="setup_link.created",
            link=link,
            directory=directory,
            details={
                "expires_at": link.expires_at.isoformat(),
                "allow_mapping": link.allow_mapping,
                "return_url": bool(link.return_url),
            },
        )
    return link, token


def setup_link_revoke(*, link: SetupLink, actor: Actor) -> SetupLink:
    """Revoke now; the link answers 404 from the next request on, on every node. Revoking a revoked
    link changes nothing and leaves no second entry."""
    with transaction.atomic():
        locked = SetupLink.objects.select_for_update().filter(pk=link.pk).first()
        if locked is None:
            raise NotFound("Setup link not found.")
        if locked.revoked_at is None:
            locked.revoked_at = timezone.now()
            locked.revoked_by = actor.name[:400]
            locked.save(update_fields=["revoked_at", "revoked_by"])
            details = {"was": _was(locked, locked.revoked_at)}
            _audit(actor=actor, action="setup_link.revoked", link=locked, directory=link.directory, details=details)
    return locked


def _was(link: SetupLink, at: datetime) -> str:
    """What the link was just before it was revoked: active, or already expired."""
    return SetupLinkStatus.EXPIRED.value if at >= link.expires_at else SetupLinkStatus.ACTIVE.value


def _link_locked(link: SetupLink) -> SetupLink:
    """The link's row under lock with its directory, still active and its directory still active: else
    NotFound (revoked, expired or gone meanwhile) or a 410 (the directory was deactivated)."""
    locked = SetupLink.objects.select_for_update().filter(pk=link.pk).first()
    if locked is None or locked.status_at(timezone.now()) != SetupLinkStatus.ACTIVE:
        raise NotFound("Setup link not found.")
    directory = Directory.objects.select_related("scim_health").filter(pk=locked.directory_id).first()
    if directory is None:
        raise NotFound("Setup link not found.")
    if directory.deactivated:
        raise RosterError("The directory of this setup link is deactivated.", status=410)
    locked.directory = directory
    return locked


def setup_link_open(*, link: SetupLink, actor: Actor) -> SetupLink:
    """Count one opening of the page; the first one is audited (`actor`: the link's, setuplinks.views). The
    count is one UPDATE (concurrent openings all count) and the first is the one that finds the count at 0."""
    now = timezone.now()
    with transaction.atomic():
        first = SetupLink.objects.filter(pk=link.pk, opened_count=0).update(opened_count=1, last_opened_at=now)
        if first:
            _audit(actor=actor, action="setup_link.opened", link=link, directory=link.directory)
        else:
            SetupLink.objects.filter(pk=link.pk).update(opened_count=F("opened_count") + 1, last_opened_at=now)
    link.last_opened_at = now
    return link


@dataclass(frozen=True)
class GeneratedSecret:
    directory: Directory
    secret: str
    grace_seconds: int  # how long the previous secret keeps working (0: it stopped at once)
    previous_expires_at: datetime | None


def setup_secret_generate(*, link: SetupLink, actor: Actor) -> GeneratedSecret:
    """A new SCIM secret for the link's directory, to be shown once. When the directory received an
    authenticated SCIM request within IN_USE_WITHIN, the previous secret keeps working GRACE_WHEN_IN_USE
    seconds (contract §4.1 rotation with grace); otherwise nobody uses it and it stops at once."""
    # This process's own SCIM activity first (its background thread writes it every few seconds), so
    # that a push made a moment ago through this process counts as use.
    recorder.flush()
    with transaction.atomic():
        locked = _link_locked(link)
        directory = locked.directory
        if not directory.scim_static_secret_enabled:
            # A secret that would not work: the application turned the static secret off (contract §4.3).
            raise Conflict("The SCIM secret is turned off for this connection: use OAuth client credentials.")
        health = health_row(directory)
        last = health.last_authenticated_at if health is not None else None
        in_use = last is not None and last >= timezone.now() - IN_USE_WITHIN
        grace = GRACE_WHEN_IN_USE if in_use else 0
        directory = directory_scim_secret_rotate(directory=directory, grace_seconds=grace, actor=actor)
    expires = directory.previous_scim_secret_expires_at if grace else None
    return GeneratedSecret(
        directory=directory, secret=directory.scim_secret, grace_seconds=grace, previous_expires_at=expires
    )


@dataclass(frozen=True)
class GeneratedClientSecret:
    directory: Directory
    secret: str


def setup_oauth_secret_generate(*, link: SetupLink, actor: Actor) -> GeneratedClientSecret:
    """A new client secret for the OAuth client of the link's directory (contract §4.3), to be shown once;
    every access token issued before stops working. Only while the directory's OAuth is on: whether a
    directory offers OAuth is the application's choice, a link only replaces the secret (409 otherwise)."""
    with transaction.atomic():
        locked = _link_locked(link)
        directory = locked.directory
        if not directory.scim_oauth_enabled:
            raise Conflict("OAuth is not on for this connection; the application turns it on.")
        directory, secret, _first = directory_scim_oauth_secret_rotate(directory=directory, actor=actor)
    return GeneratedClientSecret(directory=directory, secret=secret)


def role_choices(*, link: SetupLink, role_map: dict[str, Any]) -> list[str]:
    """The roles a group may be given through the link: those the map uses now and those it used when
    the link was made (contract §3.1: the IT admin picks among the application's roles)."""
    return sorted({*link.roles, *(r for r in role_map.values() if isinstance(r, str))})


class MappingRefused(RosterError):
    """A map posted through a link that cannot be saved; `errors` maps ("attribute", name),
    ("group", row) or ("role", row) to a message, shown next to that field."""

    def __init__(self, errors: dict[tuple[str, Any], str]) -> None:
        super().__init__("The mapping was not saved: correct the fields marked.")
        self.errors = errors


def mapping_problems(
    *, attribute_map: dict[str, str], role_rows: list[tuple[str, str]], roles: list[str]
) -> dict[tuple[str, Any], str]:
    """What is wrong with each field of a posted mapping, checked with the rules of every surface
    (directories.mapping), entry by entry so each message lands next to its field."""
    errors: dict[tuple[str, Any], str] = {}
    for name, path in attribute_map.items():
        if not path.strip():
            errors[("attribute", name)] = "Choose the SCIM attribute that holds this value."
            continue
        found = attribute_map_problem({name: path.strip()})
        if found is not None:
            errors[("attribute", name)] = found[1]
    seen: dict[str, int] = {}
    for row, (group, role) in enumerate(role_rows):
        group = group.strip()
        if not group:
            continue  # an empty row: nothing to map
        if role not in roles:
            errors[("role", row)] = "Choose one of the roles listed."
            continue
        found = role_map_problem({group: role})
        if found is not None:
            errors[("group", row)] = found[1]
            continue
        key = group.casefold()  # the map matches groups case-insensitively (directories.mapping.roles)
        if key in seen:
            errors[("group", row)] = "This group is already mapped above."
        seen[key] = row
    return errors


def setup_mapping_save(
    *, link: SetupLink, attribute_map: dict[str, str], role_rows: list[tuple[str, str]], actor: Actor
) -> list[str]:
    """Save the maps posted through a link: new paths for the attribute names the application declared
    (names it did not declare are ignored; none is added or removed) and the role map as the rows give
    it, each role one the application uses. Returns the fields that changed (audited when any did);
    MappingRefused names every field in error, and nothing is saved then."""
    if not link.allow_mapping:
        raise NotFound("Setup link not found.")
    with transaction.atomic():
        locked = _link_locked(link)
        directory = Directory.objects.select_for_update().get(pk=locked.directory_id)
        current = directory.attribute_map or {}
        # The names the application declared now, whatever the form was rendered from.
        paths = {name: attribute_map.get(name, current[name]) for name in current}
        roles = role_choices(link=locked, role_map=directory.role_map or {})
        errors = mapping_problems(attribute_map=paths, role_rows=role_rows, roles=roles)
        if errors:
            raise MappingRefused(errors)
        new_roles = {group.strip(): role for group, role in role_rows if group.strip()}
        for field, value, problem in (
            ("attribute_map", {n: p.strip() for n, p in paths.items()}, attribute_map_problem),
            ("role_map", new_roles, role_map_problem),
        ):
            found = problem(value)  # the whole map: its size limits
            if found is not None:
                raise ValidationFailed(found[1], field=field)
        maps = {"attribute_map": {n: p.strip() for n, p in paths.items()}, "role_map": new_roles}
        directory, changed = directory_update(directory=directory, data=maps, actor=actor)
    return changed
