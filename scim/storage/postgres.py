# ruff: noqa: S608  (the SQL is assembled from quoted table and column names; every value is a parameter)
"""The SCIM store's PostgreSQL-only SQL (the comparison document's, jsonb, is in scim.storage.query.documents).

`PostgresReads`, the store's reads on PostgreSQL: the authentication's directory lookup joined with the
request's first read (LEFT JOIN LATERAL: the user of `/Users/<id>`, or an unfiltered page of users), the
constant-cost user pages of directories.pages, the users' groups read in the same statement
(`MEMBER_OF`).

The single statements that scim.storage.statements runs outside any transaction (every HTTP request;
ATOMIC_REQUESTS is off): each change and its webhook events in one statement of data-modifying WITH
queries, which PostgreSQL runs as a transaction of its own, so the change and its events commit together
or not at all, as the outbox requires (contract §5). The events' part is the outbox's
(webhooks.services.outbox, PreparedEvents.insert_sql). Through an atomic block a user create costs BEGIN,
the INSERT, the outbox's statement and COMMIT after the authentication's SELECT; here one statement after
it.

A statement on an existing row is conditional on the row being as it was read without a lock (its
`updated_at`, or the group's name and document). When it is not, or when a concurrent delete makes a
foreign key fail, the functions below return None and the caller redoes the request on the locked path
(scim.storage.locked), which answers as a serialized execution would. A None costs one wasted statement,
only under contention on the same row.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

import orjson
from django.db import IntegrityError, OperationalError, connection
from django.utils import timezone

from core.rows import Extra, RowReader, RowWriter, rows_cursor, statement_run
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from directories.pages import UsersPage, directory_users_page, directory_users_total
from directories.rendering import group_data, user_event, user_updated
from scim.selectors import FirstRead, holds_changes, scim_users_page, user_docs
from scim.storage.events import members_adding
from scim.storage.query.documents import PostgresDocuments
from scim.storage.store import Events
from webhooks.services import PreparedEvents, events_prepare, events_written

_users = RowWriter(DirectoryUser)
_groups = RowWriter(DirectoryGroup)
_directories = RowReader(Directory)


def _member_of(value: Any) -> list[tuple[uuid.UUID, str]]:
    return [(uuid.UUID(group_id), name) for group_id, name in orjson.loads(value)]


# A user's groups read in the same statement as the user: SCIM's `groups` and the roles of its events.
# Each group's name is a lookup by primary key, not a join, which made PostgreSQL hash the directory's
# whole group table once per user read: kept for speed, bench/README.md, 'Code kept for speed',
# "A user's groups by key lookup".
MEMBER_OF = Extra(
    "member_of",
    '(SELECT CAST(COALESCE(json_agg(json_build_array(m."group_id", '
    f'(SELECT g."display_name" FROM "{DirectoryGroup._meta.db_table}" g WHERE g."id" = m."group_id")) '
    "ORDER BY m.\"id\"), '[]') AS text)"
    f' FROM "{GroupMembership._meta.db_table}" m WHERE m."user_id" = {{table}}."id")',
    _member_of,
)
_user_rows = RowReader(DirectoryUser)
_user_rows_groups = RowReader(DirectoryUser, extras=(MEMBER_OF,))
user_docs_groups = RowReader(DirectoryUser, fields=user_docs.fields, extras=(MEMBER_OF,))


@functools.cache
def q(name: str) -> str:
    """A quoted table or column name, for the PostgreSQL-only SQL of the SCIM store (here and the guard's,
    scim.storage.guard)."""
    # Kept per process: this SQL runs on PostgreSQL only, whose quoting of a name never changes, and a
    # write builds its statement from a dozen of them.
    return connection.ops.quote_name(name)


def _run_unless_lost(sql: str, params: list[Any]) -> list[tuple[Any, ...]] | None:
    """`statement_run`, or None when the statement lost a race it cannot settle by itself, for the store
    to redo the request on its locked path: a foreign key a concurrent delete broke (IntegrityError), or
    a deadlock PostgreSQL broke by cancelling this statement (SQLSTATE 40P01; rare, since every statement
    takes the directory's counter last, docs/events.md)."""
    try:
        return statement_run(sql, params)
    except (IntegrityError, OperationalError) as exc:
        if isinstance(exc, IntegrityError) or deadlocked(exc):
            return None
        raise


def deadlocked(exc: BaseException) -> bool:
    """Whether Django's database error is PostgreSQL cancelling the statement to break a deadlock (SQLSTATE
    40P01): its transaction wrote nothing, and the request may be redone."""
    return getattr(exc.__cause__, "sqlstate", None) == "40P01"


def with_events(
    change: str,
    params: list[Any],
    prepared: PreparedEvents,
    *,
    when: str,
    also: str = "",
    first: tuple[str, list[Any]] | None = None,
) -> tuple[str, list[Any]]:
    """`WITH [r AS (<first> RETURNING 1),] a AS (<change>)<also>, <the events recorded WHERE when> SELECT *,
    <counter> FROM a`: the change and its events in one statement (the outbox's SQL:
    PreparedEvents.insert_sql); `also` is more WITH queries (without parameters); `first`, a statement
    (with its parameters) that runs before the change, which may read whether it wrote a row (`r`)."""
    events_sql, events_params = prepared.insert_sql(when=when)
    head, head_params = (f"r AS ({first[0]} RETURNING 1), ", first[1]) if first else ("", [])
    sql = f"WITH {head}a AS ({change}){also}, {events_sql} SELECT *, (SELECT last FROM q) FROM a"
    return sql, head_params + params + events_params


def user_insert_statement(*, directory: Directory, user: DirectoryUser) -> Events:
    """INSERT the user and its `user.created` event. A duplicate userName raises IntegrityError."""
    insert, params = _users.insert_sql(user)  # sets created_at / updated_at on `user` first
    user.member_of = []  # a new user is in no group yet
    prepared = events_prepare(directory=directory, events=[("user.created", user_event(directory, user))])
    # The events depend on the INSERT's row, so the counter is taken only once the row is in (its unique
    # key checked): a writer never holds the counter while it waits for another's row.
    sql, params = with_events(f"{insert} RETURNING 1", params, prepared, when="EXISTS (SELECT 1 FROM a)")
    rows = statement_run(sql, params)
    return events_written(prepared, rows[0][-1])


def group_insert_statement(*, directory: Directory, group: DirectoryGroup) -> Events:
    """INSERT a group without members and its `group.created` event, as `user_insert_statement` does for
    a user. A duplicate displayName raises IntegrityError."""
    insert, params = _groups.insert_sql(group)  # sets created_at / updated_at on `group` first
    prepared = events_prepare(directory=directory, events=[("group.created", group_data(group))])
    sql, params = with_events(f"{insert} RETURNING 1", params, prepared, when="EXISTS (SELECT 1 FROM a)")
    rows = statement_run(sql, params)
    return events_written(prepared, rows[0][-1])


def user_update_statement(
    *, directory: Directory, user: DirectoryUser, names: list[str], read_at: Any, before: DirectoryUser
) -> Events | None:
    """UPDATE the columns `names` (new values already set on `user`) and record `user.updated`, if the
    row still has the `updated_at` it was read with (`read_at`) and no change held. None when it has not. `before`: the
    user as read, before the change (its `previous_attributes`)."""
    # Unless changes were held for the user since it was read (scim.storage.locked then holds this one too).
    where = f"{q('updated_at')} = %s AND NOT {q('held')}"
    update, params = _users.update_sql(user, names, where=where)  # bumps updated_at
    params.append(read_at)
    prepared = events_prepare(directory=directory, events=[user_updated(directory, user, before)])
    sql, params = with_events(f"{update} RETURNING 1", params, prepared, when="EXISTS (SELECT 1 FROM a)")
    rows = _run_unless_lost(sql, params)
    if not rows:  # lost a race, or the row changed since it was read
        return None
    return events_written(prepared, rows[0][-1])


def user_delete_statement(*, directory: Directory, user: DirectoryUser) -> Events | None:
    """DELETE the user and its memberships and record `user.deleted`, if the user is unchanged since it
    was read and has no change held. None when it changed or is gone, when changes were held for it, or
    when a membership of it was added meanwhile."""
    users, members = q(DirectoryUser._meta.db_table), q(GroupMembership._meta.db_table)
    change = (
        f"DELETE FROM {users} WHERE {q('id')} = %s AND {q('directory_id')} = %s "
        f"AND {q('updated_at')} = %s AND NOT {q('held')} RETURNING {q('id')}"
    )
    params: list[Any] = [user.id, directory.id, user.updated_at]
    # The memberships go in the same statement; one committed after this statement's snapshot would
    # survive it and fail the foreign key at commit, hence the IntegrityError below.
    memberships = f", m AS (DELETE FROM {members} WHERE {q('user_id')} IN (SELECT {q('id')} FROM a))"
    prepared = events_prepare(directory=directory, events=[("user.deleted", user_event(directory, user))])
    sql, params = with_events(change, params, prepared, when="EXISTS (SELECT 1 FROM a)", also=memberships)
    deleted = _run_unless_lost(sql, params)
    return events_written(prepared, deleted[0][-1]) if deleted else None


def members_add_statement(
    *, directory: Directory, group: DirectoryGroup, users: dict[uuid.UUID, DirectoryUser], user_ids: list[uuid.UUID]
) -> Events | None:
    """Add `user_ids` (all in `users`) to the group and record one `group.user_added` per membership
    really added (a present member is a no-op, as on the locked path).

    The statement first locks the group row (`FOR UPDATE`, the lock every writer of a group takes
    first, so member writers keep one lock order and serialize) on condition that its name and document
    are still those the events carry. None when they are not, or when the group or a user was deleted
    meanwhile (the foreign keys fail).
    """
    groups, members = q(DirectoryGroup._meta.db_table), q(GroupMembership._meta.db_table)
    raw_field = DirectoryGroup._meta.get_field("raw")
    now = timezone.now()
    prepared = events_prepare(directory=directory, events=members_adding(directory, group, users, user_ids))
    marks = ", ".join(["(CAST(%s AS uuid))"] * len(user_ids))
    params: list[Any] = [
        group.id,
        directory.id,
        group.display_name,
        raw_field.get_db_prep_save(group.raw, connection),
        *sorted(user_ids),
        now,
        *sorted(user_ids),  # one insert order everywhere: no lock cycles between member writers
        now,
    ]
    users_table = q(DirectoryUser._meta.db_table)
    sql = (
        f"WITH g AS (SELECT {q('id')} FROM {groups} WHERE {q('id')} = %s AND {q('directory_id')} = %s "
        f"AND {q('display_name')} = %s AND {q('raw')} = %s FOR UPDATE), "
        # The users' key-share locks, taken here rather than by the foreign key check at commit: after
        # the directory's sequence counter (taken last, below), a wait for a user that a concurrent
        # delete holds would close a lock cycle with that delete.
        f"ul AS (SELECT {q('id')} FROM {users_table} WHERE {q('id')} IN ({marks}) ORDER BY {q('id')} "
        "FOR KEY SHARE), "
        f"a AS (INSERT INTO {members} ({q('group_id')}, {q('user_id')}, {q('created_at')}) "
        f"SELECT g.{q('id')}, v.u, CAST(%s AS timestamptz) FROM g, (VALUES {marks}) AS v(u) "
        f"LEFT JOIN ul ON ul.{q('id')} = v.u ORDER BY v.u "
        f"ON CONFLICT ({q('group_id')}, {q('user_id')}) DO NOTHING RETURNING {q('user_id')}), "
        f"t AS (UPDATE {groups} SET {q('updated_at')} = %s FROM g WHERE {groups}.{q('id')} = g.{q('id')} "
        "AND EXISTS (SELECT 1 FROM a))"
    )
    events_sql, events_params = prepared.insert_sql(
        keys=list(user_ids), when=f"{{key}} IN (SELECT {q('user_id')} FROM a)"
    )
    sql += f", {events_sql} SELECT g.{q('id')}, a.{q('user_id')}, (SELECT last FROM q) FROM g LEFT JOIN a ON TRUE"
    params += events_params
    rows = _run_unless_lost(sql, params)
    if not rows:
        return None  # lost a race, or the group changed or went away since it was read
    added = {row[1] for row in rows if row[1] is not None}
    if added:
        group.updated_at = now
    return events_written(prepared, rows[0][2], [i for i, user_id in enumerate(user_ids) if user_id in added])


def _directory_with(pk: uuid.UUID, read: FirstRead) -> Directory | None:
    """The directory `pk` LEFT JOIN LATERAL `read` (so a missing user or an empty page still returns the
    directory), in one query. Before the request is authenticated: the rows are only kept on `read`."""
    table = _directories.table()
    page = None
    if read.kind == "user":
        reader = _user_rows_groups if read.groups else _user_rows
        inner = reader.sql(f'{{table}}."directory_id" = {table}."id" AND {{table}}."id" = %s')
        params: list[Any] = [read.user_id]
        order = ""
    else:  # "users": an unfiltered page (directories.pages)
        reader = user_docs_groups if read.groups else user_docs
        page = read.page = UsersPage.plan(pk, start_index=read.start_index, count=read.count)
        inner = page.sql(reader, directory=f'{table}."id"')
        params = page.params()
        order = ' ORDER BY t."created_at", t."id"'
    columns, width = _directories.columns()
    if page is not None:
        # The directory's columns on the first row only: repeated on each row of a page, psycopg would
        # parse them (two timestamps, a UUID, the secrets) a hundred times over for one use.
        first = f"row_number() OVER ({order.strip()}) = 1"
        # (RowReader joins quoted "table"."column" names with ", ", which no quoted name here contains.)
        columns = ", ".join(f"CASE WHEN {first} THEN {column} END" for column in columns.split(", "))
    sql = f'SELECT {columns}, t.* FROM {table} LEFT JOIN LATERAL ({inner}) AS t ON TRUE WHERE {table}."id" = %s{order}'
    with rows_cursor() as cursor:
        cursor.execute(sql, [*params, pk])
        rows = cursor.fetchall()
    if not rows:
        return None
    if page is not None:
        page.take([row[width:] for row in rows], reader)
    else:
        read.rows = reader.build_many(row[width:] for row in rows if row[width] is not None)
    return _directories.build(rows[0][:width])


class PostgresReads:
    """`Reads` on PostgreSQL (see the module docstring)."""

    documents = PostgresDocuments()

    def directory_with(self, *, directory_id: Any, read: FirstRead) -> Directory | None:
        try:
            pk = uuid.UUID(str(directory_id))
        except ValueError:
            return None
        return _directory_with(pk, read)

    def users_page(
        self,
        *,
        directory: Directory,
        condition: Any,
        start_index: int,
        count: int,
        page: UsersPage | None = None,
        order: list[Any] | None = None,
        groups: bool = False,
    ) -> tuple[int, list[DirectoryUser]]:
        reader = user_docs_groups if groups else user_docs
        # While the directory holds changes, the identity provider's view is read (scim.selectors).
        plain = condition is None and not holds_changes(directory)
        if plain and not order:
            # Every user in (created, id) order: the constant-cost page (directories.pages).
            return directory_users_page(
                directory_id=directory.id, start_index=start_index, count=count, reader=reader, page=page
            )
        # A sorted list of every user takes its total from the tally (a COUNT walks the whole directory).
        total = directory_users_total(directory_id=directory.id) if plain else None
        return scim_users_page(
            directory=directory,
            condition=condition,
            start_index=start_index,
            count=count,
            order=order,
            reader=reader,
            total=total,
        )
