# ruff: noqa: S608  (the SQL is assembled from quoted table and column names; every value is a parameter)
"""The SCIM path's PostgreSQL-only SQL: the stores of PostgreSQL (scim.storage.portable.Store extended).

`PostgresStore` keeps the portable locked path with what only PostgreSQL has: the authentication's
directory lookup joined with the request's first read (LEFT JOIN LATERAL), the constant-cost user
pages (directories.pages), and the key-share lock on the users a membership references (so a user
cannot be deleted before the membership row that references it commits). scim.storage.current uses
it inside a caller's transaction (the embedding API): there the deferred foreign keys would be
checked at the caller's COMMIT, so a concurrent delete could not be caught here.

`PostgresStatements`, used outside any transaction (every HTTP request; ATOMIC_REQUESTS is off),
makes the hot writes one SQL statement each. Through an atomic block, creating a user costs five
round trips to the database (BEGIN, the INSERT, the outbox INSERT, COMMIT, after the authentication
SELECT). Here the change and its webhook events are one statement built from data-modifying WITH
queries, which PostgreSQL runs as a transaction of its own: the change and its events commit
together or not at all, as the outbox requires (contract §5). `core.rows.statement_run` runs
it.

Writes to an existing row read it first without a lock and make the statement conditional on the
row being as it was read (an optimistic check on `updated_at`, or on the group's name and document).
When it is not, or when a concurrent delete makes a foreign key fail, the statement functions below
return None and the store redoes the request on its locked path, which answers as a serialized
execution would. A None costs one wasted statement, only under contention on the same row.
"""

from __future__ import annotations

import copy
import functools
import re
import uuid
from typing import Any

import orjson
from django.db import IntegrityError, OperationalError, connection
from django.db.models import Expression
from django.db.models.functions import Collate
from django.utils import timezone

from core.rows import Extra, RowReader, RowWriter, rows_cursor, statement_run
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from directories.pages import UsersPage, directory_users_page, directory_users_total
from directories.rendering import group_data, user_data
from directories.selectors import user_groups_attach
from scim.filter_query import DocAll, DocElement, DocNode, DocTest
from scim.protocol.documents import MemberPlan
from scim.protocol.errors import not_found
from scim.protocol.versions import Precondition
from scim.selectors import FirstRead, scim_group_with_users, scim_user_get, scim_users_page, user_docs
from scim.storage.portable import (
    CHUNK,
    DocumentCondition,
    DocumentKey,
    DocumentSql,
    Events,
    GroupChange,
    Store,
    UserChange,
    member_events,
    require_users,
    user_event,
    user_updated,
)
from webhooks.models import EventSequence, WebhookEvent
from webhooks.services import PreparedEvents, events_prepare

_users = RowWriter(DirectoryUser)
_groups = RowWriter(DirectoryGroup)
_directories = RowReader(Directory)


def _member_of(value: Any) -> list[tuple[uuid.UUID, str]]:
    return [(uuid.UUID(group_id), name) for group_id, name in orjson.loads(value)]


# A user's groups read in the same statement as the user: SCIM's `groups` and the roles of its events.
# Each group's name is a lookup by primary key, not a join: a JOIN made PostgreSQL hash the directory's
# whole group table once per user read (bench/README.md, "Issue 19": about 0.1 ms per user).
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
def _q(name: str) -> str:
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
        if isinstance(exc, IntegrityError) or getattr(exc.__cause__, "sqlstate", None) == "40P01":
            return None
        raise


