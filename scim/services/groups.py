"""SCIM writes of groups and their memberships, each with its events."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from core.rows import RowWriter
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from directories.rendering import group_data, user_data
from scim import statements
from scim.documents import MemberPlan, group_finalize, group_patch, member_ids, patch_operations, require_object
from scim.errors import ScimError, invalid_value, not_found, uniqueness
from scim.selectors import (
    GroupWithUsers,
    scim_directory_users_by_id,
    scim_group_get,
    scim_group_member_ids,
    scim_group_with_users,
)
from scim.statements import Events
from webhooks.services import events_record

CHUNK = 500
_groups = RowWriter(DirectoryGroup)


def _require_users(wanted: list[uuid.UUID], users: dict[uuid.UUID, DirectoryUser]) -> None:
    """400 unless every id in `wanted` is among `users` (the users of this directory that were found)."""
    missing = [str(i) for i in wanted if i not in users]
    if missing:
        shown = ", ".join(missing[:3]) + (" …" if len(missing) > 3 else "")
        raise invalid_value(f"Not a user of this directory: {shown}.")


def _check_members(*, directory: Directory, plan: MemberPlan) -> dict[uuid.UUID, DirectoryUser]:
    """The users a plan adds (all must belong to this directory) and removes, by id, in one query."""
    wanted = list(dict.fromkeys([*plan.referenced(), *plan.remove]))
    users = scim_directory_users_by_id(directory=directory, user_ids=wanted, lock=True)
    _require_users(plan.referenced(), users)
    return users


def _member_statements(
    group: DirectoryGroup, user_ids: list[uuid.UUID], statement: Callable[[Any, list[Any]], tuple[str, list[Any]]]
) -> list[uuid.UUID]:
    """Run `statement(group value, user values)` → (sql, params) over `user_ids` in chunks of CHUNK, each
    sorted (one order everywhere: no lock cycles between member writers); the user ids they return."""
    done: list[uuid.UUID] = []
    pk_field = DirectoryUser._meta.pk
    group_value = DirectoryGroup._meta.pk.get_db_prep_value(group.id, connection)
    with connection.cursor() as cursor:
        for start in range(0, len(user_ids), CHUNK):
            chunk = [pk_field.get_db_prep_value(u, connection) for u in sorted(user_ids[start : start + CHUNK])]
            cursor.execute(*statement(group_value, chunk))
            done += [uuid.UUID(str(row[0])) for row in cursor.fetchall()]
    return done


def _membership_insert(group: DirectoryGroup, user_ids: list[uuid.UUID]) -> list[uuid.UUID]:
    """INSERT … ON CONFLICT DO NOTHING RETURNING: the ids really added (a present member is a no-op)."""
    table = GroupMembership._meta.db_table
    now = connection.ops.adapt_datetimefield_value(timezone.now())

    def insert(group_value: Any, users: list[Any]) -> tuple[str, list[Any]]:
        rows = ", ".join(["(%s, %s, %s)"] * len(users))
        sql = (
            f'INSERT INTO "{table}" ("group_id", "user_id", "created_at") VALUES {rows} '  # noqa: S608
            'ON CONFLICT ("group_id", "user_id") DO NOTHING RETURNING "user_id"'
        )
        return sql, [value for user in users for value in (group_value, user, now)]

    return _member_statements(group, user_ids, insert)


def _membership_delete(group: DirectoryGroup, user_ids: list[uuid.UUID]) -> list[uuid.UUID]:
    """DELETE … RETURNING: the ids really removed (a non-member is a no-op)."""
    table = GroupMembership._meta.db_table

    def delete(group_value: Any, users: list[Any]) -> tuple[str, list[Any]]:
        marks = ", ".join(["%s"] * len(users))
        sql = f'DELETE FROM "{table}" WHERE "group_id" = %s AND "user_id" IN ({marks}) RETURNING "user_id"'  # noqa: S608
        return sql, [group_value, *users]

    return _member_statements(group, user_ids, delete)


def _members_add_checked(
    *, directory: Directory, group: DirectoryGroup, user_ids: list[uuid.UUID]
) -> tuple[dict[uuid.UUID, DirectoryUser], list[uuid.UUID]]:
    """PostgreSQL, adds only: check the users, lock them and insert the memberships in one statement.

    The same locks in the same order as `_check_members` + `_membership_insert` (FOR KEY SHARE on the
    users by id, then inserts by user id), one round trip instead of two. Returns the users found and
    the ids really added; the caller rejects the request (and so rolls the inserts back) when a user
    is missing.
    """
    users_table = DirectoryUser._meta.db_table
    table = GroupMembership._meta.db_table
    pk_field = DirectoryUser._meta.pk
    marks = ", ".join(["%s"] * len(user_ids))
    sql = (
        f'WITH u AS (SELECT * FROM "{users_table}" WHERE "directory_id" = %s AND "id" IN ({marks}) '  # noqa: S608
        'ORDER BY "id" FOR KEY SHARE), '
        f'ins AS (INSERT INTO "{table}" ("group_id", "user_id", "created_at") '
        'SELECT %s, u."id", %s FROM u ORDER BY u."id" '
        'ON CONFLICT ("group_id", "user_id") DO NOTHING RETURNING "user_id") '
        'SELECT u.*, (ins."user_id" IS NOT NULL) AS "member_added" FROM u LEFT JOIN ins ON ins."user_id" = u."id"'
    )
    params = [
        directory.id,
        *(pk_field.get_db_prep_value(u, connection) for u in user_ids),
        DirectoryGroup._meta.pk.get_db_prep_value(group.id, connection),
        connection.ops.adapt_datetimefield_value(timezone.now()),
    ]
    rows = list(DirectoryUser.objects.raw(sql, params))
    return {row.id: row for row in rows}, [row.id for row in rows if row.member_added]


def _members_apply(*, directory: Directory, group: DirectoryGroup, plan: MemberPlan) -> list[tuple[str, Any]]:
    """Apply a member plan under the group's row lock; returns the membership events."""
    if plan.empty:
        return []
    if connection.vendor == "postgresql" and plan.replace_with is None and not plan.remove and len(plan.add) <= CHUNK:
        # The common case (Okta adds one member per PATCH): check + insert in one statement.
        users, added = _members_add_checked(directory=directory, group=group, user_ids=plan.add)
        _require_users(plan.add, users)
        return _member_events(group, users, [], plan.add, added)
    users = _check_members(directory=directory, plan=plan)
    if plan.replace_with is not None:
        # Replacing the whole list is the one member operation whose cost follows the group's size.
        current = set(scim_group_member_ids(group=group))
        target = set(plan.replace_with)
        to_remove = [i for i in current if i not in target]
        to_add = [i for i in plan.replace_with if i not in current]
    else:
        to_remove, to_add = plan.remove, plan.add
    removed = _membership_delete(group, to_remove)
    added = _membership_insert(group, to_add)
    missing = [i for i in removed if i not in users]
    if missing:
        users.update(scim_directory_users_by_id(directory=directory, user_ids=missing))
    return _member_events(group, users, removed, to_add, added)


