"""The locked path: every write in an atomic block, under the row lock of the user or group it changes, through
the row writer (core.rows). It runs on any database Roster supports: SQLite (which serializes writers on
the whole database anyway), and PostgreSQL inside a caller's transaction (the embedding API), where the
deferred foreign keys are checked at the caller's COMMIT. The single statements of
scim.storage.statements redo a request here when the row changed since they read it.

A write the deprovision guard decides on (a deprovision, any change of a user with changes held) goes to
scim.storage.guard under the user's lock, which hands one it lets through back to `user_write` or
`user_remove`.

The reads, which differ by database, come from the `Reads` it is built with (scim.storage.sqlite_reads or
scim.storage.postgres). Its own SQL is portable: the membership inserts and deletes below run unchanged
on both databases.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

from django.db import connection, models, transaction
from django.utils import timezone

from core.rows import RowReader, RowWriter
from directories.guard.selectors import held_deleted_ids
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from directories.rendering import group_data, user_event, user_updated
from scim.protocol.documents import MemberPlan
from scim.protocol.errors import invalid_value, not_found
from scim.protocol.versions import Precondition, require_version
from scim.selectors import (
    holds_changes,
    scim_directory_users_by_id,
    scim_group_get,
    scim_group_member_ids,
    scim_user_get,
)
from scim.storage import guard
from scim.storage.events import group_updated, member_events
from scim.storage.store import CHUNK, DocumentDialect, Events, GroupChange, Reads, UserChange
from webhooks.services import events_record
from webhooks.services.recording import EventSpec

_users = RowWriter(DirectoryUser)
_groups = RowWriter(DirectoryGroup)
_member_users = RowReader(DirectoryUser)


def require_users(directory: Directory, wanted: list[uuid.UUID], users: dict[uuid.UUID, DirectoryUser]) -> None:
    """400 unless every id in `wanted` is among `users` (the users of this directory that were found) and,
    while the directory holds changes, is not a user whose deletion is held: gone for the identity
    provider, it cannot become a member (contract §4.2; docs/decisions.md)."""
    gone = held_deleted_ids(directory=directory, user_ids=wanted) if holds_changes(directory) else set()
    missing = [str(i) for i in wanted if i not in users or i in gone]
    if missing:
        shown = ", ".join(missing[:3]) + (" …" if len(missing) > 3 else "")
        raise invalid_value(f"Not a user of this directory: {shown}.")


def _users_for_members(*, directory: Directory, user_ids: list[uuid.UUID]) -> dict[uuid.UUID, DirectoryUser]:
    """The users of this directory among `user_ids`, read so that none of them can be deleted before the
    membership rows that reference them are committed: FOR KEY SHARE, in id order (PostgreSQL: its
    deferred foreign key would otherwise fail at commit; SQLite has no row locks, its database lock does
    that)."""
    if not user_ids:
        return {}
    marks = ", ".join(["%s"] * len(user_ids))
    sql = _member_users.sql(
        f'{{table}}."directory_id" = %s AND {{table}}."id" IN ({marks})',
        suffix=' ORDER BY {table}."id"',
        lock="key_share",
    )
    params = [_member_users.param("id", directory.id), *(_member_users.param("id", u) for u in user_ids)]
    return {user.id: user for user in _member_users.fetch(sql, params)}


def _rows_delete(model: type[models.Model], field_name: str, value: Any) -> None:
    """`DELETE FROM <table> WHERE <column> = value`: one statement, where QuerySet.delete() would first
    read the rows to collect what cascades from them (the callers delete that themselves)."""
    field = model._meta.get_field(field_name)
    quote = connection.ops.quote_name
    sql = f"DELETE FROM {quote(model._meta.db_table)} WHERE {quote(field.column)} = %s"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, [field.get_db_prep_value(value, connection)])


def _delete_with_memberships(
    directory: Directory, row: DirectoryUser | DirectoryGroup, member_field: str, event: EventSpec
) -> Events:
    """Delete a user's or group's row and its memberships (`member_field`: "user" or "group"), and record
    `event` (its data read before the delete)."""
    _rows_delete(GroupMembership, member_field, row.id)
    _rows_delete(type(row), "id", row.id)
    return events_record(directory=directory, events=[event])


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


def user_write(directory: Directory, before: DirectoryUser, user: DirectoryUser, names: list[str]) -> Events:
    """Write the columns `names` of `user` (its row locked) and record `user.updated` against `before`."""
    _users.update(user, names)
    return events_record(directory=directory, events=[user_updated(directory, user, before)])


def user_remove(directory: Directory, user: DirectoryUser) -> Events:
    """Delete `user` (its row locked) and its memberships, and record `user.deleted`."""
    return _delete_with_memberships(directory, user, "user", ("user.deleted", user_event(directory, user)))


class LockedStore:
    """The locked path (see the module docstring), a `Store`: its reads from `reads`, its writes here."""

    optimistic = False  # every write reads its row again under the row's lock

    def __init__(self, reads: Reads) -> None:
        # The reads are the database's, as they are.
        self.documents: DocumentDialect = reads.documents
        self.directory_with = reads.directory_with
        self.users_page = reads.users_page

    # users

    def user_insert(self, *, directory: Directory, user: DirectoryUser) -> Events:
        with transaction.atomic():
            _users.insert(user)
            user.member_of = []  # a new user is in no group yet
            return events_record(directory=directory, events=[("user.created", user_event(directory, user))])

    def user_update(
        self,
        *,
        directory: Directory,
        user_id: Any,
        change: UserChange,
        known: list[DirectoryUser] | None = None,
        if_match: Precondition | None = None,
    ) -> tuple[DirectoryUser, Events]:
        # The row is read again under its lock, so no write slips in between; of `known` only its groups are
        # used (a user write never changes them), sparing the answer a read of them.
        with transaction.atomic():
            user = scim_user_get(directory=directory, user_id=user_id, for_update=True)
            if user is None:
                raise not_found("User")
            if known:
                user.member_of = known[0].member_of
            if user.held:
                return guard.held_update(directory, user, change, if_match)
            require_version(if_match, user.updated_at)
            before = copy.copy(user)
            names = change(user)
            if names is None:
                return user, []
            if before.active and not user.active and guard.watches(directory):
                return guard.deactivate(
                    directory, before, user, write=partial(user_write, directory, before, user, names)
                )
            return user, user_write(directory, before, user, names)

    def user_delete(
        self,
        *,
        directory: Directory,
        user_id: Any,
        known: list[DirectoryUser] | None = None,
        if_match: Precondition | None = None,
    ) -> Events:
        with transaction.atomic():
            user = scim_user_get(directory=directory, user_id=user_id, for_delete=True)
            if user is None:
                raise not_found("User")
            if user.held:
                return guard.held_delete(directory, user, if_match)  # answered as if applied
            require_version(if_match, user.updated_at)
            if user.active and guard.watches(directory):
                return guard.delete(directory, user, write=partial(user_remove, directory, user))
            return user_remove(directory, user)

    # groups

    def group_insert(self, *, directory: Directory, group: DirectoryGroup, plan: MemberPlan) -> Events:
        with transaction.atomic():
            _groups.insert(group)
            added = _members_apply(directory=directory, group=group, plan=plan)
            return events_record(directory=directory, events=[("group.created", group_data(group)), *added])

    def group_update(
        self, *, directory: Directory, group_id: Any, change: GroupChange, if_match: Precondition | None = None
    ) -> tuple[DirectoryGroup, Events]:
        with transaction.atomic():
            # Every write to a group takes this lock first: one lock order for all group writers.
            group = scim_group_get(directory=directory, group_id=group_id, for_update=True)
            if group is None:
                raise not_found("Group")
            require_version(if_match, group.updated_at)
            before = copy.copy(group)
            names, plan = change(group)
            recorded: list[EventSpec] = []
            if names is not None:
                _groups.update(group, names)
                recorded.append(group_updated(group, before))
            members = _members_apply(directory=directory, group=group, plan=plan)
            if members and names is None:
                _groups.update(group, [])  # only updated_at (auto_now)
            if not (recorded or members):
                return group, []
            return group, events_record(directory=directory, events=recorded + members)

    def members_add(
        self, *, directory: Directory, group_id: Any, user_ids: list[uuid.UUID], change: GroupChange
    ) -> tuple[DirectoryGroup, Events]:
        # Under the group's lock, an add is one more member plan.
        return self.group_update(directory=directory, group_id=group_id, change=change)

    def group_delete(self, *, directory: Directory, group_id: Any, if_match: Precondition | None = None) -> Events:
        with transaction.atomic():
            group = scim_group_get(directory=directory, group_id=group_id, for_update=True)
            if group is None:
                raise not_found("Group")
            require_version(if_match, group.updated_at)
            return _delete_with_memberships(directory, group, "group", ("group.deleted", group_data(group)))


def _members_apply(*, directory: Directory, group: DirectoryGroup, plan: MemberPlan) -> list[EventSpec]:
    """Apply a member plan under the group's row lock; returns the membership events."""
    if plan.empty:
        return []
    wanted = list(dict.fromkeys([*plan.referenced(), *plan.remove]))
    users = _users_for_members(directory=directory, user_ids=wanted)
    require_users(directory, plan.referenced(), users)
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
    return member_events(directory, group, users, removed, to_add, added)
