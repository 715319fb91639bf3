"""Reads for the SCIM surface, always scoped by directory."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Q, UniqueConstraint

from core.rows import Extra, RowReader, rows_cursor
from directories.guard.selectors import held_deleted, held_latest, held_view
from directories.models import (
    Directory,
    DirectoryGroup,
    DirectoryUser,
    GroupMembership,
    HeldChangeKind,
    ScimUser,
)
from directories.pages import UsersPage
from directories.selectors import directory_groups, directory_users, page_rows
from scim.resources import member_item

_users = RowReader(DirectoryUser)
_groups = RowReader(DirectoryGroup)
# What a SCIM user resource is made of (scim.resources.user_resource); list pages read only these.
user_docs = RowReader(DirectoryUser, fields=("id", "directory_id", "raw", "created_at", "updated_at"))
# What a SCIM group resource is made of (scim.resources.group_resource; members come from memberships).
_GROUP_DOCS = ("id", "directory_id", "display_name", "raw", "created_at", "updated_at")
_BY_ID = '{table}."directory_id" = %s AND {table}."id" = %s'


@dataclass(frozen=True)
class Equality:
    """A whole filter that is one equality on an indexed column (`column = value`): the pages below answer
    it with fixed SQL (scim.storage.query.filter.filter_plan makes one)."""

    column: str
    value: str

    def q(self) -> Q:
        return Q(**{self.column: self.value})


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


# --- the identity provider's view while the deprovision guard holds changes (contract §4.2) ---------------


def scim_user_shown(user: DirectoryUser | None) -> DirectoryUser | None:
    """`user` as the SCIM surface shows it: its row, or, when it has changes held, its last held change
    (None when that is a delete: gone for the identity provider). One more query for a held user only."""
    if user is None or not user.held:
        return user
    change = held_latest(user=user)
    if change is None:
        return user
    if change.change == HeldChangeKind.DELETE:
        return None
    return held_view(user=user, change=change)


def holds_changes(directory: Directory) -> bool:
    """Whether the directory holds changes: then its SCIM lists read `ScimUser`, the users as the identity
    provider sees them (known from the directory's row, read with the authentication: nothing to ask)."""
    return directory.guard_tripped_at is not None


_overlay_readers: dict[tuple[Extra, ...], RowReader[ScimUser]] = {}


def _overlay_reader(reader: RowReader[Any]) -> RowReader[ScimUser]:
    """`reader`'s columns and computed columns, read from the view of held users (`ScimUser`); one per
    set of computed columns, kept like the readers themselves."""
    found = _overlay_readers.get(reader.extras)
    if found is None:
        found = _overlay_readers[reader.extras] = RowReader(ScimUser, fields=user_docs.fields, extras=reader.extras)
    return found


class FirstRead:
    """A read by keys taken straight from the request's URL, which comes with the directory lookup of the
    authentication (scim.storage: one round trip for both on PostgreSQL; its rows are used only once
    the secret has been checked). `kind` is "user" (by id) or "users" (an unfiltered page); `groups`:
    the users' groups are wanted too."""

    __slots__ = ("count", "groups", "kind", "page", "rows", "start_index", "user_id")

    def __init__(
        self,
        kind: str,
        *,
        user_id: uuid.UUID | None = None,
        start_index: int = 1,
        count: int = 0,
        groups: bool = False,
    ) -> None:
        self.kind, self.user_id, self.start_index, self.count = kind, user_id, start_index, count
        self.groups = groups
        self.rows: list[Any] | None = None  # "user": set by the store when it read them with the directory
        self.page: UsersPage | None = None  # "users": likewise

    def matches(self, kind: str, **values: Any) -> bool:
        """Whether this is the read the handler is about to make (`rows` may still be None: the database
        could not fetch it with the directory, and the handler reads it itself)."""
        return self.kind == kind and all(getattr(self, k) == v for k, v in values.items())


def _page(
    qs: Any,
    *,
    start_index: int,
    count: int,
    order: list[Any] | None = None,
    fields: tuple[str, ...] | None = None,
    total: int | None = None,
) -> tuple[int, list[Any]]:
    """A page of `qs` with its total (`total` when the caller knows it); `fields`: only those are read."""
    if count == 0:
        return qs.count() if total is None else total, []
    # Deferred join: the OFFSET walks an index of ids only, the full rows are read for this page only.
    rows = page_rows(qs, offset=start_index - 1, limit=count, fields=fields, **({"order": order} if order else {}))
    if total is not None:
        return total, rows
    if start_index == 1 and len(rows) < count:
        return len(rows), rows  # the whole result fits in this page: no COUNT query needed
    return qs.count(), rows


_unique_columns: dict[type[Any], frozenset[str]] = {}


def _unique_per_directory(model: type[Any]) -> frozenset[str]:
    """The columns no two rows of one directory share in `model`'s table (a unique constraint on the
    directory and that field alone, unconditional); none for a view such as `ScimUser`, which has no
    constraints."""
    found = _unique_columns.get(model)
    if found is None:
        meta = model._meta
        found = frozenset(
            meta.get_field(c.fields[1]).column
            for c in meta.constraints
            if isinstance(c, UniqueConstraint)
            and len(c.fields) == 2
            and c.fields[0] == "directory"
            and c.condition is None
            and not c.expressions
        )
        _unique_columns[model] = found
    return found


def _page_fixed(
    reader: RowReader[Any],
    *,
    directory: Directory,
    equality: Equality | None,
    start_index: int,
    count: int,
) -> tuple[int, list[Any]]:
    """A page of the directory's rows, all of them or those whose `equality.column` equals
    `equality.value`: fixed SQL, no QuerySet compiled (kept for speed: bench/README.md, "Code kept for
    speed", "Fixed SQL for hot lookups")."""
    where = '{table}."directory_id" = %s'
    params = [reader.param("id", directory.id)]
    if equality is not None:
        where += f' AND {{table}}."{equality.column}" = %s'
        params.append(equality.value)
    order = ' ORDER BY {table}."created_at", {table}."id"'
    if equality is not None and equality.column in _unique_per_directory(reader.model):
        # At most one row: read it whole and page in Python. Without LIMIT and OFFSET parameters,
        # PostgreSQL keeps one generic plan for the statement; with them it planned every execution anew
        # (the LIMIT's value made each custom plan look cheaper). Kept for speed: bench/README.md, "Code
        # kept for speed", "Fixed SQL for hot lookups".
        rows = reader.fetch(reader.sql(where), params)
        return len(rows), rows[start_index - 1 : start_index - 1 + count]
    if count:
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
    order: list[Any] | None = None,
    reader: RowReader[DirectoryUser] = user_docs,
    total: int | None = None,
) -> tuple[int, list[DirectoryUser]]:
    """The portable page of users (scim.storage.postgres reads unfiltered pages its own way), in
    (created, id) order or in `order` (scim.storage.query.sort). `reader`: reads the unfiltered page and the
    page of one equality (a store's reader may bring the users' groups along); `total`: the number of
    matching users when the caller knows it (no COUNT). Only what a SCIM resource is made of is read.

    While the directory holds changes, the page is of `ScimUser` (`holds_changes`): the filter, the order
    and the total apply to the identity provider's view, and `total` is not used."""
    overlay = holds_changes(directory)
    if overlay:
        reader, total = _overlay_reader(reader), None
    if not order and (condition is None or isinstance(condition, Equality)):
        return _page_fixed(reader, directory=directory, equality=condition, start_index=start_index, count=count)
    qs = ScimUser.objects.filter(directory=directory) if overlay else directory_users(directory=directory)
    if condition is not None:
        qs = qs.filter(condition.q() if isinstance(condition, Equality) else condition)
    return _page(qs, start_index=start_index, count=count, order=order, fields=user_docs.fields, total=total)


