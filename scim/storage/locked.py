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

import copy
import uuid
from collections.abc import Callable
from typing import Any

from django.db import connection, models, transaction
from django.db.models import BooleanField, Expression, F, TextField
from django.utils import timezone

from core.rows import RowReader, RowWriter
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from directories.pages import UsersPage
from directories.rendering import group_data, previous_attributes, user_data
from directories.selectors import directory_get, user_groups_attach
from scim.filter_query import DocAll, DocAny, DocElement, DocNode, DocNot
from scim.protocol.documents import MemberPlan
from scim.protocol.errors import invalid_value, not_found
from scim.protocol.versions import Precondition, require_version
from scim.selectors import (
    FirstRead,
    scim_directory_users_by_id,
    scim_group_get,
    scim_group_member_ids,
    scim_user_get,
    scim_users_page,
    user_docs,
)
from webhooks.services import events_record
from webhooks.services.recording import EventSpec

Events = list[dict[str, Any]]
# change(user) → the columns to write, None when the document is unchanged.
UserChange = Callable[[DirectoryUser], list[str] | None]
# change(group) → (the columns to write or None, the member plan of the request).
GroupChange = Callable[[DirectoryGroup], tuple[list[str] | None, MemberPlan]]

CHUNK = 500  # membership rows per statement; also the most users one fast member add may carry
_users = RowWriter(DirectoryUser)
_groups = RowWriter(DirectoryGroup)


# --- the comparison document (filter_doc) in SQL: SQLite's JSON1 functions ---------------------------------
# scim.filter_query describes a test on a resource's comparison document (DocTest, DocElement, …);
# `DocumentSql` renders it for SQLite and `postgres.PostgresDocumentSql` for PostgreSQL. Both walk the
# document the same way (every key holds a list: scim/protocol/documents/filterdoc.py), one nested
# EXISTS per step, so that the two databases give the same answers.


class DocumentExpression(Expression):
    """SQL over the row's comparison document: `sql` with `{doc}` standing for the column, so that
    Django can still relabel the table (a subquery's alias) as it compiles."""

    def __init__(self, sql: str, params: list[Any], output_field: Any, column: str = "filter_doc") -> None:
        super().__init__(output_field=output_field)
        self.sql, self.params = sql, params
        self.doc: Any = F(column)

    def get_source_expressions(self) -> list[Any]:
        return [self.doc]

    def set_source_expressions(self, exprs: list[Any]) -> None:
        (self.doc,) = exprs

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        doc_sql, doc_params = compiler.compile(self.doc)
        if doc_params:
            raise ValueError("the document must be a plain column")
        return self.sql.replace("{doc}", doc_sql), list(self.params)


class DocumentCondition(DocumentExpression):
    """A boolean condition on the comparison document (a filter's test)."""

    def __init__(self, sql: str, params: list[Any]) -> None:
        super().__init__(sql, params, BooleanField())


class DocumentKey(DocumentExpression):
    """A sort key read from the comparison document."""

    def __init__(self, sql: str, params: list[Any]) -> None:
        super().__init__(sql, params, TextField())


def json_key(key: str) -> str:
    """A key as a quoted member of a JSON path (`$."key"`): dots and colons of URNs stay inside it."""
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