def _numbered_events(prepared: PreparedEvents, *, keys: list[Any], when: str) -> tuple[str, list[Any]]:
    """WITH queries that record the events of `prepared` whose key (parallel to its rows) satisfies `when`
    (`{key}` in it stands for the key) and give them the directory's next numbers:

    - `c`: the chosen events, numbered 1..k in recording order;
    - `q`: the directory's counter raised by k (an upsert that locks the counter row until the
      statement commits, so numbers follow commit order: docs/events.md); nothing when k is 0;
    - `e`: the outbox rows, each body joined around its number (webhooks.services.body_parts).

    The statement's result then carries `(SELECT last FROM q)`, the counter after it."""
    meta = WebhookEvent._meta
    first = prepared.rows[0]
    marks = "(CAST(%s AS uuid), CAST(%s AS integer), CAST(%s AS uuid), %s, %s, %s, CAST(%s AS timestamptz))"
    values = ", ".join([marks] * len(prepared.rows))
    params: list[Any] = []
    for i, (key, row, (prefix, suffix)) in enumerate(zip(keys, prepared.rows, prepared.parts, strict=True)):
        params += [key, i, row.id, row.event_type, prefix, suffix, row.created_at]
    counter = _q(EventSequence._meta.db_table)
    events = _q(meta.db_table)
    columns = ", ".join(
        _q(meta.get_field(name).column)
        for name in (
            "id", "directory_id", "event_type", "target", "body", "state", "state_reason", "created_at",
            "finished_at", "sequence", "attempts", "resend",
        )
    )  # fmt: skip
    number = "q.last - k.n + c.n"
    sql = (
        f"c AS (SELECT v.*, row_number() OVER (ORDER BY v.o) AS n FROM (VALUES {values}) "
        f"AS v(k, o, i, t, p, s, at) WHERE {when.replace('{key}', 'v.k')}), "
        f"q AS (INSERT INTO {counter} ({_q('directory_id')}, {_q('last')}) SELECT CAST(%s AS uuid), count(*) "
        f"FROM c HAVING count(*) > 0 ON CONFLICT ({_q('directory_id')}) "
        f"DO UPDATE SET {_q('last')} = {counter}.{_q('last')} + excluded.{_q('last')} RETURNING {_q('last')} AS last), "
        f"e AS (INSERT INTO {events} ({columns}) SELECT c.i, CAST(%s AS uuid), c.t, %s, "
        f"c.p || CAST({number} AS text) || c.s, %s, %s, c.at, CAST(%s AS timestamptz), {number}, 0, FALSE "
        "FROM c, q, (SELECT count(*) AS n FROM c) AS k)"
    )
    params += [prepared.directory_id, prepared.directory_id, first.target, first.state, first.state_reason]
    params.append(first.finished_at)
    return sql, params


def _with_events(
    change: str, params: list[Any], prepared: PreparedEvents, *, when: str, also: str = ""
) -> tuple[str, list[Any]]:
    """`WITH a AS (<change>)<also>, <the numbered events recorded WHERE when> SELECT *, <counter> FROM a`;
    `also` is more WITH queries (without parameters)."""
    events_sql, events_params = _numbered_events(prepared, keys=[None] * len(prepared.rows), when=when)
    return f"WITH a AS ({change}){also}, {events_sql} SELECT *, (SELECT last FROM q) FROM a", params + events_params


def user_insert_statement(*, directory: Directory, user: DirectoryUser) -> Events:
    """INSERT the user and its `user.created` event. A duplicate userName raises IntegrityError."""
    insert, params = _users.insert_sql(user)  # sets created_at / updated_at on `user` first
    user.member_of = []  # a new user is in no group yet
    prepared = events_prepare(directory=directory, events=[("user.created", user_event(directory, user))])
    # The events depend on the INSERT's row, so the counter is taken only once the row is in (its unique
    # key checked): a writer never holds the counter while it waits for another's row.
    sql, params = _with_events(f"{insert} RETURNING 1", params, prepared, when="EXISTS (SELECT 1 FROM a)")
    rows = statement_run(sql, params)
    return prepared.written(rows[0][-1])


def group_insert_statement(*, directory: Directory, group: DirectoryGroup) -> Events:
    """INSERT a group without members and its `group.created` event, as `user_insert_statement` does for
    a user. A duplicate displayName raises IntegrityError."""
    insert, params = _groups.insert_sql(group)  # sets created_at / updated_at on `group` first
    prepared = events_prepare(directory=directory, events=[("group.created", group_data(group))])
    sql, params = _with_events(f"{insert} RETURNING 1", params, prepared, when="EXISTS (SELECT 1 FROM a)")
    rows = statement_run(sql, params)
    return prepared.written(rows[0][-1])


