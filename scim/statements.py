# ruff: noqa: S608  (the SQL is assembled from quoted table and column names; every value is a parameter)
"""The hot SCIM writes as one SQL statement each, on PostgreSQL.

Through an atomic block, creating a user costs five round trips to the database (BEGIN, the INSERT,
the outbox INSERT, COMMIT, after the authentication SELECT), and adding a member seven. Here the
change and its webhook events are one statement built from data-modifying WITH queries, which
PostgreSQL runs as a transaction of its own: the change and its events commit together or not at
all, as the outbox requires (contract §5). `directories.rows.statement_run` runs it.

Writes to an existing row read it first without a lock and make the statement conditional on the
row being as it was read (an optimistic check on `updated_at`, or on the group's name and document).
When it is not, or when a concurrent delete makes a foreign key fail, these functions return None and
the caller (scim.services) redoes the request on its locked path, which answers as a serialized
execution would. A None costs one wasted statement, only under contention on the same row.

`services` decides when a request qualifies; these functions only build and run the statements.
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from django.db import IntegrityError, connection
from django.utils import timezone

from core.rows import RowWriter, statement_run
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from directories.rendering import group_data, user_data
from webhooks.models import WebhookEvent
from webhooks.services import PreparedEvents, events_prepare

Events = list[dict[str, Any]]
_users = RowWriter(DirectoryUser)
_events = RowWriter(WebhookEvent)


@functools.cache
def _q(name: str) -> str:
    # Kept per process: these statements run on PostgreSQL only (`enabled`), whose quoting of a name
    # never changes, and a write builds its statement from a dozen of them.
    return connection.ops.quote_name(name)


def enabled() -> bool:
    """PostgreSQL, outside any transaction (every HTTP request; ATOMIC_REQUESTS is off).

    Data-modifying WITH queries are PostgreSQL's; SQLite keeps the locked path (it serializes writers
    on the whole database anyway). Inside a caller's transaction (the embedding API) the locked path is
    kept too: there the deferred foreign keys would be checked at the caller's COMMIT, so a concurrent
    delete would fail the caller's transaction instead of being caught here."""
    return connection.vendor == "postgresql" and not connection.in_atomic_block


def _with_events(
    change: str, params: list[Any], prepared: PreparedEvents, *, when: str, also: str = ""
) -> tuple[str, list[Any]]:
    """`WITH a AS (<change>)<also>[, e AS (<insert of the outbox rows> WHERE <when>)] SELECT * FROM a`;
    `also` is more WITH queries (without parameters)."""
    if not prepared.rows:
        return f"WITH a AS ({change}){also} SELECT * FROM a", params
    events_sql, events_params = _events.insert_select_sql([(None, row) for row in prepared.rows], where=when)
    return f"WITH a AS ({change}){also}, e AS ({events_sql}) SELECT * FROM a", params + events_params


def user_create(*, directory: Directory, user: DirectoryUser) -> Events:
    """INSERT the user and its `user.created` event. A duplicate userName raises IntegrityError."""
    insert, params = _users.insert_sql(user)  # sets created_at / updated_at on `user` first
    prepared = events_prepare(directory=directory, events=[("user.created", user_data(user))])
    sql, params = _with_events(f"{insert} RETURNING 1", params, prepared, when="TRUE")
    statement_run(sql, params)
    return prepared.written()


def user_update(*, directory: Directory, user: DirectoryUser, names: list[str], read_at: Any) -> Events | None:
    """UPDATE the columns `names` (new values already set on `user`) and record `user.updated`, if the
    row still has the `updated_at` it was read with (`read_at`). None when it has not."""
    update, params = _users.update_sql(user, names, where=f"{_q('updated_at')} = %s")  # bumps updated_at
    params.append(read_at)
    prepared = events_prepare(directory=directory, events=[("user.updated", user_data(user))])
    sql, params = _with_events(f"{update} RETURNING 1", params, prepared, when="EXISTS (SELECT 1 FROM a)")
    if not statement_run(sql, params):
        return None
    return prepared.written()


