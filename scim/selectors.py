"""Reads for the SCIM surface, always scoped by directory."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import connection
from django.db.models import Q

from core.rows import RowReader
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from directories.pages import UsersPage, directory_users_page
from directories.selectors import directory_groups, directory_users, page_rows
from scim.filter_query import Equality
from scim.rendering import member_item

_directories = RowReader(Directory)
_users = RowReader(DirectoryUser)
_groups = RowReader(DirectoryGroup)
# What a SCIM user resource is made of (scim.rendering.user_resource); list pages read only these.
_user_docs = RowReader(DirectoryUser, fields=("id", "directory_id", "raw", "created_at", "updated_at"))
_BY_ID = '{table}."directory_id" = %s AND {table}."id" = %s'


def _pk(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        return None


def scim_user_get(
    *, directory: Directory, user_id: Any, for_update: bool = False, for_delete: bool = False
) -> DirectoryUser | None:
    """A user of this directory; None for an unknown id, another directory's id or a non-UUID."""
    pk = _pk(user_id)
    if pk is None:
        return None
    lock = None
    if for_delete:
        # A full FOR UPDATE conflicts with the KEY SHARE a member insert takes on the user, so a
        # delete and an insert of a membership of this user never interleave (deferred FK at commit).
        lock = "update"
    elif for_update:
        # No-key lock: renames and PATCHes of one user serialize, while group member inserts (which
        # take KEY SHARE on the user through the foreign key) are not blocked.
        lock = "no_key_update"
    return _users.first(_users.sql(_BY_ID, lock=lock), [_users.param("id", directory.id), _users.param("id", pk)])


def scim_group_get(*, directory: Directory, group_id: Any, for_update: bool = False) -> DirectoryGroup | None:
    pk = _pk(group_id)
    if pk is None:
        return None
    # With for_update, every write to a group (rename, members) takes this row lock first: one lock
    # order for all group writers, so parallel member PATCHes serialize instead of deadlocking.
    sql = _groups.sql(_BY_ID, lock="update" if for_update else None)
    return _groups.first(sql, [_groups.param("id", directory.id), _groups.param("id", pk)])


GroupWithUsers = tuple[DirectoryGroup | None, dict[uuid.UUID, DirectoryUser]]


class FirstRead:
    """A read that comes with the directory lookup of the request's authentication (one round trip for
    both, see `scim_directory_with`). `kind` is "user" (by id), "users" (a page, unfiltered or
    filtered by one equality) or "members" (a group and the users of `user_ids`, for a PATCH that only
    adds members; `body` and `operations` are that request's parsed body and PATCH operations)."""

    __slots__ = (
        "body",
        "count",
        "equality",
        "group_id",
        "kind",
        "members",
        "operations",
        "page",
        "rows",
        "start_index",
        "user_id",
        "user_ids",
    )

    def __init__(
        self,
        kind: str,
        *,
        user_id: uuid.UUID | None = None,
        equality: Equality | None = None,
        start_index: int = 1,
        count: int = 0,
        group_id: uuid.UUID | None = None,
        user_ids: list[uuid.UUID] | None = None,
        body: Any = None,
        operations: list[Any] | None = None,
    ) -> None:
        self.kind, self.user_id, self.equality = kind, user_id, equality
        self.start_index, self.count = start_index, count
        self.group_id, self.user_ids, self.body, self.operations = group_id, user_ids, body, operations
        self.rows: list[Any] | None = None  # set by scim_directory_with
        self.page: UsersPage | None = None  # an unfiltered page: set and read by scim_directory_with
        self.members: GroupWithUsers | None = None  # "members": set by scim_directory_with

    def matches(self, kind: str, **values: Any) -> bool:
        """Whether this is the read the handler is about to make (`rows` may still be None: the database
        could not fetch it with the directory, and the handler reads it itself)."""
        return self.kind == kind and all(getattr(self, k) == v for k, v in values.items())