def user_update_statement(
    *, directory: Directory, user: DirectoryUser, names: list[str], read_at: Any, before: DirectoryUser
) -> Events | None:
    """UPDATE the columns `names` (new values already set on `user`) and record `user.updated`, if the
    row still has the `updated_at` it was read with (`read_at`). None when it has not. `before`: the
    user as read, before the change (its `previous_attributes`)."""
    update, params = _users.update_sql(user, names, where=f"{_q('updated_at')} = %s")  # bumps updated_at
    params.append(read_at)
    prepared = events_prepare(directory=directory, events=[user_updated(directory, user, before)])
    sql, params = _with_events(f"{update} RETURNING 1", params, prepared, when="EXISTS (SELECT 1 FROM a)")
    rows = _run_unless_lost(sql, params)
    if not rows:  # lost a race, or the row changed since it was read
        return None
    return prepared.written(rows[0][-1])


def user_delete_statement(*, directory: Directory, user: DirectoryUser) -> Events | None:
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
    prepared = events_prepare(directory=directory, events=[("user.deleted", user_event(directory, user))])
    sql, params = _with_events(change, params, prepared, when="EXISTS (SELECT 1 FROM a)", also=memberships)
    deleted = _run_unless_lost(sql, params)
    return prepared.written(deleted[0][-1]) if deleted else None


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
    groups, members = _q(DirectoryGroup._meta.db_table), _q(GroupMembership._meta.db_table)
    raw_field = DirectoryGroup._meta.get_field("raw")
    now = timezone.now()
    gdata = group_data(group)
    if directory.role_map:
        # The events say the users' roles once added: their groups so far, and this one.
        user_groups_attach(users=[users[user_id] for user_id in user_ids])
        for user_id in user_ids:
            joined = users[user_id].member_of or []
            if all(group_id != group.id for group_id, _name in joined):
                users[user_id].member_of = [*joined, (group.id, group.display_name)]
    prepared = events_prepare(
        directory=directory,
        events=[
            ("group.user_added", user_data(users[user_id], directory=directory) | {"group": gdata})
            for user_id in user_ids
        ],
    )
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
    users_table = _q(DirectoryUser._meta.db_table)
    sql = (
        f"WITH g AS (SELECT {_q('id')} FROM {groups} WHERE {_q('id')} = %s AND {_q('directory_id')} = %s "
        f"AND {_q('display_name')} = %s AND {_q('raw')} = %s FOR UPDATE), "
        # The users' key-share locks, taken here rather than by the foreign key check at commit: after
        # the directory's sequence counter (taken last, below), a wait for a user that a concurrent
        # delete holds would close a lock cycle with that delete.
        f"ul AS (SELECT {_q('id')} FROM {users_table} WHERE {_q('id')} IN ({marks}) ORDER BY {_q('id')} "
        "FOR KEY SHARE), "
        f"a AS (INSERT INTO {members} ({_q('group_id')}, {_q('user_id')}, {_q('created_at')}) "
        f"SELECT g.{_q('id')}, v.u, CAST(%s AS timestamptz) FROM g, (VALUES {marks}) AS v(u) "
        f"LEFT JOIN ul ON ul.{_q('id')} = v.u ORDER BY v.u "
        f"ON CONFLICT ({_q('group_id')}, {_q('user_id')}) DO NOTHING RETURNING {_q('user_id')}), "
        f"t AS (UPDATE {groups} SET {_q('updated_at')} = %s FROM g WHERE {groups}.{_q('id')} = g.{_q('id')} "
        "AND EXISTS (SELECT 1 FROM a))"
    )
    events_sql, events_params = _numbered_events(
        prepared, keys=list(user_ids), when=f"{{key}} IN (SELECT {_q('user_id')} FROM a)"
    )
    sql += f", {events_sql} SELECT g.{_q('id')}, a.{_q('user_id')}, (SELECT last FROM q) FROM g LEFT JOIN a ON TRUE"
    params += events_params
    rows = _run_unless_lost(sql, params)
    if not rows:
        return None  # lost a race, or the group changed or went away since it was read
    added = {row[1] for row in rows if row[1] is not None}
    if added:
        group.updated_at = now
    return prepared.written(rows[0][2], [i for i, user_id in enumerate(user_ids) if user_id in added])


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
        read.rows = [reader.build(row[width:]) for row in rows if row[width] is not None]
    return _directories.build(rows[0][:width])