def _member_events(
    group: DirectoryGroup,
    users: dict[uuid.UUID, DirectoryUser],
    removed: list[uuid.UUID],
    to_add: list[uuid.UUID],
    added: list[uuid.UUID],
) -> list[tuple[str, Any]]:
    gdata = group_data(group)
    events: list[tuple[str, Any]] = []
    for user_id in removed:
        if user_id in users:
            events.append(("group.user_removed", user_data(users[user_id]) | {"group": gdata}))
    order = {user_id: i for i, user_id in enumerate(to_add)}
    for user_id in sorted(added, key=order.__getitem__):
        events.append(("group.user_added", user_data(users[user_id]) | {"group": gdata}))
    return events


def scim_group_create(*, directory: Directory, body: Any) -> tuple[DirectoryGroup, Events]:
    body = require_object(body)
    group_id = uuid.uuid4()
    raw, columns = group_finalize(body, group_id)
    plan = MemberPlan()
    members_key = next((k for k in body if k.lower() == "members"), None)
    if members_key is not None and body[members_key] is not None:
        plan.do_add(member_ids(body[members_key], strict=True))
    group = DirectoryGroup(id=group_id, directory=directory, raw=raw, **columns)
    try:
        with transaction.atomic():
            _groups.insert(group)
            member_events = _members_apply(directory=directory, group=group, plan=plan)
            events = events_record(directory=directory, events=[("group.created", group_data(group)), *member_events])
    except IntegrityError:
        raise uniqueness("A group with this displayName") from None
    return group, events


def members_added(operations: list[tuple[str, Any, Any, bool]]) -> list[uuid.UUID] | None:
    """The user ids of a group PATCH whose operations only add members (Okta sends one PATCH per
    member), in order and without repeats; None for any other PATCH, one with a malformed member (the
    locked path answers it: 404 for an unknown group comes first) or one adding more than CHUNK."""
    if not all(op == "add" and (path or "").strip().lower() == "members" for op, path, *_ in operations):
        return None
    try:
        user_ids = list(dict.fromkeys(i for _o, _p, value, _h in operations for i in member_ids(value, strict=True)))
    except ScimError:
        return None
    return user_ids if 0 < len(user_ids) <= CHUNK else None


