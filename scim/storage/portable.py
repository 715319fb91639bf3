"""The storage interface of the SCIM path, and its portable implementation: every write inside an atomic
block, under the row lock of the user or group it changes, through the row writer (core.rows).

It runs on any database Django supports (SQLite for development, which serializes writers on the
whole database anyway). scim.storage.postgres extends it with PostgreSQL's lock modes, joins and
single-statement writes; scim.storage.current picks the implementation for the running request.

A write that changes an existing row takes a `change(row)` callable from the service: it computes
the new document on the row as read under the lock, sets it on the instance, and returns the names
of the columns to write (None when nothing changed: no write, no event).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django.db import connection, models, transaction
from django.utils import timezone

from core.rows import RowWriter
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from directories.pages import UsersPage
from directories.rendering import group_data, user_data
from directories.selectors import directory_get
from scim.protocol.documents import MemberPlan
from scim.protocol.errors import invalid_value, not_found
from scim.selectors import (
    FirstRead,
    scim_directory_users_by_id,
    scim_group_get,
    scim_group_member_ids,
    scim_user_get,
    scim_users_page,
)
from webhooks.services import events_record

Events = list[dict[str, Any]]
# change(user) → the columns to write, None when the document is unchanged.
UserChange = Callable[[DirectoryUser], list[str] | None]
# change(group) → (the columns to write or None, the member plan of the request).
GroupChange = Callable[[DirectoryGroup], tuple[list[str] | None, MemberPlan]]

CHUNK = 500  # membership rows per statement; also the most users one fast member add may carry
_users = RowWriter(DirectoryUser)
_groups = RowWriter(DirectoryGroup)


def require_users(wanted: list[uuid.UUID], users: dict[uuid.UUID, DirectoryUser]) -> None:
    """400 unless every id in `wanted` is among `users` (the users of this directory that were found)."""
    missing = [str(i) for i in wanted if i not in users]
    if missing:
        shown = ", ".join(missing[:3]) + (" …" if len(missing) > 3 else "")
        raise invalid_value(f"Not a user of this directory: {shown}.")


def member_events(
    group: DirectoryGroup,
    users: dict[uuid.UUID, DirectoryUser],
    removed: list[uuid.UUID],
    to_add: list[uuid.UUID],
    added: list[uuid.UUID],
) -> list[tuple[str, Any]]:
    """`group.user_removed` for each id of `removed`, then `group.user_added` for each id of `added` in
    the order of `to_add` (the request's order)."""
    gdata = group_data(group)
    events: list[tuple[str, Any]] = []
    for user_id in removed:
        if user_id in users:
            events.append(("group.user_removed", user_data(users[user_id]) | {"group": gdata}))
    order = {user_id: i for i, user_id in enumerate(to_add)}
    for user_id in sorted(added, key=order.__getitem__):
        events.append(("group.user_added", user_data(users[user_id]) | {"group": gdata}))
    return events


def _rows_delete(model: type[models.Model], field_name: str, value: Any) -> None:
    """`DELETE FROM <table> WHERE <column> = value`: one statement, where QuerySet.delete() would first
    read the rows to collect what cascades from them (the callers delete that themselves)."""
    field = model._meta.get_field(field_name)
    quote = connection.ops.quote_name
    sql = f"DELETE FROM {quote(model._meta.db_table)} WHERE {quote(field.column)} = %s"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, [field.get_db_prep_value(value, connection)])


