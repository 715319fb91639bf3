"""Reads on directories, users and groups, always scoped by directory or by tenant + product."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.db import connection
from django.db.models import Count, Q, QuerySet

from core.rows import RowReader
from directories import pages
from directories.models import ApiKey, Directory, DirectoryGroup, DirectoryUser, GroupMembership, api_key_hash

_directories = RowReader(Directory)
# The order of every list of users and groups: it never changes for a row, so pages do not shift.
OLDEST_FIRST = ("created_at", "id")
# What the REST lists render (directories.rendering.user_data and group_data).
_REST_USER_FIELDS = ("id", "first_name", "last_name", "email", "active", "raw")
_REST_GROUP_FIELDS = ("id", "display_name", "raw")
_rest_users = RowReader(DirectoryUser, fields=(*_REST_USER_FIELDS, "created_at"))


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        return None


def directory_get(*, directory_id: Any, tenant: str | None = None, product: str | None = None) -> Directory | None:
    """A directory by id; None for an unknown id or one that is not a UUID at all. Given `tenant`
    and/or `product`, a directory of another tenant or product is None too, exactly like a missing one."""
    pk = _uuid(directory_id)
    if pk is None:
        return None
    # Every SCIM request starts here: a fixed SELECT instead of a compiled QuerySet (core/rows.py).
    where = '{table}."id" = %s'
    params = [_directories.param("id", pk)]
    for column, value in (("tenant", tenant), ("product", product)):
        if value is not None:
            where += f' AND {{table}}."{column}" = %s'
            params.append(_directories.param(column, value))
    return _directories.first(_directories.sql(where), params)


def directory_list(
    *, tenant: str | None = None, product: str | None = None, search: str | None = None
) -> QuerySet[Directory]:
    qs = Directory.objects.all()
    if tenant:
        qs = qs.filter(tenant=tenant)
    if product:
        qs = qs.filter(product=product)
    if search:
        qs = qs.filter(Q(name__icontains=search) | Q(tenant__icontains=search) | Q(product__icontains=search))
    # Each Directory renders its `health` (directories.rendering): its row comes in the same query.
    return qs.select_related("scim_health").order_by("created_at", "id")


def directory_list_with_counts(**filters: Any) -> QuerySet[Directory]:
    return directory_list(**filters).annotate(
        user_count=Count("users", distinct=True), group_count=Count("groups", distinct=True)
    )


def directory_users(*, directory: Directory) -> QuerySet[DirectoryUser]:
    return DirectoryUser.objects.filter(directory=directory).order_by(*OLDEST_FIRST)


def directory_groups(*, directory: Directory) -> QuerySet[DirectoryGroup]:
    return DirectoryGroup.objects.filter(directory=directory).order_by(*OLDEST_FIRST)


def directory_user_get(*, directory: Directory, user_id: Any) -> DirectoryUser | None:
    pk = _uuid(user_id)
    return None if pk is None else DirectoryUser.objects.filter(directory=directory, pk=pk).first()


def directory_group_get(*, directory: Directory, group_id: Any) -> DirectoryGroup | None:
    pk = _uuid(group_id)
    return None if pk is None else DirectoryGroup.objects.filter(directory=directory, pk=pk).first()


def _tenant_directory_ids(*, tenant: str, product: str, directory_id: Any = None) -> QuerySet[Directory]:
    """Ids of tenant + product's directories (or of that one, if it is theirs), as a subquery.

    Filtering `directory_id IN (…)` instead of joining on the directory's tenant and product lets
    PostgreSQL read only these directories' rows through `(directory, created_at, id)` instead of every
    row of the table (bench/README.md, Scale: 187 ms for a deep REST page at 100k users).
    """
    qs = Directory.objects.filter(tenant=tenant, product=product)
    if directory_id is not None:
        qs = qs.filter(pk=directory_id)
    return qs.values("id")


def page_rows(
    qs: QuerySet[Any],
    *,
    offset: int,
    limit: int,
    fields: Sequence[str] | None = None,
    order: Sequence[str] = OLDEST_FIRST,
) -> list[Any]:
    """Rows `offset … offset + limit` of `qs` in `order`, as a deferred join, in one query; only
    `fields` are loaded (all concrete fields when None).

    The inner query selects only ids (an index-only scan of the `(directory, created_at, id)` index
    walks the OFFSET), the outer one fetches the full rows of that page only: at the end of a 100k
    directory 83 → 39 ms in EXPLAIN ANALYZE (bench/README.md, Scale). Same rows, same order as
    `qs.order_by(*order).only(*fields)[offset:offset + limit]`.
    """
    ids = qs.order_by(*order).values("pk")[offset : offset + limit]
    rows = qs.model._default_manager.filter(pk__in=ids).order_by(*order)
    return list(rows.only(*fields) if fields else rows)


def tenant_users_page(
    *, tenant: str, product: str, directory_id: uuid.UUID | None, offset: int, limit: int
) -> list[DirectoryUser]:
    """`limit` users of tenant + product (or of their directory `directory_id`) from `offset`, oldest first.

    On PostgreSQL, when the users are those of one directory (named, or the tenant's only one), the
    page comes from directories.pages and costs the same at any offset; otherwise the OFFSET walks
    the index of every directory of the tenant (one statement, see page_rows). Without a named
    directory that takes one more query to find the tenant's directories, so it is done for deep
    pages only.
    """
    if connection.vendor == "postgresql" and (directory_id is not None or offset >= pages.MARK_EVERY):
        ids = (
            [directory_id]
            if directory_id is not None
            else list(_tenant_directory_ids(tenant=tenant, product=product).values_list("id", flat=True)[:2])
        )
        if not ids:
            return []
        if len(ids) == 1:
            return pages.directory_users_page(
                directory_id=ids[0], start_index=offset + 1, count=limit, reader=_rest_users
            )[1]
    users = tenant_users(tenant=tenant, product=product, directory_id=directory_id)
    return page_rows(users, offset=offset, limit=limit, fields=_REST_USER_FIELDS)


def tenant_users(*, tenant: str, product: str, directory_id: Any = None) -> QuerySet[DirectoryUser]:
    """Users of every directory of tenant + product (or of one of them), oldest first.

    The order (created_at, id) never changes for a row, so pages do not shift while a client walks them.
    """
    return DirectoryUser.objects.filter(
        directory_id__in=_tenant_directory_ids(tenant=tenant, product=product, directory_id=directory_id)
    ).order_by(*OLDEST_FIRST)


def tenant_groups(*, tenant: str, product: str, directory_id: Any = None) -> QuerySet[DirectoryGroup]:
    return DirectoryGroup.objects.filter(
        directory_id__in=_tenant_directory_ids(tenant=tenant, product=product, directory_id=directory_id)
    ).order_by(*OLDEST_FIRST)


def tenant_groups_page(
    *, tenant: str, product: str, directory_id: uuid.UUID | None, offset: int, limit: int
) -> list[DirectoryGroup]:
    """`limit` groups of tenant + product (or of their directory `directory_id`) from `offset`, oldest
    first, with the fields the REST groups list renders."""
    groups = tenant_groups(tenant=tenant, product=product, directory_id=directory_id)
    return page_rows(groups, offset=offset, limit=limit, fields=_REST_GROUP_FIELDS)


def tenant_user_get(*, tenant: str, product: str, user_id: Any) -> DirectoryUser | None:
    """A user of tenant + product; another tenant's user is None exactly like a missing one."""
    pk = _uuid(user_id)
    if pk is None:
        return None
    return DirectoryUser.objects.filter(pk=pk, directory__tenant=tenant, directory__product=product).first()


def tenant_group_get(*, tenant: str, product: str, group_id: Any) -> DirectoryGroup | None:
    pk = _uuid(group_id)
    if pk is None:
        return None
    return DirectoryGroup.objects.filter(pk=pk, directory__tenant=tenant, directory__product=product).first()


def group_member_ids(*, group: DirectoryGroup) -> list[uuid.UUID]:
    """Ids of the group's users, in the order they joined."""
    return list(GroupMembership.objects.filter(group=group).order_by("id").values_list("user_id", flat=True))


def api_key_find(*, ref: str) -> list[ApiKey]:
    """API keys matching a reference given on the command line: numeric id, prefix, or the full key."""
    ref = ref.strip()
    if not ref:
        return []
    if ref.isdigit():
        return list(ApiKey.objects.filter(pk=int(ref)))
    by_hash = list(ApiKey.objects.filter(key_hash=api_key_hash(ref)))
    if by_hash:
        return by_hash
    if len(ref) < 6:
        # "rk_" alone (or nearly) would name every key; a revoke must point at one on purpose.
        return []
    # The stored prefix is the key's first characters: a reference may be shorter (a start of the
    # prefix) or longer (the prefix plus more of the key), but must agree with it either way.
    candidates = ApiKey.objects.filter(prefix__startswith=ref[:10])
    return [row for row in candidates if ref.startswith(row.prefix) or row.prefix.startswith(ref)]


def api_key_list() -> QuerySet[ApiKey]:
    return ApiKey.objects.order_by("created_at", "id")
