"""Reads of the deprovision guard (contract §4.2), always scoped by directory: the held changes, the
identity provider's view of a held user, what the guard's state is made of; and the directory's guard
fields read under its row lock, which every write of the guard takes."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Count, Q, QuerySet

from core.rows import RowReader
from directories.guard import rules
from directories.guard.rules import guard_setting, window_since
from directories.models import Deprovision, Directory, DirectoryUser, HeldChange, HeldChangeKind

# The guard's fields of a directory, read under its row lock by fixed SQL: a deprovision reads them on every
# request of a wave.
_guard_fields = RowReader(Directory, fields=("id", "deprovision_guard", "guard_tripped_at", "guard_armed_at"))


def directory_guard_lock(directory: Directory) -> None:
    """Lock the directory's row (FOR NO KEY UPDATE; SQLite's write lock covers it) and refresh the guard's
    fields on `directory` from it: a PATCH or another request may have changed them since it was read.
    Every write of the guard takes it, after the rows of the users it changes (scim.storage.guard, and the
    resolutions of directories.guard.services)."""
    sql = _guard_fields.sql('{table}."id" = %s', lock="no_key_update")
    row = _guard_fields.first(sql, [_guard_fields.param("id", directory.id)])
    if row is not None:
        directory.deprovision_guard = row.deprovision_guard
        directory.guard_tripped_at, directory.guard_armed_at = row.guard_tripped_at, row.guard_armed_at


def held_changes(*, directory: Directory) -> QuerySet[HeldChange]:
    """The directory's held changes, in the order they were held (and are applied)."""
    return HeldChange.objects.filter(directory=directory).order_by("position")


def held_latest(*, user: DirectoryUser) -> HeldChange | None:
    """The user's last held change: the identity provider's view of it (None when nothing is held)."""
    return HeldChange.objects.filter(user_id=user.id, latest=True).first()


def held_view(*, user: DirectoryUser, change: HeldChange) -> DirectoryUser:
    """The user as the identity provider sees it after `change`: its row with the change's document, last
    modified when the change was held (what the identity provider was answered, ETag included). Not a
    row to save."""
    view = DirectoryUser(
        id=user.id,
        directory_id=user.directory_id,
        created_at=user.created_at,
        updated_at=change.held_at,
        held=True,
        **{name: getattr(change, name) for name in HeldChange.DOCUMENT},
    )
    view.member_of = user.member_of
    return view


def held_deleted(*, directory: Directory) -> QuerySet[HeldChange]:
    """The ids (`user_id`) of the directory's users whose deletion is held: gone for the identity provider."""
    return HeldChange.objects.filter(directory=directory, latest=True, change=HeldChangeKind.DELETE).values("user_id")


def held_deleted_ids(*, directory: Directory, user_ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """Those of `user_ids` whose deletion is held."""
    wanted = list(user_ids)
    if not wanted:
        return set()
    return {row["user_id"] for row in held_deleted(directory=directory).filter(user_id__in=wanted)}


def user_name_taken(*, directory: Directory, key: str, user_id: uuid.UUID) -> bool:
    """Whether a user other than `user_id` has the userName whose comparison form is `key`, in the
    application's view (its row) or in the identity provider's (a held change that renamed it)."""
    rows = DirectoryUser.objects.filter(directory=directory, user_name_key=key).exclude(pk=user_id)
    held = HeldChange.objects.filter(directory=directory, latest=True, user_name_key=key).exclude(user_id=user_id)
    return rows.exists() or held.exclude(change=HeldChangeKind.DELETE).exists()


def window_deprovisions(*, directory_id: uuid.UUID, since: datetime) -> int:
    """The deprovisions the guard let through after `since` (the window's start or the last re-arm)."""
    return Deprovision.objects.filter(directory_id=directory_id, at__gt=since).count()


@dataclass(frozen=True)
class GuardFacts:
    """What a directory's `guard` is made of besides its row: its held changes and its window's count."""

    held: int = 0
    window_deprovisions: int = 0


def guard_facts(directories: list[Directory]) -> dict[uuid.UUID, GuardFacts]:
    """The facts of each of `directories` now, in two queries for any number of them (a page of the list)."""
    if not directories:
        return {}
    now = rules.now()
    held: dict[Any, int] = {}
    tripped = [d.id for d in directories if d.guard_tripped_at is not None]
    if tripped:
        rows = HeldChange.objects.filter(directory_id__in=tripped).values("directory_id").annotate(n=Count("id"))
        held = {row["directory_id"]: row["n"] for row in rows}
    # Each directory's own window: one condition per directory, read together.
    windows = [
        Q(directory_id=d.id, at__gt=window_since(guard_setting(d.deprovision_guard), now, d.guard_armed_at))
        for d in directories
    ]
    counted = Deprovision.objects.filter(reduce(or_, windows)).values("directory_id").annotate(n=Count("id")).order_by()
    counts = {row["directory_id"]: row["n"] for row in counted}
    return {d.id: GuardFacts(held=held.get(d.id, 0), window_deprovisions=counts.get(d.id, 0)) for d in directories}


def guard_tripped_directories() -> QuerySet[Directory]:
    """Every directory holding changes (its guard tripped), the earliest trip first, with `held_count`:
    what `manage.py doctor` and `/metrics` report."""
    return (
        Directory.objects.filter(guard_tripped_at__isnull=False)
        .annotate(held_count=Count("held_changes"))
        .order_by("guard_tripped_at", "id")
    )
