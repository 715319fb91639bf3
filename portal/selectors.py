"""Reads for the portal's lists. They build on directories.selectors, so every query stays scoped."""

from __future__ import annotations

import uuid

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from directories.activity.selectors import with_health_state
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from directories.selectors import directory_groups, directory_list, directory_users


def _count_of(model: type, **outer: str) -> Coalesce:
    """A correlated COUNT(*) subquery. Two Count() joins on users and groups would multiply rows
    (users x groups per directory) before DISTINCT; one subquery each stays linear."""
    counted = (
        model.objects.filter(**{k: OuterRef(v) for k, v in outer.items()})
        .order_by()
        .values(*outer.keys())
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def portal_directory_list(
    *, search: str = "", tenant: str = "", product: str = "", health: str = ""
) -> QuerySet[Directory]:
    """All directories, newest first, with user and group counts and their health state (`health_state`);
    `search` matches name, tenant or product, `health` keeps one health state."""
    qs = directory_list(tenant=tenant or None, product=product or None, search=search or None)
    return (
        with_health_state(qs, state=health or None)
        .annotate(
            user_count=_count_of(DirectoryUser, directory="pk"),
            group_count=_count_of(DirectoryGroup, directory="pk"),
        )
        .order_by("-created_at", "-id")
    )


def portal_user_list(*, directory: Directory, search: str = "") -> QuerySet[DirectoryUser]:
    qs = directory_users(directory=directory)
    if search:
        qs = qs.filter(
            Q(user_name__icontains=search)
            | Q(email__icontains=search)
            | Q(first_name__icontains=search)
            | Q(last_name__icontains=search)
            | Q(external_id__icontains=search)
        )
    return qs


def portal_group_list(*, directory: Directory, search: str = "") -> QuerySet[DirectoryGroup]:
    qs = directory_groups(directory=directory).annotate(member_count=_count_of(GroupMembership, group="pk"))
    if search:
        qs = qs.filter(Q(display_name__icontains=search) | Q(external_id__icontains=search))
    return qs


def portal_user_groups(*, directory: Directory, user: DirectoryUser) -> QuerySet[DirectoryGroup]:
    return directory_groups(directory=directory).filter(memberships__user=user)


def portal_group_members(*, directory: Directory, group: DirectoryGroup) -> QuerySet[DirectoryUser]:
    return directory_users(directory=directory).filter(memberships__group=group)


def directory_names(*, ids: set[uuid.UUID]) -> dict[uuid.UUID, str]:
    """Names of the given directories (those that still exist), in one query."""
    if not ids:
        return {}
    return dict(Directory.objects.filter(pk__in=ids).values_list("id", "name"))
