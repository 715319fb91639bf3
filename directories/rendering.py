"""The public shapes of contract §3 (Directory, User, Group), shared by the REST API, webhooks and admin API."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import orjson
from django.utils import timezone

from core.surfaces import ENTRA_FLAG, scim_base_url, scim_path, scim_token_url
from core.timefmt import iso_utc, iso_utc_or_none
from directories.activity.rendering import health_data, health_row, scim_secret_data
from directories.guard.rendering import guard_data
from directories.guard.rules import guard_setting
from directories.guard.selectors import GuardFacts, guard_facts
from directories.mapping import custom_attributes, roles
from directories.models import Directory, DirectoryGroup, DirectoryType, DirectoryUser
from directories.outbox import feed_heads
from directories.selectors import directories_by_id, user_groups_attach


def scim_endpoint(directory: Directory) -> str:
    endpoint = scim_base_url(directory.id)
    return f"{endpoint}?{ENTRA_FLAG}" if directory.type == DirectoryType.AZURE else endpoint


def scim_oauth_data(directory: Directory, *, client_secret: str | None = None) -> dict[str, Any]:
    """`scim.oauth` (contract §4.3): the directory's OAuth client. Its id is the directory's id (stable, and
    it names nothing the URL does not); `enabled` once it has a client secret. `client_secret` only in the
    answer that created it: only its digest is stored."""
    data: dict[str, Any] = {
        "client_id": str(directory.id),
        "token_endpoint": scim_token_url(directory.id),
        "enabled": directory.scim_oauth_enabled,
        "client_secret_created_at": iso_utc_or_none(directory.scim_oauth_secret_created_at),
    }
    if client_secret is not None:
        data["client_secret"] = client_secret
    return data


def oauth_secret_new_data(entry: dict[str, Any], secret: str) -> dict[str, Any]:
    """An OAuth client secret just added (contract §4.3): the only answer that shows it."""
    return {
        "id": entry["id"],
        "client_secret": secret,
        "created_at": entry["created_at"],
        "expires_at": entry["expires_at"],
    }


def events_data(last_sequence: int, oldest_sequence: int | None) -> dict[str, Any]:
    """`events` (contract §5.1): where the directory's changes feed stands. Also the `events` of a feed read."""
    return {"last_sequence": last_sequence, "oldest_sequence": oldest_sequence}


_NO_EVENTS = (0, None)


def directory_data(
    directory: Directory,
    *,
    now: datetime | None = None,
    events: tuple[int, int | None] | None = None,
    guard: GuardFacts | None = None,
) -> dict[str, Any]:
    """The Directory. `events`: its feed's (last, oldest) sequence, and `guard`: its deprovision guard's
    facts, when the caller read them with others (`directories_data`); read here otherwise."""
    now = now or timezone.now()
    if events is None:
        events = feed_heads([directory.id]).get(directory.id, _NO_EVENTS)
    if guard is None:
        guard = guard_facts([directory])[directory.id]
    data = {
        "id": str(directory.id),
        "name": directory.name,
        "tenant": directory.tenant,
        "product": directory.product,
        "type": directory.type,
        "log_webhook_events": directory.log_webhook_events,
        "deactivated": directory.deactivated,
        "scim": {
            "path": scim_path(directory.id),
            "secret": directory.scim_secret,
            "endpoint": scim_endpoint(directory),
            "static_secret_enabled": directory.scim_static_secret_enabled,
            "oauth": scim_oauth_data(directory),
        },
        "webhook": {"endpoint": directory.webhook_url or None, "secret": directory.webhook_secret or None},
        "webhook_format": directory.webhook_format,
        "created_at": iso_utc_or_none(directory.created_at),
        # mapped attributes and roles (contract §3)
        "attribute_map": directory.attribute_map,
        "role_map": directory.role_map,
    }
    _scim_activity_add(data, directory, now)
    data["events"] = events_data(*events)
    # the deprovision guard (contract §4.2): its setting, whole, and its state
    data["deprovision_guard"] = guard_setting(directory.deprovision_guard)
    data["guard"] = guard_data(directory, guard)
    # its SCIM rate limit (contract §4.5): as set (null: SCIM_RATE_LIMIT applies)
    data["scim_rate_limit"] = directory.scim_rate_limit
    return data


def directories_data(directories: Iterable[Directory], *, now: datetime | None = None) -> list[dict[str, Any]]:
    """A page of Directories, their feeds' summaries and their guards' facts read once for the whole page."""
    rows = list(directories)
    now = now or timezone.now()
    heads = feed_heads([d.id for d in rows]) if rows else {}
    guards = guard_facts(rows)
    return [directory_data(d, now=now, events=heads.get(d.id, _NO_EVENTS), guard=guards[d.id]) for d in rows]


def _scim_activity_add(data: dict[str, Any], directory: Directory, now: datetime) -> None:
    """Contract §4.1: the request-log switch, the secrets' expiry and last uses, and `health`."""
    health = health_row(directory)
    data["log_scim_requests"] = directory.log_scim_requests
    data["scim"].update(scim_secret_data(directory, health, now))
    data["health"] = health_data(directory, health, now)


