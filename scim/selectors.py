"""Reads for the SCIM surface, always scoped by directory."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import connection
from django.db.models import Q

from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from directories.rows import RowReader
from directories.selectors import directory_groups, directory_users, page_rows
from scim.filter_query import Equality
from scim.rendering import member_item

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


def _page(qs: Any, *, start_index: int, count: int) -> tuple[int, list[Any]]:
    if count == 0:
        return qs.count(), []
    # Deferred join: the OFFSET walks an index of ids only, the full rows are read for this page only.
    rows = page_rows(qs, offset=start_index - 1, limit=count)
    if start_index == 1 and len(rows) < count:
        return len(rows), rows  # the whole result fits in this page: no COUNT query needed
    return qs.count(), rows


def _page_fixed(
    reader: RowReader[Any], *, directory: Directory, equality: Equality | None, start_index: int, count: int
) -> tuple[int, list[Any]]:
    """A page of the directory's rows, all of them or those whose `equality.column` equals
    `equality.value`: fixed SQL, no QuerySet compiled (bench/README.md)."""
    where = '{table}."directory_id" = %s'
    params = [reader.param("id", directory.id)]
    if equality is not None:
        where += f' AND {{table}}."{equality.column}" = %s'
        params.append(equality.value)
    order = ' ORDER BY {table}."created_at", {table}."id"'
    rows = []
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
    with connection.cursor() as cursor:
        cursor.execute(reader.count_sql(where), params)
        return cursor.fetchone()[0], rows


def scim_users_page(
    *, directory: Directory, condition: Q | Equality | None, start_index: int, count: int
) -> tuple[int, list[DirectoryUser]]:
    if condition is None or isinstance(condition, Equality):
        return _page_fixed(_user_docs, directory=directory, equality=condition, start_index=start_index, count=count)
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


def scim_group_member_ids(*, group: DirectoryGroup) -> list[uuid.UUID]:
    return list(GroupMembership.objects.filter(group=group).values_list("user_id", flat=True))