def _group_members_add_fast(
    *, directory: Directory, group_id: Any, build: Any, user_ids: list[uuid.UUID], known: GroupWithUsers | None
) -> tuple[DirectoryGroup, Events] | None:
    """PostgreSQL, a PATCH whose operations only add `user_ids`: one read of the group and the users
    (`known` when it came with the authentication, scim.api), then one statement
    (scim.statements.group_members_add). None when the request does not qualify after all or the group
    changed meanwhile: the caller takes the locked path."""
    if known is None:
        known = scim_group_with_users(directory=directory, group_id=group_id, user_ids=user_ids)
    group, users = known
    if group is None:
        raise not_found("Group")
    doc, plan = build(group)
    raw, columns = group_finalize(doc, group.id)
    if raw != group.raw or any(getattr(group, f) != v for f, v in columns.items()):
        return None
    if plan.replace_with is not None or plan.remove or list(dict.fromkeys(plan.add)) != user_ids:
        return None
    _require_users(user_ids, users)
    events = statements.group_members_add(directory=directory, group=group, users=users, user_ids=user_ids)
    return None if events is None else (group, events)


def _group_write(*, directory: Directory, group_id: Any, build: Any) -> tuple[DirectoryGroup, Events]:
    try:
        with transaction.atomic():
            group = scim_group_get(directory=directory, group_id=group_id, for_update=True)
            if group is None:
                raise not_found("Group")
            doc, plan = build(group)
            raw, columns = group_finalize(doc, group.id)
            changed = [f for f, v in columns.items() if getattr(group, f) != v]
            recorded: list[tuple[str, Any]] = []
            if raw != group.raw or changed:
                for name, value in columns.items():
                    setattr(group, name, value)
                group.raw = raw
                _groups.update(group, [*columns, "raw"])
                recorded.append(("group.updated", group_data(group)))
            member_events = _members_apply(directory=directory, group=group, plan=plan)
            if member_events and not recorded:
                _groups.update(group, [])  # only updated_at (auto_now)
            events = (
                events_record(directory=directory, events=recorded + member_events)
                if (recorded or member_events)
                else []
            )
    except IntegrityError:
        raise uniqueness("A group with this displayName") from None
    return group, events


def scim_group_replace(*, directory: Directory, group_id: Any, body: Any) -> tuple[DirectoryGroup, Events]:
    body = require_object(body)

    def build(group: DirectoryGroup) -> tuple[dict[str, Any], MemberPlan]:
        plan = MemberPlan()
        members_key = next((k for k in body if k.lower() == "members"), None)
        if members_key is not None:
            # Decision: PUT with `members` sets exactly that list; PUT without it leaves members alone.
            plan.do_replace(member_ids(body[members_key] or [], strict=True))
        return body, plan

    return _group_write(directory=directory, group_id=group_id, build=build)


class MembersAdd:
    """A member-add PATCH as scim.api prepared it before authentication: its operations, the ids it
    adds (`members_added`) and the group and users read for them with the authentication."""

    __slots__ = ("operations", "read", "user_ids")

    def __init__(
        self, *, operations: list[tuple[str, Any, Any, bool]], user_ids: list[uuid.UUID], read: GroupWithUsers
    ) -> None:
        self.operations, self.user_ids, self.read = operations, user_ids, read


def scim_group_patch(
    *, directory: Directory, group_id: Any, body: Any, known: MembersAdd | None = None
) -> tuple[DirectoryGroup, Events]:
    """`known`: this PATCH's body already parsed into a member add and read for (scim.api); `body` is
    then not looked at again."""
    if known is not None:
        operations, user_ids = known.operations, known.user_ids
    else:
        operations = patch_operations(body)
        user_ids = members_added(operations) if statements.enabled() else None

    def build(group: DirectoryGroup) -> tuple[dict[str, Any], MemberPlan]:
        return group_patch(group.raw, operations)

    # The ids are known before the group is read, so the group and the users come in one query.
    if user_ids is not None:
        done = _group_members_add_fast(
            directory=directory,
            group_id=group_id,
            build=build,
            user_ids=user_ids,
            known=known.read if known is not None else None,
        )
        if done is not None:
            return done
    return _group_write(directory=directory, group_id=group_id, build=build)


def scim_group_delete(*, directory: Directory, group_id: Any) -> Events:
    with transaction.atomic():
        group = scim_group_get(directory=directory, group_id=group_id, for_update=True)
        if group is None:
            raise not_found("Group")
        data = group_data(group)
        GroupMembership.objects.filter(group_id=group.id)._raw_delete(connection.alias)
        DirectoryGroup.objects.filter(pk=group.id)._raw_delete(connection.alias)
        return events_record(directory=directory, events=[("group.deleted", data)])