def directory_with_client_secret(directory: Directory, client_secret: str) -> dict[str, Any]:
    """The Directory with the OAuth client secret just made (`data.scim.oauth.client_secret`): the one answer
    that shows it (contract §4.3)."""
    data = directory_data(directory)
    data["scim"]["oauth"] = scim_oauth_data(directory, client_secret=client_secret)
    return data


def directory_public_data(directory: Directory, *, now: datetime | None = None) -> dict[str, Any]:
    """The directory as sent in dsync.* events: without its SCIM and webhook secrets."""
    data = directory_data(directory, now=now)
    data["scim"] = {k: v for k, v in data["scim"].items() if k != "secret"}
    data["webhook"] = {"endpoint": data["webhook"]["endpoint"]}
    return data


def user_stored_data(user: DirectoryUser) -> dict[str, Any]:
    """The fields of a User (contract §3) that the user's row holds, without what the directory's maps
    compute (`custom_attributes`, `roles`): what history keeps of a user version."""
    return {
        "id": str(user.id),
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "active": user.active,
        "raw": user.raw,
        "created_at": iso_utc(user.created_at),
        "updated_at": iso_utc(user.updated_at),
    }


def user_data(user: DirectoryUser, *, directory: Directory) -> dict[str, Any]:
    """A User of `directory` (the user's own). Its `roles` need the user's groups: with a non-empty
    role_map, `user.member_of` must have been read (directories.selectors.user_groups_attach)."""
    if directory.role_map and user.member_of is None:
        raise ValueError("user_data needs the user's groups (member_of) for the directory's role_map")
    data = user_stored_data(user)
    # mapped attributes and roles (contract §3)
    data["custom_attributes"] = custom_attributes(user.raw, directory.attribute_map)
    data["roles"] = roles(user.member_of or (), directory.role_map)
    return data


def user_event(directory: Directory, user: DirectoryUser) -> dict[str, Any]:
    """The User of a user event: its roles need its groups, read only when the directory maps roles
    (one query; the reads that brought the user along may have read them already)."""
    if directory.role_map:
        user_groups_attach(users=[user])
    return user_data(user, directory=directory)


def user_updated(
    directory: Directory, user: DirectoryUser, before: DirectoryUser
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """`user.updated` for `user` as changed, with its `previous_attributes` against `before`, a copy
    taken before the change (`copy.copy`: the change sets new values, never edits the old ones). A
    user write never changes the user's groups, so both renderings share them."""
    data = user_event(directory, user)
    before.member_of = user.member_of
    return ("user.updated", data, previous_attributes(user_data(before, directory=directory), data))


def group_data(group: DirectoryGroup) -> dict[str, Any]:
    return {
        "id": str(group.id),
        "name": group.display_name,
        "raw": group.raw,
        "created_at": iso_utc(group.created_at),
        "updated_at": iso_utc(group.updated_at),
    }


# The top-level fields of a User or a Group whose earlier value `user.updated` and `group.updated` carry
# in `previous_attributes` (contract §5.1); `raw` is compared key by key, `updated_at` and `meta` never.
PREVIOUS_FIELDS = ("first_name", "last_name", "email", "active", "name", "custom_attributes", "roles")
_RAW_SKIPPED = frozenset({"meta"})


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: Python's == alone takes true for 1 and 1 for 1.0."""
    if a != b:
        return False
    return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)


def previous_attributes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What changed between two renderings of one User or Group (`user_data` or `group_data`, before and
    after a write): the earlier value of each field of PREVIOUS_FIELDS that changed and, under `raw`,
    the earlier value of each top-level key of `raw` that was added (null), removed or changed. Empty
    when nothing a reader sees changed."""
    previous = {
        field: before[field]
        for field in PREVIOUS_FIELDS
        if field in before and not _same(before[field], after.get(field))
    }
    old_raw, new_raw = before.get("raw") or {}, after.get("raw") or {}
    raw = {
        key: old_raw.get(key)
        for key in [*old_raw, *(k for k in new_raw if k not in old_raw)]
        if key not in _RAW_SKIPPED
        and (key not in old_raw or key not in new_raw or not _same(old_raw[key], new_raw[key]))
    }
    if raw:
        previous["raw"] = raw
    return previous


def group_with_members_data(group: DirectoryGroup, member_ids: Iterable[Any]) -> dict[str, Any]:
    """A Group with `members: [{group_id, user_id}]`: the REST group detail, and each group of an export."""
    data = group_data(group)
    data["members"] = [{"group_id": data["id"], "user_id": str(user_id)} for user_id in member_ids]
    return data


def users_data(users: list[DirectoryUser], known: dict[Any, Directory] | None = None) -> list[dict[str, Any]]:
    """Users in the REST shape: each with its directory's attribute and role maps (`known`: directories
    already read; one query for the others unless they came with the users, and one for the groups of
    the users whose directory maps roles)."""
    loaded = {u.directory_id: u.directory for u in users if DirectoryUser.directory.is_cached(u)} | (known or {})
    directories = loaded | directories_by_id(ids={user.directory_id for user in users} - set(loaded))
    user_groups_attach(users=[user for user in users if directories[user.directory_id].role_map])
    return [user_data(user, directory=directories[user.directory_id]) for user in users]