def scim_directory_with(*, directory_id: Any, read: FirstRead | None) -> Directory | None:
    """The directory `directory_id` (None if unknown) and, on PostgreSQL, `read` in the same query.

    Used before the request is authenticated: the rows of `read` are only kept on `read.rows` and are
    used only once the secret has been checked against the directory returned here. The query is the
    directory's row LEFT JOIN LATERAL the read, so a missing user or an empty page still returns the
    directory. Other databases (no LATERAL in SQLite) read the directory alone.
    """
    pk = _pk(directory_id)
    if pk is None:
        return None
    if (
        read is None
        or connection.vendor != "postgresql"
        or (read.kind == "users" and read.equality is not None and not read.count)
    ):
        return _directories.first(_directories.sql('{table}."id" = %s'), [_directories.param("id", pk)])
    table = _directories.table()
    owner = f'{{table}}."directory_id" = {table}."id"'
    if read.kind == "members":
        return _directory_with_members(pk, read)
    page = None
    if read.kind == "user":
        reader = _users
        inner = reader.sql(f'{owner} AND {{table}}."id" = %s')
        params: list[Any] = [read.user_id]
    elif read.equality is None:  # the whole directory: directories.pages
        reader = _user_docs
        page = read.page = UsersPage.plan(pk, start_index=read.start_index, count=read.count)
        inner = page.sql(reader, directory=f'{table}."id"')
        params = page.params()
    else:
        reader = _user_docs
        where = f'{owner} AND {{table}}."{read.equality.column}" = %s'
        inner = reader.sql(where, suffix=' ORDER BY {table}."created_at", {table}."id" LIMIT %s OFFSET %s')
        params = [read.equality.value, read.count, read.start_index - 1]
    columns, width = _directories.columns()
    order = ""
    if read.kind == "users":
        order = ' ORDER BY t."created_at", t."id"'
    if page is not None:
        # The directory's columns on the first row only: repeated on each row of a page, psycopg would
        # parse them (two timestamps, a UUID, the secrets) a hundred times over for one use. (An
        # equality filter's page is usually one row: no window function for it.)
        first = f"row_number() OVER ({order.strip()}) = 1"
        # (RowReader joins quoted "table"."column" names with ", ", which no quoted name here contains.)
        columns = ", ".join(f"CASE WHEN {first} THEN {column} END" for column in columns.split(", "))
    sql = f'SELECT {columns}, t.* FROM {table} LEFT JOIN LATERAL ({inner}) AS t ON TRUE WHERE {table}."id" = %s{order}'  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, pk])
        rows = cursor.fetchall()
    if not rows:
        return None
    if page is not None:
        page.take([row[width:] for row in rows], reader)
    else:
        read.rows = [reader.build(row[width:]) for row in rows if row[width] is not None]
    return _directories.build(rows[0][:width])


def _page(qs: Any, *, start_index: int, count: int) -> tuple[int, list[Any]]:
    if count == 0:
        return qs.count(), []
    # Deferred join: the OFFSET walks an index of ids only, the full rows are read for this page only.
    rows = page_rows(qs, offset=start_index - 1, limit=count)
    if start_index == 1 and len(rows) < count:
        return len(rows), rows  # the whole result fits in this page: no COUNT query needed
    return qs.count(), rows


def _page_fixed(
    reader: RowReader[Any],
    *,
    directory: Directory,
    equality: Equality | None,
    start_index: int,
    count: int,
    rows: list[Any] | None = None,
) -> tuple[int, list[Any]]:
    """A page of the directory's rows, all of them or those whose `equality.column` equals
    `equality.value`: fixed SQL, no QuerySet compiled (bench/README.md)."""
    where = '{table}."directory_id" = %s'
    params = [reader.param("id", directory.id)]
    if equality is not None:
        where += f' AND {{table}}."{equality.column}" = %s'
        params.append(equality.value)
    order = ' ORDER BY {table}."created_at", {table}."id"'
    if rows is not None:  # read with the directory (scim_directory_with)
        if start_index == 1 and len(rows) < count:
            return len(rows), rows
    elif count:
        if equality is None:
            # Deferred join, as directories.selectors.page_rows: the OFFSET walks the
            # (directory, created_at, id) index, whole rows are read for this page only.
            ids = f'SELECT {{table}}."id" FROM {{table}} WHERE {where}{order} LIMIT %s OFFSET %s'  # noqa: S608 - fixed text, values are parameters
            sql = reader.sql(f'{{table}}."id" IN ({ids})', suffix=order)
        else:
            sql = reader.sql(where, suffix=order + " LIMIT %s OFFSET %s")
        rows = reader.fetch(sql, [*params, count, start_index - 1])
        if start_index == 1 and len(rows) < count:
            return len(rows), rows
    else:
        rows = []
    with connection.cursor() as cursor:
        cursor.execute(reader.count_sql(where), params)
        return cursor.fetchone()[0], rows


def scim_users_page(
    *,
    directory: Directory,
    condition: Q | Equality | None,
    start_index: int,
    count: int,
    rows: list[DirectoryUser] | None = None,
    page: UsersPage | None = None,
) -> tuple[int, list[DirectoryUser]]:
    """`rows` (an Equality) or `page` (no condition): this page, already read with the directory
    (scim_directory_with). Unfiltered pages on PostgreSQL: directories.pages."""
    if condition is None and connection.vendor == "postgresql":
        return directory_users_page(
            directory_id=directory.id, start_index=start_index, count=count, reader=_user_docs, page=page
        )
    if condition is None or isinstance(condition, Equality):
        return _page_fixed(
            _user_docs, directory=directory, equality=condition, start_index=start_index, count=count, rows=rows
        )
    qs = directory_users(directory=directory)
    if condition is not None:
        qs = qs.filter(condition)
    return _page(qs, start_index=start_index, count=count)


