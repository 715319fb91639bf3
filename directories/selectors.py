"""Reads on directories, users and groups, always scoped by directory or by tenant + product."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from core.comparison import comparison_key
from core.ids import uuid_or_none
from core.rows import RowReader
from directories import pages
from directories.models import ApiKey, Directory, DirectoryGroup, DirectoryUser, GroupMembership, api_key_hash

_directories = RowReader(Directory)
# The order of every list of users and groups: it never changes for a row, so pages do not shift.
OLDEST_FIRST = ("created_at", "id")
# What the REST lists render (directories.rendering.user_data and group_data).
_REST_USER_FIELDS = (
    "id",
    "directory_id",
    "first_name",
    "last_name",
    "email",
    "active",
    "raw",
    "created_at",
    "updated_at",
)
_REST_GROUP_FIELDS = ("id", "directory_id", "display_name", "raw", "created_at", "updated_at")
_rest_users = RowReader(DirectoryUser, fields=_REST_USER_FIELDS)


def directory_get(*, directory_id: Any, tenant: str | None = None, product: str | None = None) -> Directory | None:
    """A directory by id; None for an unknown id or one that is not a UUID at all. Given `tenant`
    and/or `product`, a directory of another tenant or product is None too, exactly like a missing one."""
    pk = uuid_or_none(directory_id)
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
    pk = uuid_or_none(user_id)
    return None if pk is None else DirectoryUser.objects.filter(directory=directory, pk=pk).first()


def directory_user_find(*, directory: Directory, ref: str) -> DirectoryUser | None:
    """A user of this directory by id, or else by userName (compared case-insensitively)."""
    ref = (ref or "").strip()
    if not ref:
        return None
    user = directory_user_get(directory=directory, user_id=ref)
    if user is None:
        user = DirectoryUser.objects.filter(directory=directory, user_name_key=comparison_key(ref)).first()
    return user


def directory_group_get(*, directory: Directory, group_id: Any) -> DirectoryGroup | None:
    pk = uuid_or_none(group_id)
    return None if pk is None else DirectoryGroup.objects.filter(directory=directory, pk=pk).first()


def _tenant_directory_ids(*, tenant: str, product: str, directory_id: Any = None) -> QuerySet[Directory]:
    """Ids of tenant + product's directories (or of that one, if it is theirs), as a subquery.

    Filtering `directory_id IN (…)` instead of joining on the directory's tenant and product lets
    PostgreSQL read only these directories' rows through `(directory, created_at, id)` instead of every
    row of the table (kept for speed: bench/README.md, "Code kept for speed", "REST pages by directory id").
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
    walks the OFFSET), the outer one fetches the full rows of that page only (kept for speed:
    bench/README.md, "Code kept for speed", "Deferred join for deep pages"). Same rows, same order as
    `qs.order_by(*order).only(*fields)[offset:offset + limit]`.
    """
    ids = qs.order_by(*order).values("pk")[offset : offset + limit]
    rows = qs.model._default_manager.filter(pk__in=ids).order_by(*order)
    return list(rows.only(*fields) if fields else rows)


def after_shown_instant(bound: datetime) -> datetime | None:
    """The first stored instant whose shown time (milliseconds, core.timefmt) is strictly after `bound`:
    the start of the millisecond after the one `bound` falls in. None when that is past what a date-time
    can hold (nothing is after it).

    Every surface shows times truncated to the millisecond, so an application that passes the newest
    `updated_at` it saw as `updatedAfter` must not get that user back, although the stored instant has
    microseconds past the shown one. The comparison stays a plain range on the column (no function of
    it), so an index on it could serve the filter.
    """
    try:
        return bound.replace(microsecond=bound.microsecond - bound.microsecond % 1000) + timedelta(milliseconds=1)
    except OverflowError:
        return None


@dataclass(frozen=True)
class UserFilters:
    """The REST user list's filters (contract §3); None: not filtered on."""

    active: bool | None = None
    email: str | None = None  # compared in comparison form (case-insensitive)
    group_id: uuid.UUID | None = None
    updated_after: datetime | None = None

    def q(self) -> Q:
        q = Q()
        if self.active is not None:
            q &= Q(active=self.active)
        if self.email is not None:
            q &= Q(email_key=comparison_key(self.email))
        if self.group_id is not None:
            q &= Q(Exists(GroupMembership.objects.filter(user=OuterRef("pk"), group_id=self.group_id)))
        if self.updated_after is not None:
            after = after_shown_instant(self.updated_after)
            q &= Q(updated_at__gte=after) if after is not None else Q(pk__in=[])
        return q

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.active, self.email, self.group_id, self.updated_after))


