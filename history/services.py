"""Folding a directory's changes feed (contract §5.1) into its history rows (contract §5.3), and keeping
those rows to what retention still answers for.

The fold runs off the identity provider's request: every FOLD_INTERVAL seconds from celery beat
(`history.fold`), before each history read (`history_catch_up`), and before the feed's purge deletes
events (history.apps hands `history_fold_directory_id` to webhooks.services.sweeping). Two folds of one
directory never interleave: each batch is folded under a row lock on the directory's HistoryState, and
reads its events again after taking it.

Events carry whole objects (contract §5), so folding one is plain replacement: a user or group event
ends the version valid so far and starts the one it carries; membership events open and close spans; a
deleted user or group also ends every span it was part of (deleting a user sends `user.deleted` only,
scim.services). Held changes (contract §4.2) become events only once approved, so history shows them
from their approval on, as the REST API did.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import Min
from django.utils import timezone

from core.rows import RowWriter
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from directories.rendering import group_data, user_stored_data
from history.models import OPEN, GroupVersion, HistoryPoint, HistoryState, MembershipSpan, UserVersion
from webhooks.feed import FeedExpired, feed_head, feed_read
from webhooks.models import EventSequence

logger = logging.getLogger("roster.history")

FOLD_BATCH = 1000
# What a version keeps of its event's `data`: not what is computed with today's maps (contract §5.3), nor
# the `group` of a membership event.
_COMPUTED = ("custom_attributes", "roles", "group")
# The event_type of the point a history starts from when the feed had already lost its beginning.
SEEDED = "history.seeded"


@dataclass(slots=True)
class _Event:
    sequence: int
    created_at: datetime
    event_type: str
    data: dict[str, Any]


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text)


_FOLDED = frozenset(
    "user.created user.updated user.deleted group.created group.updated group.deleted group.user_added "
    "group.user_removed".split()
)


def _foldable(event_type: str, data: Any) -> bool:
    """An event of the eight that change users, groups and memberships (contract §5), whose ids read as
    ids. Anything else the feed holds is kept as a point of history and changes nothing."""
    if event_type not in _FOLDED or not isinstance(data, dict):
        return False
    try:
        uuid.UUID(str(data["id"]))
        if "group" in data:
            uuid.UUID(str(data["group"]["id"]))
        else:
            datetime.fromisoformat(str(data["created_at"]))
    except (KeyError, TypeError, ValueError):
        return False
    return True


def _kept(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key not in _COMPUTED}


class _Batch:
    """One batch of events folded in memory: the rows still open that the batch touches, read once, the
    rows it makes and the rows whose `valid_to` it sets, written at the end in bulk."""

    def __init__(self, directory: Directory, events: list[_Event], points: list[_Event]) -> None:
        self.directory = directory
        self.events = events
        self.points = points
        self.closed: dict[tuple[type, int], Any] = {}
        self.new: dict[type, list[Any]] = defaultdict(list)
        user_ids = {uuid.UUID(e.data["id"]) for e in events if e.event_type.startswith("user.")}
        group_ids = {
            uuid.UUID(e.data["id"]) for e in events if e.event_type.startswith("group.") and "group" not in e.data
        }
        self.users: dict[uuid.UUID, UserVersion] = {
            row.user_id: row
            for row in UserVersion.objects.filter(directory=directory, user_id__in=user_ids, valid_to=OPEN)
        }
        self.groups: dict[uuid.UUID, GroupVersion] = {
            row.group_id: row
            for row in GroupVersion.objects.filter(directory=directory, group_id__in=group_ids, valid_to=OPEN)
        }
        self.spans: dict[tuple[uuid.UUID, uuid.UUID], MembershipSpan] = {}
        self.by_user: dict[uuid.UUID, set[uuid.UUID]] = defaultdict(set)
        self.by_group: dict[uuid.UUID, set[uuid.UUID]] = defaultdict(set)
        member_groups, member_users, gone_users, gone_groups = set(), set(), set(), set()
        for e in events:
            if "group" in e.data:
                member_groups.add(uuid.UUID(e.data["group"]["id"]))
                member_users.add(uuid.UUID(e.data["id"]))
            elif e.event_type == "user.deleted":
                gone_users.add(uuid.UUID(e.data["id"]))
            elif e.event_type == "group.deleted":
                gone_groups.add(uuid.UUID(e.data["id"]))
        open_spans = MembershipSpan.objects.filter(directory=directory, valid_to=OPEN)
        for query in (
            open_spans.filter(group_id__in=member_groups, user_id__in=member_users) if member_groups else None,
            open_spans.filter(user_id__in=gone_users) if gone_users else None,
            open_spans.filter(group_id__in=gone_groups) if gone_groups else None,
        ):
            for span in query or ():
                self._span_open(span)

    def _span_open(self, span: MembershipSpan) -> None:
        self.spans[(span.group_id, span.user_id)] = span
        self.by_user[span.user_id].add(span.group_id)
        self.by_group[span.group_id].add(span.user_id)

    def _close(self, row: Any, sequence: int) -> None:
        row.valid_to = sequence
        if row.pk is not None:
            self.closed[(type(row), row.pk)] = row

    def _span_close(self, group_id: uuid.UUID, user_id: uuid.UUID, sequence: int) -> None:
        span = self.spans.pop((group_id, user_id), None)
        if span is None:
            return
        self.by_user[user_id].discard(group_id)
        self.by_group[group_id].discard(user_id)
        self._close(span, sequence)

    def _version(self, model: type, opened: dict[uuid.UUID, Any], key: str, event: _Event) -> None:
        object_id = uuid.UUID(event.data["id"])
        current = opened.pop(object_id, None)
        if current is not None:
            self._close(current, event.sequence)
        if event.event_type.endswith(".deleted"):
            return
        row = model(
            directory=self.directory,
            valid_from=event.sequence,
            created_at=_when(event.data["created_at"]),
            born=current.born if current is not None else event.sequence,
            data=_kept(event.data),
            **{key: object_id},
        )
        opened[object_id] = row
        self.new[model].append(row)

    def fold(self) -> None:
        for event in self.events:
            kind = event.event_type
            if kind in ("group.user_added", "group.user_removed"):
                group_id, user_id = uuid.UUID(event.data["group"]["id"]), uuid.UUID(event.data["id"])
                if kind == "group.user_removed":
                    self._span_close(group_id, user_id, event.sequence)
                elif (group_id, user_id) not in self.spans:
                    span = MembershipSpan(
                        directory=self.directory, group_id=group_id, user_id=user_id, valid_from=event.sequence
                    )
                    self._span_open(span)
                    self.new[MembershipSpan].append(span)
            elif kind.startswith("user."):
                self._version(UserVersion, self.users, "user_id", event)
                if kind == "user.deleted":
                    user_id = uuid.UUID(event.data["id"])
                    for group_id in list(self.by_user.get(user_id, ())):
                        self._span_close(group_id, user_id, event.sequence)
            elif kind.startswith("group."):
                self._version(GroupVersion, self.groups, "group_id", event)
                if kind == "group.deleted":
                    group_id = uuid.UUID(event.data["id"])
                    for user_id in list(self.by_group.get(group_id, ())):
                        self._span_close(group_id, user_id, event.sequence)
        by_model: dict[type, list[Any]] = defaultdict(list)
        for (model, _pk), row in self.closed.items():
            by_model[model].append(row)
        points = [
            HistoryPoint(
                directory=self.directory, sequence=e.sequence, created_at=e.created_at, event_type=e.event_type
            )
            for e in self.points
        ]
        if connection.vendor == "postgresql":
            _rows_copy(self.new, points)
            for model, rows in by_model.items():
                _ends_set(model, rows)
            return
        for model, rows in self.new.items():
            model.objects.bulk_create(rows, batch_size=500)
        for model, rows in by_model.items():
            model.objects.bulk_update(rows, ["valid_to"], batch_size=500)
        HistoryPoint.objects.bulk_create(points, batch_size=1000)


# The fold's writes on PostgreSQL (kept for speed: bench/README.md, "Code kept for speed", "History folded
# by COPY"). The ORM's bulk_create sends each column as an array and escapes every string of the JSON
# `data` in Python, and bulk_update writes one CASE branch per row that PostgreSQL tries in turn for every
# row; one COPY per model and one UPDATE joined to the new ends, two arrays, do neither.
_COPIED: dict[type, tuple[str, ...]] = {
    UserVersion: ("directory", "user_id", "valid_from", "valid_to", "created_at", "born", "data"),
    GroupVersion: ("directory", "group_id", "valid_from", "valid_to", "created_at", "born", "data"),
    MembershipSpan: ("directory", "group_id", "user_id", "valid_from", "valid_to"),
    HistoryPoint: ("directory", "sequence", "created_at", "event_type"),
}
_WRITERS: dict[type, RowWriter[Any]] = {model: RowWriter(model) for model in _COPIED}


def _json_text(value: Any) -> str:
    """`data` as the JSON text a jsonb column reads. The events were read with orjson, so orjson writes
    them back; the standard library takes what it refuses (an integer past 64 bits)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value)