class DocumentSql:
    """The comparison document in SQLite's JSON1 functions (json_each, json_extract).

    A step from the document (or from an element) to the values under a key is a json_each over that
    key's list; a test is an EXISTS over the chain of steps. `json_each` reports each value's type
    ('text', 'integer', 'real', 'true', 'false', 'object'), which every comparison checks first, so a
    string never equals a number."""

    collation = "BINARY"  # SQLite's default: code-point order, as Python compares strings

    def condition(self, node: DocNode) -> Expression:
        sql, params = _DocumentWalk(self).node(node, None)
        return DocumentCondition(sql, params)

    def sort_key(self, steps: tuple[str, ...], *, strings_only: bool) -> Expression:
        """The first value at `steps` (the primary element of a multi-valued attribute comes first),
        as text; a value that is not a string sorts as missing when `strings_only`."""
        path = "$" + "".join(f".{json_key(step)}[0]" for step in steps)
        if strings_only:
            return DocumentKey(
                "(CASE WHEN json_type({doc}, %s) = 'text' THEN json_extract({doc}, %s) END)", [path, path]
            )
        return DocumentKey("json_extract({doc}, %s)", [path])

    def text_order(self, expression: Any) -> Any:
        return expression

    # the steps of a walk: (FROM item, its parameters); `alias.value` is the JSON value reached

    def first(self, key: str, alias: str) -> tuple[str, list[Any]]:
        return f"json_each({{doc}}, %s) AS {alias}", [f"$.{json_key(key)}"]

    def step(self, parent: str, key: str, alias: str) -> tuple[str, list[Any]]:
        return f"json_each(CASE WHEN {parent}.type = 'object' THEN {parent}.value END, %s) AS {alias}", [
            f"$.{json_key(key)}"
        ]

    # One value reached by a walk, `{v}` in each template (`{t}` its text, `{b}` true or false); `%s` the
    # literal. Each comparison checks the value's JSON type first.
    IS_STRING = "{v}.type = 'text'"
    IS_NUMBER = "{v}.type IN ('integer', 'real')"
    IS_BOOLEAN = "{v}.type = '{b}'"
    TEXT = "{v}.value"
    NUMBER = "{v}.value"
    STRING_OPS = {
        "co": ("instr({t}, %s) > 0", 1),
        "sw": ("substr({t}, 1, length(%s)) = %s", 2),
        "ew": ("substr({t}, -length(%s)) = %s", 2),
    }
    TEXT_ORDER = "{t}"

    def compare(self, alias: str, op: str, value: Any) -> tuple[str, list[Any]]:
        """The condition on one value (at `alias`) for a DocTest's operator and literal."""
        if op == "pr":
            return "1 = 1", []
        text = self.TEXT.format(v=alias)
        if op == "str":
            return self.IS_STRING.format(v=alias), []
        if isinstance(value, bool):
            return self.IS_BOOLEAN.format(v=alias, b="true" if value else "false"), []
        if isinstance(value, str):
            typed = self.IS_STRING.format(v=alias)
            if op in self.STRING_OPS:
                template, uses = self.STRING_OPS[op]
                return f"{typed} AND {template.format(t=text)}", [value] * uses
            return f"{typed} AND {self.TEXT_ORDER.format(t=text)} {_SQL_OPERATORS[op]} %s", [value]
        number = self.NUMBER.format(v=alias)
        return f"{self.IS_NUMBER.format(v=alias)} AND {number} {_SQL_OPERATORS[op]} %s", [value]


_SQL_OPERATORS = {"eq": "=", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}


class _DocumentWalk:
    """One condition's SQL: nested EXISTS over the steps of each test, aliases numbered once per condition."""

    def __init__(self, dialect: Any) -> None:
        self.dialect = dialect
        self.count = 0

    def node(self, node: DocNode, base: str | None) -> tuple[str, list[Any]]:
        if isinstance(node, DocAll | DocAny):
            left, lp = self.node(node.left, base)
            right, rp = self.node(node.right, base)
            return f"({left} {'AND' if isinstance(node, DocAll) else 'OR'} {right})", lp + rp
        if isinstance(node, DocNot):
            inner, params = self.node(node.inner, base)
            return f"NOT ({inner})", params
        items, params, last = self.steps(node.steps, base)
        if isinstance(node, DocElement):
            where, wp = self.node(node.inner, last)
        else:
            where, wp = self.dialect.compare(last, node.op, node.value)
        return f"EXISTS (SELECT 1 FROM {items} WHERE {where})", params + wp  # noqa: S608 - values are parameters

    def steps(self, steps: tuple[str, ...], base: str | None) -> tuple[str, list[Any], str]:
        items: list[str] = []
        params: list[Any] = []
        parent = base
        for key in steps:
            self.count += 1
            alias = f"j{self.count}"
            sql, p = self.dialect.first(key, alias) if parent is None else self.dialect.step(parent, key, alias)
            items.append(sql)
            params += p
            parent = alias
        return ", ".join(items), params, parent  # type: ignore[return-value]


def require_users(wanted: list[uuid.UUID], users: dict[uuid.UUID, DirectoryUser]) -> None:
    """400 unless every id in `wanted` is among `users` (the users of this directory that were found)."""
    missing = [str(i) for i in wanted if i not in users]
    if missing:
        shown = ", ".join(missing[:3]) + (" …" if len(missing) > 3 else "")
        raise invalid_value(f"Not a user of this directory: {shown}.")


def user_event(directory: Directory, user: DirectoryUser) -> dict[str, Any]:
    """The User of a user event: its roles need its groups, read only when the directory maps roles
    (one query; the reads that brought the user along may have read them already)."""
    if directory.role_map:
        user_groups_attach(users=[user])
    return user_data(user, directory=directory)


def user_updated(directory: Directory, user: DirectoryUser, before: DirectoryUser) -> EventSpec:
    """`user.updated` for `user` as changed, with its `previous_attributes` against `before`, a copy
    taken before the change (`copy.copy`: the change sets new values, never edits the old ones). A
    user write never changes the user's groups, so both renderings share them."""
    data = user_event(directory, user)
    before.member_of = user.member_of
    return ("user.updated", data, previous_attributes(user_data(before, directory=directory), data))


def group_updated(group: DirectoryGroup, before: DirectoryGroup) -> EventSpec:
    """`group.updated` for `group` as changed, with its `previous_attributes` against `before` (as above)."""
    data = group_data(group)
    return ("group.updated", data, previous_attributes(group_data(before), data))


