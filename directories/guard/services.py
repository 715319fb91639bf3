"""Writes of the deprovision guard (contract §4.2).

What the SCIM store calls, inside the transaction of the write and holding the user's row lock
(scim.storage.locked): `deprovision_admit` for a deprovision (count it, or hold it, tripping the guard), and
`change_hold` for any later change to a user that has changes held. Both take the directory's row lock
after the user's (`FOR NO KEY UPDATE`, which user inserts, whose foreign key takes `KEY SHARE` on it, do not
wait for): deprovisions of one directory serialize there, on every web process and node.

What people call through the REST API, the admin API, the portal and `manage.py directories held`, each
handing in its Actor: `held_changes_resolve`, audited in its own transaction, which approves (applies in
order, with their events, numbered now and carrying `held_since`) or discards held changes, and re-arms
the guard with an empty window when nothing is held any more. It locks the users it changes, in id order,
then the directory: the same order.

Lock order overall: users, then the directory, then the directory's event counter (always last,
docs/events.md).
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from audit.actors import Actor
from audit.services import audit_record
from core.apiinput import fields_known
from core.errors import Conflict, ValidationFailed
from core.requestid import scope_current
from core.rows import RowReader
from core.timefmt import iso_utc
from directories.guard import rules
from directories.guard.rules import WINDOW_MAX, active_needed, guard_setting, trips, window_since
from directories.guard.selectors import held_changes, window_deprovisions
from directories.models import Deprovision, Directory, DirectoryUser, HeldChange, HeldChangeKind
from directories.outbox import outbox
from directories.rendering import directory_public_data, user_event, user_updated

# At most this many ids in one resolution (a page of the held list is at most 1000 too).
IDS_MAX = 1000


# The guard's fields of a directory, read under its row lock by fixed SQL (core.rows): a deprovision reads
# them on every request of a wave.
_guard_fields = RowReader(Directory, fields=("id", "deprovision_guard", "guard_tripped_at", "guard_armed_at"))


def _directory_lock(directory: Directory) -> None:
    """Lock the directory's row (FOR NO KEY UPDATE; SQLite's write lock covers it) and refresh the guard's
    fields on `directory` from it: a PATCH or another request may have changed them since it was read."""
    sql = _guard_fields.sql('{table}."id" = %s', lock="no_key_update")
    row = _guard_fields.first(sql, [_guard_fields.param("id", directory.id)])
    if row is not None:
        directory.deprovision_guard = row.deprovision_guard
        directory.guard_tripped_at, directory.guard_armed_at = row.guard_tripped_at, row.guard_armed_at


def _value(model: type[Any], field: str, value: Any) -> Any:
    return model._meta.get_field(field).get_db_prep_value(value, connection)


def record_sql(
    directory_id: uuid.UUID, now: datetime, *, since: datetime | None = None, below: int = 0
) -> tuple[str, list[Any]]:
    """The INSERT of a deprovision at `now` into the window, and its parameters. With `below`: only if the
    window (after `since`) holds fewer than that. To be run after the directory's lock, in a statement of
    its own, so that its snapshot counts every deprovision committed before the lock was granted."""
    table = connection.ops.quote_name(Deprovision._meta.db_table)
    directory_value = _value(Directory, "id", directory_id)
    sql = f'INSERT INTO {table} ("directory_id", "at") SELECT %s, %s'  # noqa: S608
    params = [directory_value, _value(Deprovision, "at", now)]
    if below:
        sql += f' WHERE (SELECT COUNT(*) FROM {table} WHERE "directory_id" = %s AND "at" > %s) < %s'  # noqa: S608
        params += [directory_value, _value(Deprovision, "at", since), below]
    return sql, params


def _record(directory_id: uuid.UUID, now: datetime) -> None:
    """Record a deprovision at `now` in the window (`record_sql`, unconditional)."""
    sql, params = record_sql(directory_id, now)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def _active_users(directory_id: uuid.UUID, limit: int) -> int:
    """The directory's active users (the application's view), counted up to `limit` only."""
    table = connection.ops.quote_name(DirectoryUser._meta.db_table)
    sql = f'SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE "directory_id" = %s AND "active" = %s LIMIT %s) t'  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, [_value(Directory, "id", directory_id), _value(DirectoryUser, "active", True), limit])
        return int(cursor.fetchone()[0])


def counting_sql(
    setting: dict[str, Any], *, directory_id: uuid.UUID, armed_at: datetime | None, now: datetime
) -> tuple[str, list[Any]]:
    """For a deprovision while the guard is on and armed (`setting` and `armed_at` as read under the
    directory's lock): the INSERT that records it when nothing else needs asking, which inserts nothing
    when the window already holds `max_users` (then the active users decide, `deprovision_admit`). With
    `max_percent` 100 it always records: the user is active, so one more deprovision never exceeds 100 %
    of a base it is part of. Run after the directory's lock, in a statement of its own (`record_sql`)."""
    if setting["max_percent"] >= 100:
        return record_sql(directory_id, now)
    since = window_since(setting, now, armed_at)
    return record_sql(directory_id, now, since=since, below=setting["max_users"])


def deprovision_admit(
    *, directory: Directory, user: DirectoryUser, view: DirectoryUser | None, now: datetime | None = None
) -> HeldChange | None:
    """A deprovision of `user` (its row locked by the caller): None when it may go through (counted in the
    window when the guard is on), else the held change (the guard trips on it when it was armed).

    `view`: the user after the change, for a deactivation; None for a delete."""
    now = now or rules.now()
    _directory_lock(directory)
    setting = guard_setting(directory.deprovision_guard)
    if not setting["enabled"]:
        return None  # off: nothing counted, nothing held
    if directory.guard_tripped_at is not None:
        return _hold(directory, user, view, now)
    sql, params = counting_sql(setting, directory_id=directory.id, armed_at=directory.guard_armed_at, now=now)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        if cursor.rowcount == 1:
            return None  # the usual case: counted, nothing else to ask
    since = window_since(setting, now, directory.guard_armed_at)
    counted = window_deprovisions(directory_id=directory.id, since=since)
    needed = active_needed(counted, setting)
    if not needed or not trips(counted, _active_users(directory.id, needed), setting):
        _record(directory.id, now)
        return None
    _trip(directory, now)
    held = _hold(directory, user, view, now)
    _announce_trip(directory)
    return held


def change_hold(
    *, directory: Directory, user: DirectoryUser, view: DirectoryUser | None, now: datetime | None = None
) -> HeldChange:
    """Hold a change of a user that already has changes held, behind them (its row locked by the caller).
    `view`: the user as the identity provider sees it after this change; None for a delete."""
    now = now or rules.now()
    _directory_lock(directory)
    return _hold(directory, user, view, now)


def _trip(directory: Directory, now: datetime) -> None:
    Directory.objects.filter(pk=directory.pk).update(guard_tripped_at=now)
    directory.guard_tripped_at = now


def _announce_trip(directory: Directory) -> None:
    """`dsync.guard_tripped`, once per trip, to the service-wide receiver (contract §5): the directory
    without its secrets, with `guard` (the change that tripped it already counted in `held`)."""
    outbox().event_record(directory=directory, event_type="dsync.guard_tripped", data=directory_public_data(directory))


def _kind(user: DirectoryUser, view: DirectoryUser | None) -> str:
    """What a held change does, as the identity provider sees it: `user` before it, `view` after it."""
    if view is None:
        return HeldChangeKind.DELETE
    return HeldChangeKind.DEACTIVATE if user.active and not view.active else HeldChangeKind.UPDATE


def _hold(directory: Directory, user: DirectoryUser, view: DirectoryUser | None, now: datetime) -> HeldChange:
    """Record the held change (after the directory's others), make it the user's view, flag the user.
    `user`: the identity provider's view before the change (the row, or the last held change)."""
    HeldChange.objects.filter(user_id=user.id, latest=True).update(latest=False)
    last = HeldChange.objects.filter(directory_id=directory.id).order_by("-position").values_list("position")[:1]
    position = (last[0][0] if last else 0) + 1
    scope = scope_current()
    shown = view if view is not None else user
    held = HeldChange.objects.create(
        directory_id=directory.id,
        user_id=user.id,
        position=position,
        change=_kind(user, view),
        held_at=now,
        scim_request_id=(scope.request_id or "") if scope is not None else "",
        latest=True,
        **{name: getattr(shown, name) for name in HeldChange.DOCUMENT},
    )
    if not user.held:
        # QuerySet.update leaves updated_at alone: the application's view of the user does not change.
        DirectoryUser.objects.filter(pk=user.id).update(held=True)
    return held


# --- resolving: approve or discard ---------------------------------------------------------------------


def held_resolve_input(data: Any) -> list[uuid.UUID] | None:
    """The ids of a resolution's body: `{"ids": [...]}` (at least one, at most IDS_MAX, each a held change's
    id), or `{}` for every held change (None)."""
    if not isinstance(data, dict):
        raise ValidationFailed('The body must be a JSON object: {} or {"ids": [...]}.')
    fields_known(data, ["ids"])
    if "ids" not in data:
        return None
    ids = data["ids"]
    if not isinstance(ids, list) or not ids:
        raise ValidationFailed("ids must be a non-empty list of held change ids; send {} for all.", field="ids")
    if len(ids) > IDS_MAX:
        raise ValidationFailed(f"ids may name at most {IDS_MAX} held changes.", field="ids")
    parsed: list[uuid.UUID] = []
    for value in ids:
        try:
            parsed.append(uuid.UUID(value) if isinstance(value, str) else uuid.UUID(""))
        except ValueError:
            raise ValidationFailed("Each of ids must be a held change's id (a UUID).", field="ids") from None
    return list(dict.fromkeys(parsed))


@dataclass(frozen=True)
class Resolution:
    """What a resolution did: how many held changes it approved or discarded, whether the guard re-armed."""

    count: int
    rearmed: bool


def held_changes_resolve(
    *, directory: Directory, ids: list[uuid.UUID] | None, approve: bool, actor: Actor
) -> Resolution:
    """Approve or discard the held changes `ids` (None: all), in one transaction with its audit entry (who
    asked, what, how many, whether the guard re-armed). A refused resolution changes nothing and leaves no
    entry.

    Order is kept per user: approving a change approves that user's earlier held changes with it (a later
    change was made on top of them), and discarding one discards that user's later ones with it. Approved
    changes are applied in the order they were held, each with its normal event (`user.updated`,
    `user.deleted`), numbered now and carrying `held_since`. An id that is not one of this directory's held
    changes is a 400 and nothing is done. When nothing is held any more, the guard re-arms with an empty
    window."""
    with transaction.atomic():
        result, events = _resolve(directory, ids, approve=approve)
        audit_record(
            actor=actor,
            action="directory.held_changes_approved" if approve else "directory.held_changes_discarded",
            target_type="directory",
            target_id=directory.id,
            directory_id=directory.id,
            details={
                "name": directory.name,
                "asked": "all" if ids is None else [str(i) for i in ids],
                "count": result.count,
                "rearmed": result.rearmed,
            },
        )
        if events:
            outbox().changes_record(directory=directory, events=events)  # the last write (docs/events.md)
    return result


def _resolve(directory: Directory, ids: list[uuid.UUID] | None, *, approve: bool) -> tuple[Resolution, list[Any]]:
    """The work of `held_changes_resolve`, inside its transaction: what it did, and the events of the changes
    it applied (EventSpec, in order), which the caller records last."""
    seen = list(held_changes(directory=directory).values_list("id", "user_id"))
    if ids is not None:
        known = {change_id for change_id, _user in seen}
        unknown = [str(i) for i in ids if i not in known]
        if unknown:
            raise ValidationFailed(
                f"Not a held change of this directory: {', '.join(unknown[:3])}{' …' if len(unknown) > 3 else ''}.",
                field="ids",
            )
    users = sorted({user_id for _change, user_id in seen})
    # Lock order: the users (id order), then the directory (as the SCIM writes: user, then directory).
    rows = {user.id: user for user in DirectoryUser.objects.select_for_update().filter(pk__in=users).order_by("pk")}
    _directory_lock(directory)
    held = [change for change in held_changes(directory=directory) if change.user_id in rows]
    if ids is not None and not set(ids) <= {change.id for change in held}:
        raise ValidationFailed("Some of those held changes were resolved meanwhile.", field="ids")
    chosen = _chosen(held, ids, approve=approve)
    if not chosen:
        return Resolution(0, _rearm_if_empty(directory)), []
    try:
        events = _apply(directory, chosen, rows) if approve else []
    except IntegrityError:
        # A held rename onto a userName another user has in the application's view since: the database's
        # constraint refuses it, and the whole approval with it.
        raise Conflict(
            "A held change gives a user a userName another user has now; nothing was applied. Discard that "
            "change (the identity provider sends the user again on its next push)."
        ) from None
    _forget(chosen, held)
    return Resolution(len(chosen), _rearm_if_empty(directory)), events


def _chosen(held: list[HeldChange], ids: list[uuid.UUID] | None, *, approve: bool) -> list[HeldChange]:
    """The held changes a resolution of `ids` covers, in held order (module docstring of
    `held_changes_resolve`: earlier ones of the same user with an approval, later ones with a discard)."""
    if ids is None:
        return list(held)
    wanted = set(ids)
    # For each user, the furthest (approve) or earliest (discard) position named.
    bound: dict[uuid.UUID, int] = {}
    for change in held:
        if change.id in wanted:
            current = bound.get(change.user_id)
            if current is None or (change.position > current if approve else change.position < current):
                bound[change.user_id] = change.position
    return [
        change
        for change in held
        if change.user_id in bound
        and (change.position <= bound[change.user_id] if approve else change.position >= bound[change.user_id])
    ]


def _apply(directory: Directory, chosen: list[HeldChange], rows: dict[uuid.UUID, DirectoryUser]) -> list[Any]:
    """Apply the approved changes to the users' rows, in order; their events (EventSpec), in order."""
    events: list[Any] = []
    for change in chosen:
        user = rows[change.user_id]
        since = {"held_since": iso_utc(change.held_at)}
        if change.change == HeldChangeKind.DELETE:
            events.append(("user.deleted", user_event(directory, user), None, since))
            # Its memberships and its held changes go with it (the ORM's cascade).
            DirectoryUser.objects.filter(pk=user.id).delete()
            continue
        before = copy.copy(user)
        document = {name: getattr(change, name) for name in HeldChange.DOCUMENT}
        for name, value in document.items():
            setattr(user, name, value)
        user.updated_at = timezone.now()
        DirectoryUser.objects.filter(pk=user.id).update(**document, updated_at=user.updated_at)
        event_type, data, previous = user_updated(directory, user, before)
        events.append((event_type, data, previous, since))
    return events


def _forget(chosen: list[HeldChange], held: list[HeldChange]) -> None:
    """Drop the resolved held changes; each user's view is its last change still held, or its row again."""
    gone = {change.id for change in chosen}
    HeldChange.objects.filter(pk__in=gone).delete()
    remaining: dict[uuid.UUID, HeldChange] = {}
    touched = {change.user_id for change in chosen}
    for change in held:
        if change.id not in gone and change.user_id in touched:
            remaining[change.user_id] = change  # held is in order: the last one wins
    for user_id in touched:
        last = remaining.get(user_id)
        if last is None:
            DirectoryUser.objects.filter(pk=user_id).update(held=False)
        elif not last.latest:
            HeldChange.objects.filter(pk=last.pk).update(latest=True)


def _rearm_if_empty(directory: Directory) -> bool:
    """Nothing held any more: the guard re-arms with an empty window (the deprovisions counted so far,
    and the approved ones, no longer count)."""
    if directory.guard_tripped_at is None or HeldChange.objects.filter(directory_id=directory.id).exists():
        return False
    now = rules.now()
    Directory.objects.filter(pk=directory.pk).update(guard_tripped_at=None, guard_armed_at=now)
    directory.guard_tripped_at, directory.guard_armed_at = None, now
    return True


def deprovisions_purge(*, now: datetime | None = None) -> int:
    """Drop the window's records older than the longest window (the periodic purge)."""
    cutoff = (now or rules.now()) - WINDOW_MAX
    deleted, _ = Deprovision.objects.filter(at__lt=cutoff).delete()
    return deleted