def _rows_copy(new: dict[type, list[Any]], points: list[HistoryPoint]) -> None:
    for model, rows in (*new.items(), (HistoryPoint, points)):
        names = _COPIED[model]
        attnames = [model._meta.get_field(name).attname for name in names]  # "directory" is read as directory_id
        values = [[getattr(row, attname) for attname in attnames] for row in rows]
        if "data" in names:
            at = names.index("data")
            for value in values:
                value[at] = _json_text(value[at])
        _WRITERS[model].copy_rows(names, values)


def _ends_set(model: type, rows: list[Any]) -> None:
    """Each row's new `valid_to`, in one statement."""
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS t SET valid_to = v.valid_to "  # noqa: S608 (a model's table name)
            "FROM unnest(%s::bigint[], %s::bigint[]) AS v(id, valid_to) WHERE t.id = v.id",
            [[row.pk for row in rows], [row.valid_to for row in rows]],
        )


def history_catch_up(*, directory: Directory) -> int:
    """Fold every event of the directory's feed not folded yet (as far as the feed reads gap-free);
    returns how many were folded. Cheap when there are none: one indexed read."""
    HistoryState.objects.get_or_create(directory=directory)
    folded = 0
    while True:
        with transaction.atomic():
            state = HistoryState.objects.select_for_update().get(pk=directory.pk)
            try:
                page = feed_read(directory=directory, after=state.folded_sequence, limit=FOLD_BATCH)
            except FeedExpired:
                _seed(directory, state)
                continue
            if not page.events:
                return folded
            events = [
                _Event(
                    sequence=int(row.sequence or 0),
                    created_at=row.created_at,
                    event_type=row.event_type,
                    data=orjson.loads(row.body).get("data"),
                )
                for row in page.events
            ]
            _Batch(directory, [e for e in events if _foldable(e.event_type, e.data)], events).fold()
            state.folded_sequence = events[-1].sequence
            state.folded_at = timezone.now()
            state.save(update_fields=["folded_sequence", "folded_at"])
            folded += len(events)


