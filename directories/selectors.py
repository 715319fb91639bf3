"""Reads on directories, users and groups, always scoped by directory or by tenant + product."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Count, Q, QuerySet

from directories.models import Directory, DirectoryGroup, DirectoryUser


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        return None


def directory_get(*, directory_id: Any) -> Directory | None:
    """A directory by id; None for an unknown id or one that is not a UUID at all."""
    pk = _uuid(directory_id)
    return None if pk is None else Directory.objects.filter(pk=pk).first()


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
    return qs.order_by("created_at", "id")


def directory_list_with_counts(**filters: Any) -> QuerySet[Directory]:
    return directory_list(**filters).annotate(
        user_count=Count("users", distinct=True), group_count=Count("groups", distinct=True)
    )


def directory_users(*, directory: Directory) -> QuerySet[DirectoryUser]:
    return DirectoryUser.objects.filter(directory=directory).order_by("created_at", "id")


def directory_groups(*, directory: Directory) -> QuerySet[DirectoryGroup]:
    return DirectoryGroup.objects.filter(directory=directory).order_by("created_at", "id")


def directory_user_get(*, directory: Directory, user_id: Any) -> DirectoryUser | None:
    pk = _uuid(user_id)
    return None if pk is None else DirectoryUser.objects.filter(directory=directory, pk=pk).first()


def directory_group_get(*, directory: Directory, group_id: Any) -> DirectoryGroup | None:
    pk = _uuid(group_id)
    return None if pk is None else DirectoryGroup.objects.filter(directory=directory, pk=pk).first()