def tenant_users_page(
    *, directories: Sequence[Directory], offset: int, limit: int, filters: UserFilters | None = None
) -> list[DirectoryUser]:
    """`limit` users of `directories` (a tenant and product's, read by the caller, or the one of them it
    named) from `offset`, oldest first, matching `filters`.

    On PostgreSQL, the unfiltered users of one directory come from directories.pages and cost the same
    at any offset; otherwise the OFFSET walks the (directory, created_at, id) index (one statement, see
    page_rows). The directories are named by id, not by a subquery on tenant and product, so that the
    planner sees one directory's rows and walks them in order: a `group` filter then probes the
    membership index user by user instead of joining every user (kept for speed: bench/README.md, "Code
    kept for speed", "REST pages by directory id").
    """
    ids = [directory.id for directory in directories]
    if not ids:
        return []
    if not filters and connection.vendor == "postgresql" and len(ids) == 1:
        page = pages.directory_users_page(directory_id=ids[0], start_index=offset + 1, count=limit, reader=_rest_users)
        return page[1]
    users = DirectoryUser.objects.filter(**({"directory_id": ids[0]} if len(ids) == 1 else {"directory_id__in": ids}))
    if filters:
        users = users.filter(filters.q())
    return page_rows(users.order_by(*OLDEST_FIRST), offset=offset, limit=limit, fields=_REST_USER_FIELDS)


def tenant_groups(*, tenant: str, product: str, directory_id: Any = None) -> QuerySet[DirectoryGroup]:
    return DirectoryGroup.objects.filter(
        directory_id__in=_tenant_directory_ids(tenant=tenant, product=product, directory_id=directory_id)
    ).order_by(*OLDEST_FIRST)


def tenant_groups_page(
    *,
    tenant: str,
    product: str,
    directory_id: uuid.UUID | None,
    offset: int,
    limit: int,
    name: str | None = None,
) -> list[DirectoryGroup]:
    """`limit` groups of tenant + product (or of their directory `directory_id`) from `offset`, oldest
    first, with the fields the REST groups list renders; `name`: only groups of that displayName
    (compared case-insensitively)."""
    groups = tenant_groups(tenant=tenant, product=product, directory_id=directory_id)
    if name is not None:
        groups = groups.filter(display_name_key=comparison_key(name))
    return page_rows(groups, offset=offset, limit=limit, fields=_REST_GROUP_FIELDS)


def user_groups_page(*, user: DirectoryUser, offset: int, limit: int) -> list[DirectoryGroup]:
    """`limit` of the groups `user` is a member of, from `offset`, oldest group first."""
    groups = DirectoryGroup.objects.filter(directory_id=user.directory_id, memberships__user=user)
    return page_rows(groups, offset=offset, limit=limit, fields=_REST_GROUP_FIELDS)


def directories_by_id(*, ids: set[uuid.UUID]) -> dict[uuid.UUID, Directory]:
    """The directories among `ids`, by id, in one query (the callers' rows are scoped already)."""
    if not ids:
        return {}
    return {d.id: d for d in Directory.objects.filter(pk__in=ids)}


def tenant_user_get(*, tenant: str, product: str, user_id: Any) -> DirectoryUser | None:
    """A user of tenant + product; another tenant's user is None exactly like a missing one."""
    pk = uuid_or_none(user_id)
    if pk is None:
        return None
    # The directory comes along (a join): rendering a user reads its attribute and role maps.
    users = DirectoryUser.objects.select_related("directory")
    return users.filter(pk=pk, directory__tenant=tenant, directory__product=product).first()


def tenant_group_get(*, tenant: str, product: str, group_id: Any) -> DirectoryGroup | None:
    pk = uuid_or_none(group_id)
    if pk is None:
        return None
    return DirectoryGroup.objects.filter(pk=pk, directory__tenant=tenant, directory__product=product).first()


def user_groups_attach(*, users: Sequence[DirectoryUser]) -> None:
    """Set `member_of` on each of `users` that lacks it, in one query for all of them: their groups as
    (id, displayName), in the order they joined. The users are already scoped by the caller; a
    membership never crosses directories (the services check both sides)."""
    missing = {user.id: user for user in users if user.member_of is None}
    if not missing:
        return
    for user in missing.values():
        user.member_of = []
    rows = (
        GroupMembership.objects.filter(user_id__in=list(missing))
        .order_by("id")
        .values_list("user_id", "group_id", "group__display_name")
    )
    for user_id, group_id, name in rows:
        missing[user_id].member_of.append((group_id, name))  # type: ignore[union-attr]


def directory_groups_with_members(
    *, directory: Directory, chunk: int = 500
) -> Iterator[tuple[DirectoryGroup, list[uuid.UUID]]]:
    """Every group of the directory, oldest first, with its members' ids in the order they joined: one
    query per `chunk` groups and one for their memberships, so memory stays flat on any size."""
    last: tuple[Any, Any] | None = None
    while True:
        groups = directory_groups(directory=directory)
        if last is not None:
            groups = groups.filter(Q(created_at__gt=last[0]) | Q(created_at=last[0], id__gt=last[1]))
        page = list(groups[:chunk])
        if not page:
            return
        members: dict[uuid.UUID, list[uuid.UUID]] = {group.id: [] for group in page}
        rows = GroupMembership.objects.filter(group_id__in=list(members)).order_by("id")
        for group_id, user_id in rows.values_list("group_id", "user_id"):
            members[group_id].append(user_id)
        for group in page:
            yield group, members[group.id]
        last = (page[-1].created_at, page[-1].id)


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