def _members_add_checked(
    *, directory: Directory, group: DirectoryGroup, user_ids: list[uuid.UUID]
) -> tuple[dict[uuid.UUID, DirectoryUser], list[uuid.UUID]]:
    """Adds only, under the group's lock: check the users, lock them and insert the memberships in one
    statement.

    The same locks in the same order as `users_for_members` + the portable membership insert (FOR KEY
    SHARE on the users by id, then inserts by user id), one round trip instead of two. Returns the
    users found and the ids really added; the caller rejects the request (and so rolls the inserts
    back) when a user is missing.
    """
    users_table = DirectoryUser._meta.db_table
    table = GroupMembership._meta.db_table
    pk_field = DirectoryUser._meta.pk
    marks = ", ".join(["%s"] * len(user_ids))
    sql = (
        f'WITH u AS (SELECT * FROM "{users_table}" WHERE "directory_id" = %s AND "id" IN ({marks}) '
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


# --- the comparison document (filter_doc) in PostgreSQL's jsonb functions ----------------------------------
# The migration directories 0004 indexes `filter_doc jsonb_path_ops` (GIN) and the folded family name in
# code-point order: the SQL below must keep using `@>` for equality and that exact sort expression.

_SAFE_KEY = re.compile(r"[a-z0-9_$-]+")


def _containment(node: DocNode) -> Any:
    """The jsonb document `{doc} @>` must contain for `node` to hold, or None when `node` is not a pure
    equality: a test `eq`, or a value filter whose conditions are all `eq` on one step each (the same
    element then holds them all). Containment is what the GIN index answers."""
    if isinstance(node, DocTest) and node.op == "eq":
        return _nested(node.steps, [node.value])
    if isinstance(node, DocElement):
        element: dict[str, Any] = {}
        stack = [node.inner]
        while stack:
            item = stack.pop()
            if isinstance(item, DocAll):
                stack += [item.left, item.right]
            elif isinstance(item, DocTest) and item.op == "eq" and len(item.steps) == 1:
                if item.steps[0] in element:
                    return None  # two values for one key: not one containment
                element[item.steps[0]] = [item.value]
            else:
                return None
        return _nested(node.steps, [element])
    return None


def _nested(steps: tuple[str, ...], values: list[Any]) -> dict[str, Any]:
    """`{"a": [{"b": values}]}` for steps (a, b): the document shape of filterdoc."""
    document: dict[str, Any] = {steps[-1]: values}
    for step in reversed(steps[:-1]):
        document = {step: [document]}
    return document


class PostgresDocumentSql(DocumentSql):
    """The comparison document in jsonb: `@>` for equalities (GIN-indexed), else the same nested EXISTS
    as SQLite's, over jsonb_array_elements."""

    collation = "C"  # code-point order, whatever the database's collation: SQLite's and Python's order

    def condition(self, node: DocNode) -> Expression:
        contained = _containment(node)
        if contained is not None:
            return DocumentCondition("({doc} @> CAST(%s AS jsonb))", [orjson.dumps(contained).decode()])
        return super().condition(node)

    def sort_key(self, steps: tuple[str, ...], *, strings_only: bool) -> Expression:
        if all(_SAFE_KEY.fullmatch(step) for step in steps):
            # A literal path, so that the planner matches it with an expression index (user_sort_family_name).
            path = "'{" + ",".join(f"{step},0" for step in steps) + "}'"
            params: list[Any] = []
        else:
            path = "CAST(%s AS text[])"
            params = ["{" + ",".join(f'"{_array_item(step)}",0' for step in steps) + "}"]
        text = f'(({{doc}} #>> {path}) COLLATE "C")'
        if strings_only:
            return DocumentKey(f"(CASE WHEN jsonb_typeof({{doc}} #> {path}) = 'string' THEN {text} END)", params * 2)
        return DocumentKey(text, params)

    def text_order(self, expression: Any) -> Any:
        return Collate(expression, "C")

    def first(self, key: str, alias: str) -> tuple[str, list[Any]]:
        return self._elements("{doc}", key, alias)

    def step(self, parent: str, key: str, alias: str) -> tuple[str, list[Any]]:
        return self._elements(f"{parent}.value", key, alias)

    @staticmethod
    def _elements(source: str, key: str, alias: str) -> tuple[str, list[Any]]:
        # Every key of the document holds an array (filterdoc); the CASE keeps a stray scalar from failing.
        member = f"({source} -> %s)"
        return (
            f"jsonb_array_elements(CASE WHEN jsonb_typeof({member}) = 'array' THEN {member} END) AS {alias}(value)",
            [key, key],
        )

    IS_STRING = "jsonb_typeof({v}.value) = 'string'"
    IS_NUMBER = "jsonb_typeof({v}.value) = 'number'"
    IS_BOOLEAN = "{v}.value = '{b}'::jsonb"
    TEXT = "({v}.value #>> '{{}}')"
    NUMBER = "CAST({v}.value AS numeric)"
    STRING_OPS = {
        "co": ("strpos({t}, %s) > 0", 1),
        "sw": ("starts_with({t}, %s)", 1),
        "ew": ("right({t}, char_length(%s)) = %s", 2),
    }
    TEXT_ORDER = '({t} COLLATE "C")'


def _array_item(step: str) -> str:
    return step.replace("\\", "\\\\").replace('"', '\\"')


class PostgresStore(Store):
    """The locked path with PostgreSQL's lock modes and joins (inside a caller's transaction)."""

    documents = PostgresDocumentSql()

    def directory_with(self, *, directory_id: Any, read: FirstRead) -> Directory | None:
        try:
            pk = uuid.UUID(str(directory_id))
        except ValueError:
            return None
        return _directory_with(pk, read)

    def users_all_page(
        self, *, directory: Directory, start_index: int, count: int, page: UsersPage | None, groups: bool = False
    ) -> tuple[int, list[DirectoryUser]]:
        reader = user_docs_groups if groups else user_docs
        return directory_users_page(
            directory_id=directory.id, start_index=start_index, count=count, reader=reader, page=page
        )

    def users_reader(self, *, groups: bool) -> RowReader[DirectoryUser]:
        return user_docs_groups if groups else user_docs

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
        if condition is None and order:
            # A sorted list of every user: its total from the tally (a COUNT walks the whole directory).
            return scim_users_page(
                directory=directory,
                condition=None,
                start_index=start_index,
                count=count,
                order=order,
                total=directory_users_total(directory_id=directory.id),
            )
        return super().users_page(
            directory=directory,
            condition=condition,
            start_index=start_index,
            count=count,
            page=page,
            order=order,
            groups=groups,
        )

    def users_for_members(self, *, directory: Directory, user_ids: list[uuid.UUID]) -> dict[uuid.UUID, DirectoryUser]:
        # FOR KEY SHARE: the deferred foreign key of the membership would otherwise fail at commit.
        if not user_ids:
            return {}
        placeholders = ", ".join(["%s"] * len(user_ids))
        sql = (
            f'SELECT * FROM "{DirectoryUser._meta.db_table}" WHERE "directory_id" = %s AND "id" IN ({placeholders}) '
            'ORDER BY "id" FOR KEY SHARE'
        )
        return {row.id: row for row in DirectoryUser.objects.raw(sql, [directory.id, *user_ids])}

    def members_apply(self, *, directory: Directory, group: DirectoryGroup, plan: MemberPlan) -> list[tuple[str, Any]]:
        if not plan.empty and plan.replace_with is None and not plan.remove and len(plan.add) <= CHUNK:
            # The common case (Okta adds one member per PATCH): check + insert in one statement.
            users, added = _members_add_checked(directory=directory, group=group, user_ids=plan.add)
            require_users(plan.add, users)
            return member_events(directory, group, users, [], plan.add, added)
        return super().members_apply(directory=directory, group=group, plan=plan)


class PostgresStatements(PostgresStore):
    """Outside any transaction: the hot writes as one statement each, the locked path when a row
    changed since it was read."""

    optimistic = True

    def user_insert(self, *, directory: Directory, user: DirectoryUser) -> Events:
        return user_insert_statement(directory=directory, user=user)

    def group_insert(self, *, directory: Directory, group: DirectoryGroup, plan: MemberPlan) -> Events:
        """A group created without members (how Okta and Entra create one; members follow in PATCHes):
        one statement. With members, the locked path (their users are checked and locked first)."""
        if plan.empty:
            return group_insert_statement(directory=directory, group=group)
        return super().group_insert(directory=directory, group=group, plan=plan)

    def _user_unlocked(self, *, directory: Directory, user_id: Any, known: list[DirectoryUser] | None) -> DirectoryUser:
        """The user read without a lock: `known` when it came with the authentication, else read now."""
        if known is not None:
            user = known[0] if known else None
        else:
            user = scim_user_get(directory=directory, user_id=user_id)
        if user is None:
            raise not_found("User")
        return user

    def user_update(
        self,
        *,
        directory: Directory,
        user_id: Any,
        change: UserChange,
        known: list[DirectoryUser] | None = None,
        if_match: Precondition | None = None,
    ) -> tuple[DirectoryUser, Events]:
        if if_match is not None:
            # A conditional write checks the version under the row's lock, in the same transaction.
            return super().user_update(directory=directory, user_id=user_id, change=change, if_match=if_match)
        user = self._user_unlocked(directory=directory, user_id=user_id, known=known)
        read_at = user.updated_at
        before = copy.copy(user)
        names = change(user)
        if names is None:
            return user, []
        events = user_update_statement(directory=directory, user=user, names=names, read_at=read_at, before=before)
        if events is not None:
            return user, events
        return super().user_update(directory=directory, user_id=user_id, change=change)

    def user_delete(
        self,
        *,
        directory: Directory,
        user_id: Any,
        known: list[DirectoryUser] | None = None,
        if_match: Precondition | None = None,
    ) -> Events:
        if if_match is not None:
            return super().user_delete(directory=directory, user_id=user_id, if_match=if_match)
        user = self._user_unlocked(directory=directory, user_id=user_id, known=known)
        events = user_delete_statement(directory=directory, user=user)
        if events is not None:
            return events
        return super().user_delete(directory=directory, user_id=user_id)

    def members_add(
        self, *, directory: Directory, group_id: Any, user_ids: list[uuid.UUID], change: GroupChange
    ) -> tuple[DirectoryGroup, Events]:
        """One read of the group and the users, then one statement (`members_add_statement`); the locked
        path when the request does not qualify after all (its document changes too, or its plan is
        not exactly these adds) or the group changed meanwhile."""
        group, users = scim_group_with_users(directory=directory, group_id=group_id, user_ids=user_ids)
        if group is None:
            raise not_found("Group")
        names, plan = change(group)
        if (
            names is None
            and plan.replace_with is None
            and not plan.remove
            and list(dict.fromkeys(plan.add)) == user_ids
        ):
            require_users(user_ids, users)
            events = members_add_statement(directory=directory, group=group, users=users, user_ids=user_ids)
            if events is not None:
                return group, events
        return super().members_add(directory=directory, group_id=group_id, user_ids=user_ids, change=change)