def scim_groups_page(
    *,
    directory: Directory,
    condition: Q | Equality | None,
    start_index: int,
    count: int,
    order: list[Any] | None = None,
) -> tuple[int, list[DirectoryGroup]]:
    if not order and isinstance(condition, Equality):
        return _page_fixed(_groups, directory=directory, equality=condition, start_index=start_index, count=count)
    qs = directory_groups(directory=directory)
    if condition is not None:
        qs = qs.filter(condition.q() if isinstance(condition, Equality) else condition)
    return _page(qs, start_index=start_index, count=count, order=order, fields=_GROUP_DOCS)


def scim_group_members(*, directory: Directory, group_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """Members of several groups in one query, as SCIM member items, in membership order."""
    result: dict[uuid.UUID, list[dict[str, Any]]] = {gid: [] for gid in group_ids}
    if not group_ids:
        return result
    rows = GroupMembership.objects.filter(group_id__in=group_ids)
    if holds_changes(directory):
        # A user whose deletion is held is gone for the identity provider, and so are its memberships.
        rows = rows.exclude(user_id__in=held_deleted(directory=directory))
    rows = rows.order_by("id").values_list("group_id", "user_id")
    for group_id, user_id in rows:
        result[group_id].append(member_item(directory.id, user_id))
    return result


def scim_directory_users_by_id(*, directory: Directory, user_ids: list[uuid.UUID]) -> dict[uuid.UUID, DirectoryUser]:
    """Users of this directory among `user_ids`."""
    if not user_ids:
        return {}
    return {row.id: row for row in DirectoryUser.objects.filter(directory=directory, pk__in=user_ids)}


def scim_group_with_users(*, directory: Directory, group_id: Any, user_ids: list[uuid.UUID]) -> GroupWithUsers:
    """A group of this directory and the users of this directory among `user_ids`, in one query (a
    member PATCH needs both before it writes): the group's row joined with each user found (none: one
    row of NULL user columns)."""
    pk = _pk(group_id)
    if pk is None:
        return None, {}
    group_columns, group_width = _groups.columns()
    user_columns, _ = _users.columns()
    groups, users = _groups.table(), _users.table()
    marks = ", ".join(["%s"] * len(user_ids)) or "NULL"
    sql = (
        f"SELECT {group_columns}, {user_columns} FROM {groups} LEFT JOIN {users} "  # noqa: S608
        f'ON {users}."directory_id" = {groups}."directory_id" AND {users}."id" IN ({marks}) '
        f'WHERE {groups}."directory_id" = %s AND {groups}."id" = %s'
    )
    params = [*(_users.param("id", u) for u in user_ids), _groups.param("id", directory.id), _groups.param("id", pk)]
    with rows_cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows or rows[0][0] is None:
        return None, {}
    found = _users.build_many(row[group_width:] for row in rows if row[group_width] is not None)
    return _groups.build(rows[0][:group_width]), {user.id: user for user in found}


def scim_group_member_ids(*, group: DirectoryGroup) -> list[uuid.UUID]:
    return list(GroupMembership.objects.filter(group=group).values_list("user_id", flat=True))