def history_fold_directory_id(directory_id: uuid.UUID) -> None:
    """The feed purge's hook: fold the directory's events before any is deleted."""
    directory = Directory.objects.filter(pk=directory_id).first()
    if directory is not None:
        history_catch_up(directory=directory)


def _seed(directory: Directory, state: HistoryState) -> None:
    """The feed lost events history never folded (history came after them): start this directory's
    history afresh from its present, as the point of its last event. Earlier points are then a 410.

    The counter is read before the rows, so a write committed in between is in the rows and folded again
    from its event, which only replaces a version with the same one."""
    last = EventSequence.objects.filter(directory_id=directory.id).values_list("last", flat=True).first() or 0
    for model in (UserVersion, GroupVersion, MembershipSpan, HistoryPoint):
        model.objects.filter(directory=directory).delete()
    UserVersion.objects.bulk_create(
        [
            UserVersion(
                directory=directory,
                user_id=user.id,
                valid_from=last,
                created_at=user.created_at,
                born=last,
                data=user_stored_data(user),
            )
            for user in DirectoryUser.objects.filter(directory=directory).iterator()
        ],
        batch_size=500,
    )
    GroupVersion.objects.bulk_create(
        [
            GroupVersion(
                directory=directory,
                group_id=group.id,
                valid_from=last,
                created_at=group.created_at,
                born=last,
                data=group_data(group),
            )
            for group in DirectoryGroup.objects.filter(directory=directory).iterator()
        ],
        batch_size=500,
    )
    MembershipSpan.objects.bulk_create(
        [
            MembershipSpan(directory=directory, group_id=group_id, user_id=user_id, valid_from=last)
            for group_id, user_id in GroupMembership.objects.filter(group__directory=directory)
            .values_list("group_id", "user_id")
            .iterator()
        ],
        batch_size=1000,
    )
    HistoryPoint.objects.create(directory=directory, sequence=last, created_at=timezone.now(), event_type=SEEDED)
    state.folded_sequence = last
    state.save(update_fields=["folded_sequence"])
    logger.warning(
        "history of directory %s started afresh at sequence %d: earlier events were gone", directory.id, last
    )


def history_cut(*, directory: Directory) -> int:
    """The earliest point history answers for: the oldest event the feed still keeps (or, when it keeps
    none, the last one given), and never before the point history started from."""
    head = feed_head(directory=directory)
    cut = head.oldest_sequence if head.oldest_sequence is not None else head.last_sequence
    first = HistoryPoint.objects.filter(directory=directory).aggregate(first=Min("sequence"))["first"]
    return max(cut, first or 0)


def history_prune(*, directory: Directory) -> int:
    """Delete the rows that no point history still answers for can show: those that ended at or before
    the cut, and the points before it. Returns how many rows went."""
    cut = history_cut(directory=directory)
    deleted = 0
    for model in (UserVersion, GroupVersion, MembershipSpan):
        count, _ = model.objects.filter(directory=directory, valid_to__lte=cut).delete()
        deleted += count
    count, _ = HistoryPoint.objects.filter(directory=directory, sequence__lt=cut).delete()
    return deleted + count


@dataclass(frozen=True)
class FoldResult:
    directories: int
    events: int
    pruned: int


def history_fold_all(*, prune: bool = False) -> FoldResult:
    """The beat task's work: fold every directory whose feed has events history has not folded yet (and,
    with `prune`, trim every directory's history to what retention still answers for)."""
    behind = EventSequence.objects.values_list("directory_id", "last")
    folded = dict(HistoryState.objects.values_list("directory_id", "folded_sequence"))
    ids = [directory_id for directory_id, last in behind if last > folded.get(directory_id, 0)]
    events = pruned = 0
    # A deleted directory's counter outlives it (webhooks.models.EventSequence): only existing ones fold.
    behind_now = list(Directory.objects.filter(pk__in=ids))
    for directory in behind_now:
        events += history_catch_up(directory=directory)
    if prune:
        for directory in Directory.objects.filter(pk__in=list(folded)):
            pruned += history_prune(directory=directory)
    return FoldResult(directories=len(behind_now), events=events, pruned=pruned)