def _delete_with_memberships(
    directory: Directory, row: DirectoryUser | DirectoryGroup, member_field: str, event: tuple[str, Any]
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


class Store:
    """What the SCIM services and the authentication ask of the database. Each write records its
    contract §5 events in the same transaction and returns their payloads; a uniqueness violation
    raises IntegrityError (the services turn it into 409)."""

    # Whether a write to an existing row reads it first without a lock, so that the read can come with
    # the authentication's query (scim.dispatch); the locked path reads it again under its lock.
    optimistic = False

    # reads

    def directory_with(self, *, directory_id: Any, read: FirstRead) -> Directory | None:
        """The directory `directory_id` (None if unknown), and `read` with it where the database can
        join them: then `read.rows` (or `read.page`) is set, else left None for the handler to read."""
        return directory_get(directory_id=directory_id)

    def users_page(
        self,
        *,
        directory: Directory,
        condition: Any,
        start_index: int,
        count: int,
        page: UsersPage | None = None,
    ) -> tuple[int, list[DirectoryUser]]:
        """The total and one page of the directory's users matching `condition` (None: all of them);
        `page`: an unfiltered page already read with the directory (`directory_with`)."""
        if condition is None:
            return self.users_all_page(directory=directory, start_index=start_index, count=count, page=page)
        return scim_users_page(directory=directory, condition=condition, start_index=start_index, count=count)

    def users_all_page(
        self, *, directory: Directory, start_index: int, count: int, page: UsersPage | None
    ) -> tuple[int, list[DirectoryUser]]:
        return scim_users_page(directory=directory, condition=None, start_index=start_index, count=count)

    # users

    def user_insert(self, *, directory: Directory, user: DirectoryUser) -> Events:
        with transaction.atomic():
            _users.insert(user)
            return events_record(directory=directory, events=[("user.created", user_data(user))])

    def user_update(
        self, *, directory: Directory, user_id: Any, change: UserChange, known: list[DirectoryUser] | None = None
    ) -> tuple[DirectoryUser, Events]:
        """Apply `change` to the user and write it with `user.updated` if anything changed. `known`: the
        user as read with the authentication ([] for none), for an optimistic store."""
        with transaction.atomic():
            user = scim_user_get(directory=directory, user_id=user_id, for_update=True)
            if user is None:
                raise not_found("User")
            names = change(user)
            if names is None:
                return user, []
            _users.update(user, names)
            return user, events_record(directory=directory, events=[("user.updated", user_data(user))])

    def user_delete(self, *, directory: Directory, user_id: Any, known: list[DirectoryUser] | None = None) -> Events:
        """Delete the user and its memberships and record `user.deleted`. `known`: see `user_update`."""
        with transaction.atomic():
            user = scim_user_get(directory=directory, user_id=user_id, for_delete=True)
            if user is None:
                raise not_found("User")
            return _delete_with_memberships(directory, user, "user", ("user.deleted", user_data(user)))

    # groups

    def group_insert(self, *, directory: Directory, group: DirectoryGroup, plan: MemberPlan) -> Events:
        """Insert the group with the members of `plan` and record `group.created` and each member added."""
        with transaction.atomic():
            _groups.insert(group)
            added = self.members_apply(directory=directory, group=group, plan=plan)
            return events_record(directory=directory, events=[("group.created", group_data(group)), *added])

    def group_update(
        self, *, directory: Directory, group_id: Any, change: GroupChange
    ) -> tuple[DirectoryGroup, Events]:
        """Apply `change` to the group under its row lock: its document if it changed (`group.updated`),
        then its member plan (one event per membership really added or removed)."""
        with transaction.atomic():
            # Every write to a group takes this lock first: one lock order for all group writers.
            group = scim_group_get(directory=directory, group_id=group_id, for_update=True)
            if group is None:
                raise not_found("Group")
            names, plan = change(group)
            recorded: list[tuple[str, Any]] = []
            if names is not None:
                _groups.update(group, names)
                recorded.append(("group.updated", group_data(group)))
            members = self.members_apply(directory=directory, group=group, plan=plan)
            if members and names is None:
                _groups.update(group, [])  # only updated_at (auto_now)
            if not (recorded or members):
                return group, []
            return group, events_record(directory=directory, events=recorded + members)

    def members_add(
        self, *, directory: Directory, group_id: Any, user_ids: list[uuid.UUID], change: GroupChange
    ) -> tuple[DirectoryGroup, Events]:
        """A group write whose request only adds the members `user_ids` (at most CHUNK, in request
        order, without repeats), as far as its body shows; `change` is still the whole request."""
        return self.group_update(directory=directory, group_id=group_id, change=change)

    def group_delete(self, *, directory: Directory, group_id: Any) -> Events:
        with transaction.atomic():
            group = scim_group_get(directory=directory, group_id=group_id, for_update=True)
            if group is None:
                raise not_found("Group")
            return _delete_with_memberships(directory, group, "group", ("group.deleted", group_data(group)))

    # memberships (inside the group's lock)

    def users_for_members(self, *, directory: Directory, user_ids: list[uuid.UUID]) -> dict[uuid.UUID, DirectoryUser]:
        """The users of this directory among `user_ids`, read so that none of them can be deleted before
        the membership rows that reference them are committed (SQLite: its database lock does that)."""
        return scim_directory_users_by_id(directory=directory, user_ids=user_ids)

    def members_apply(self, *, directory: Directory, group: DirectoryGroup, plan: MemberPlan) -> list[tuple[str, Any]]:
        """Apply a member plan under the group's row lock; returns the membership events."""
        if plan.empty:
            return []
        wanted = list(dict.fromkeys([*plan.referenced(), *plan.remove]))
        users = self.users_for_members(directory=directory, user_ids=wanted)
        require_users(plan.referenced(), users)
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
        return member_events(group, users, removed, to_add, added)