def scim_groups_page(
    *, directory: Directory, condition: Q | Equality | None, start_index: int, count: int
) -> tuple[int, list[DirectoryGroup]]:
    if isinstance(condition, Equality):
        return _page_fixed(_groups, directory=directory, equality=condition, start_index=start_index, count=count)
    qs = directory_groups(directory=directory)
    if condition is not None:
        qs = qs.filter(condition)
    return _page(qs, start_index=start_index, count=count)


def scim_group_members(*, directory: Directory, group_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """Members of several groups in one query, as SCIM member items, in membership order."""
    result: dict[uuid.UUID, list[dict[str, Any]]] = {gid: [] for gid in group_ids}
    if not group_ids:
        return result
    rows = GroupMembership.objects.filter(group_id__in=group_ids).order_by("id").values_list("group_id", "user_id")
    for group_id, user_id in rows:
        result[group_id].append(member_item(directory.id, user_id))
    return result


def scim_directory_users_by_id(
    *, directory: Directory, user_ids: list[uuid.UUID], lock: bool = False
) -> dict[uuid.UUID, DirectoryUser]:
    """Users of this directory among `user_ids`.

    lock (PostgreSQL): FOR KEY SHARE, so a user cannot be deleted between this check and the
    membership insert that references it (the deferred foreign key would otherwise fail at commit).
    """
    if not user_ids:
        return {}
    if lock and connection.vendor == "postgresql":
        table = DirectoryUser._meta.db_table
        placeholders = ", ".join(["%s"] * len(user_ids))
        sql = (
            f'SELECT * FROM "{table}" WHERE "directory_id" = %s AND "id" IN ({placeholders}) '  # noqa: S608
            'ORDER BY "id" FOR KEY SHARE'
        )
        rows = DirectoryUser.objects.raw(sql, [directory.id, *user_ids])
    else:
        rows = DirectoryUser.objects.filter(directory=directory, pk__in=user_ids)
    return {row.id: row for row in rows}


def _group_with_users_sql(user_ids: list[uuid.UUID], *, directory: str) -> tuple[str, list[Any], int, int]:
    """SELECT of a group of the directory `directory` (SQL) and of that directory's users among
    `user_ids`: the group's row joined with each user found (none: one row of NULL user columns).
    Returns the SQL with its parameters (the group's id last) and the widths of the two parts."""
    group_columns, group_width = _groups.columns()
    user_columns, user_width = _users.columns()
    groups, users = _groups.table(), _users.table()
    marks = ", ".join(["%s"] * len(user_ids)) or "NULL"
    sql = (
        f"SELECT {group_columns}, {user_columns} FROM {groups} LEFT JOIN {users} "  # noqa: S608
        f'ON {users}."directory_id" = {groups}."directory_id" AND {users}."id" IN ({marks}) '
        f'WHERE {groups}."directory_id" = {directory} AND {groups}."id" = %s'
    )
    return sql, [_users.param("id", u) for u in user_ids], group_width, user_width


def _group_with_users_build(rows: list[Any], group_width: int) -> GroupWithUsers:
    if not rows or rows[0][0] is None:
        return None, {}
    found = [_users.build(row[group_width:]) for row in rows if row[group_width] is not None]
    return _groups.build(rows[0][:group_width]), {user.id: user for user in found}


def _directory_with_members(pk: uuid.UUID, read: FirstRead) -> Directory | None:
    """scim_directory_with for a "members" read: the directory LEFT JOIN LATERAL the group and users."""
    table = _directories.table()
    inner, params, group_width, user_width = _group_with_users_sql(read.user_ids or [], directory=f'{table}."id"')
    columns, width = _directories.columns()
    sql = f'SELECT {columns}, t.* FROM {table} LEFT JOIN LATERAL ({inner}) AS t ON TRUE WHERE {table}."id" = %s'  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, read.group_id, pk])
        rows = cursor.fetchall()
    if not rows:
        return None
    read.members = _group_with_users_build([row[width:] for row in rows], group_width)
    return _directories.build(rows[0][:width])


def scim_group_with_users(*, directory: Directory, group_id: Any, user_ids: list[uuid.UUID]) -> GroupWithUsers:
    """A group of this directory and the users of this directory among `user_ids`, in one query (a
    member PATCH needs both before it writes)."""
    pk = _pk(group_id)
    if pk is None:
        return None, {}
    sql, params, group_width, _ = _group_with_users_sql(user_ids, directory="%s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, _groups.param("id", directory.id), _groups.param("id", pk)])
        rows = cursor.fetchall()
    return _group_with_users_build(rows, group_width)


def scim_group_member_ids(*, group: DirectoryGroup) -> list[uuid.UUID]:
    return list(GroupMembership.objects.filter(group=group).values_list("user_id", flat=True))