def member_events(
    directory: Directory,
    group: DirectoryGroup,
    users: dict[uuid.UUID, DirectoryUser],
    removed: list[uuid.UUID],
    to_add: list[uuid.UUID],
    added: list[uuid.UUID],
) -> list[tuple[str, Any]]:
    """`group.user_removed` for each id of `removed`, then `group.user_added` for each id of `added` in
    the order of `to_add` (the request's order). Called once the memberships are written, so the users'
    roles (read in the same transaction) are those after the change."""
    gdata = group_data(group)
    if directory.role_map:
        user_groups_attach(users=[users[i] for i in [*removed, *added] if i in users])
    events: list[tuple[str, Any]] = []
    for user_id in removed:
        if user_id in users:
            events.append(("group.user_removed", user_data(users[user_id], directory=directory) | {"group": gdata}))
    order = {user_id: i for i, user_id in enumerate(to_add)}
    for user_id in sorted(added, key=order.__getitem__):
        events.append(("group.user_added", user_data(users[user_id], directory=directory) | {"group": gdata}))
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
    # The SQL of filters and sorts on the comparison document (scim.filter_query, scim.sort_query).
    documents = DocumentSql()

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
        order: list[Any] | None = None,
        groups: bool = False,
    ) -> tuple[int, list[DirectoryUser]]:
        """The total and one page of the directory's users matching `condition` (None: all of them), in
        (created, id) order or in `order` (scim.sort_query); `page`: an unfiltered page already read with
        the directory (`directory_with`). `groups`: the users' groups are wanted (`member_of`), which a
        store may read in the same statement; those it does not are read by the caller."""
        if condition is None and not order:
            return self.users_all_page(
                directory=directory, start_index=start_index, count=count, page=page, groups=groups
            )
        return scim_users_page(
            directory=directory,
            condition=condition,
            start_index=start_index,
            count=count,
            order=order,
            reader=self.users_reader(groups=groups),
        )

    def users_all_page(
        self, *, directory: Directory, start_index: int, count: int, page: UsersPage | None, groups: bool = False
    ) -> tuple[int, list[DirectoryUser]]:
        return scim_users_page(directory=directory, condition=None, start_index=start_index, count=count)

    def users_reader(self, *, groups: bool) -> RowReader[DirectoryUser]:
        """The reader of a page of user resources (a store may read their groups along)."""
        return user_docs

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
        """Apply `change` to the user and write it with `user.updated` if anything changed. `known`: the
        user as read with the authentication ([] for none), for an optimistic store. `if_match`: 412
        unless it matches the version of the row read under the lock (so no write slips in between)."""
        with transaction.atomic():
            user = scim_user_get(directory=directory, user_id=user_id, for_update=True)
            if user is None:
                raise not_found("User")
            require_version(if_match, user.updated_at)
            before = copy.copy(user)
            names = change(user)
            if names is None:
                return user, []
            _users.update(user, names)
            return user, events_record(directory=directory, events=[user_updated(directory, user, before)])

    def user_delete(
        self,
        *,
        directory: Directory,
        user_id: Any,
        known: list[DirectoryUser] | None = None,
        if_match: Precondition | None = None,
    ) -> Events:
        """Delete the user and its memberships and record `user.deleted`. `known`, `if_match`: see
        `user_update`."""
        with transaction.atomic():
            user = scim_user_get(directory=directory, user_id=user_id, for_delete=True)
            if user is None:
                raise not_found("User")
            require_version(if_match, user.updated_at)
            return _delete_with_memberships(directory, user, "user", ("user.deleted", user_event(directory, user)))

    # groups

    def group_insert(self, *, directory: Directory, group: DirectoryGroup, plan: MemberPlan) -> Events:
        """Insert the group with the members of `plan` and record `group.created` and each member added."""
        with transaction.atomic():
            _groups.insert(group)
            added = self.members_apply(directory=directory, group=group, plan=plan)
            return events_record(directory=directory, events=[("group.created", group_data(group)), *added])

    def group_update(
        self, *, directory: Directory, group_id: Any, change: GroupChange, if_match: Precondition | None = None
    ) -> tuple[DirectoryGroup, Events]:
        """Apply `change` to the group under its row lock: its document if it changed (`group.updated`),
        then its member plan (one event per membership really added or removed). `if_match`: as for
        `user_update`."""
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

    def group_delete(self, *, directory: Directory, group_id: Any, if_match: Precondition | None = None) -> Events:
        with transaction.atomic():
            group = scim_group_get(directory=directory, group_id=group_id, for_update=True)
            if group is None:
                raise not_found("Group")
            require_version(if_match, group.updated_at)
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
        return member_events(directory, group, users, removed, to_add, added)