def user_delete(*, directory: Directory, user: DirectoryUser) -> Events | None:
    """DELETE the user and its memberships and record `user.deleted`, if the user is unchanged since it
    was read. None when it changed or is gone, or when a membership of it was added meanwhile."""
    users, members = _q(DirectoryUser._meta.db_table), _q(GroupMembership._meta.db_table)
    change = (
        f"DELETE FROM {users} WHERE {_q('id')} = %s AND {_q('directory_id')} = %s "
        f"AND {_q('updated_at')} = %s RETURNING {_q('id')}"
    )
    params: list[Any] = [user.id, directory.id, user.updated_at]
    # The memberships go in the same statement; one committed after this statement's snapshot would
    # survive it and fail the foreign key at commit, hence the IntegrityError below.
    memberships = f", m AS (DELETE FROM {members} WHERE {_q('user_id')} IN (SELECT {_q('id')} FROM a))"
    prepared = events_prepare(directory=directory, events=[("user.deleted", user_data(user))])
    sql, params = _with_events(change, params, prepared, when="EXISTS (SELECT 1 FROM a)", also=memberships)
    try:
        deleted = statement_run(sql, params)
    except IntegrityError:
        return None
    return prepared.written() if deleted else None


def group_members_add(
    *, directory: Directory, group: DirectoryGroup, users: dict[uuid.UUID, DirectoryUser], user_ids: list[uuid.UUID]
) -> Events | None:
    """Add `user_ids` (all in `users`) to the group and record one `group.user_added` per membership
    really added (a present member is a no-op, as on the locked path).

    The statement first locks the group row (`FOR UPDATE`, the lock every writer of a group takes
    first, so member writers keep one lock order and serialize) on condition that its name and document
    are still those the events carry. None when they are not, or when the group or a user was deleted
    meanwhile (the foreign keys fail).
    """
    groups, members = _q(DirectoryGroup._meta.db_table), _q(GroupMembership._meta.db_table)
    raw_field = DirectoryGroup._meta.get_field("raw")
    now = timezone.now()
    gdata = group_data(group)
    prepared = events_prepare(
        directory=directory,
        events=[("group.user_added", user_data(users[user_id]) | {"group": gdata}) for user_id in user_ids],
    )
    marks = ", ".join(["(CAST(%s AS uuid))"] * len(user_ids))
    params: list[Any] = [
        group.id,
        directory.id,
        group.display_name,
        raw_field.get_db_prep_save(group.raw, connection),
        now,
        *sorted(user_ids),  # one insert order everywhere: no lock cycles between member writers
        now,
    ]
    sql = (
        f"WITH g AS (SELECT {_q('id')} FROM {groups} WHERE {_q('id')} = %s AND {_q('directory_id')} = %s "
        f"AND {_q('display_name')} = %s AND {_q('raw')} = %s FOR UPDATE), "
        f"a AS (INSERT INTO {members} ({_q('group_id')}, {_q('user_id')}, {_q('created_at')}) "
        f"SELECT g.{_q('id')}, v.u, CAST(%s AS timestamptz) FROM g, (VALUES {marks}) AS v(u) ORDER BY v.u "
        f"ON CONFLICT ({_q('group_id')}, {_q('user_id')}) DO NOTHING RETURNING {_q('user_id')}), "
        f"t AS (UPDATE {groups} SET {_q('updated_at')} = %s FROM g WHERE {groups}.{_q('id')} = g.{_q('id')} "
        "AND EXISTS (SELECT 1 FROM a))"
    )
    if prepared.rows:
        events_sql, events_params = _events.insert_select_sql(
            list(zip(user_ids, prepared.rows, strict=True)), where=f"{{key}} IN (SELECT {_q('user_id')} FROM a)"
        )
        sql += f", e AS ({events_sql})"
        params += events_params
    sql += f" SELECT g.{_q('id')}, a.{_q('user_id')} FROM g LEFT JOIN a ON TRUE"
    try:
        rows = statement_run(sql, params)
    except IntegrityError:
        return None
    if not rows:
        return None  # the group changed or went away since it was read
    added = {row[1] for row in rows if row[1] is not None}
    if added:
        group.updated_at = now
    return prepared.written([i for i, user_id in enumerate(user_ids) if user_id in added])
