"""The deprovision guard's write path (contract §4.2): what a SCIM write does when the guard is involved, on
both store strategies and both databases. The guard's rules (the setting, the window's arithmetic) are
directories.guard.rules; its reads directories.guard.selectors; what people do with held changes (approve,
discard) directories.guard.services.

A *deprovision* takes an active user out: a delete of an active user, or `active` turned false. While the
directory's guard is on (`watches`), each one is counted in the window, or held (tripping the guard when it
was armed); any later change of a user with changes held is held behind them. A held change is answered to
the identity provider as if applied, without touching the user's row or recording an event.

Who calls what:

- the locked path (scim.storage.locked, on both databases), under the user's row lock in its transaction:
  `held_update` and `held_delete` for a user with changes held, `deactivate` and `delete` for a
  deprovision. These count it or hold it (`_admit`, `_hold`) under the directory's row lock, and hand a
  change that goes through to the store's own write (`write`);
- the single-statement store (scim.storage.statements, PostgreSQL outside any transaction): `counted`, a
  deprovision the guard lets through, in one transaction of two statements sent in one pipeline (`_locks`,
  then the window's record, the write and its event in one, each only if the guard as authentication read
  it still holds and this deprovision stays within its limits). When that writes nothing (the user changed
  or has changes held, the guard changed, or this one would trip it) the store takes the locked path.

Lock order: the user, then the directory (FOR NO KEY UPDATE, which user inserts, whose foreign key takes
KEY SHARE on it, do not wait for; deprovisions of one directory serialize there, on every node), then the
directory's event counter (always last, docs/events.md).

SQL: the window's (SQLite and PostgreSQL) through core.rows; the two statements' (PostgreSQL only) as
scim.storage.postgres writes its own, with its quoting (`q`) and its way of joining a change and its events
(`with_events`). Kept for speed: bench/README.md, 'Code kept for speed', "Deprovisions in two statements".
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from django.db import OperationalError, connection

from core.requestid import scope_current
from core.rows import RowReader, RowWriter
from directories.guard import rules
from directories.guard.rules import active_needed, guard_setting, trips, window_since
from directories.guard.selectors import directory_guard_lock, held_view, user_name_taken, window_deprovisions
from directories.models import (
    Deprovision,
    Directory,
    DirectoryUser,
    GroupMembership,
    HeldChange,
    HeldChangeKind,
    UserTally,
)
from directories.outbox import outbox
from directories.rendering import directory_public_data, user_event, user_updated
from scim.protocol.errors import not_found, uniqueness
from scim.protocol.versions import Precondition, require_version
from scim.selectors import scim_user_shown
from scim.storage.postgres import deadlocked, q, with_events
from scim.storage.store import Events, UserChange
from webhooks.services import PreparedEvents, events_prepare, events_written

# The store's own write of a change the guard lets through (its events included).
Write = Callable[[], Events]


def watches(directory: Directory) -> bool:
    """Whether a deprovision in this directory goes to the guard (its setting as read with the
    authentication; the guard reads it again under the directory's lock)."""
    return bool(guard_setting(directory.deprovision_guard)["enabled"])


# --- the locked path: under the user's row lock, in the store's transaction --------------------------------


def deactivate(
    directory: Directory, before: DirectoryUser, user: DirectoryUser, *, write: Write
) -> tuple[DirectoryUser, Events]:
    """A deactivation of `before` into `user`: counted and written by `write`, or held and answered as if
    applied (the identity provider's view of the user, no event). 409 first when it renames the user onto a
    userName another user has."""
    _user_name_free(directory, before, user)
    held = _admit(directory=directory, user=before, view=user)
    if held is not None:
        return held_view(user=before, change=held), []
    return user, write()


def delete(directory: Directory, user: DirectoryUser, *, write: Write) -> Events:
    """A delete of the active `user`: counted and done by `write`, or held (nothing written, no event)."""
    if _admit(directory=directory, user=user, view=None) is not None:
        return []
    return write()


def held_update(
    directory: Directory, user: DirectoryUser, change: UserChange, if_match: Precondition | None
) -> tuple[DirectoryUser, Events]:
    """A change of a user with changes held: applied to the identity provider's view of it, and held
    behind them when it changes that view (in order; it becomes the view). Answered as if applied."""
    shown = _held_user_shown(user)
    require_version(if_match, shown.updated_at)
    before = copy.copy(shown)
    if change(shown) is None:
        return before, []
    _user_name_free(directory, before, shown)
    held = _change_hold(directory=directory, user=before, view=shown)
    return held_view(user=user, change=held), []


def held_delete(directory: Directory, user: DirectoryUser, if_match: Precondition | None) -> Events:
    """A delete of a user with changes held: held behind them, answered as if applied."""
    shown = _held_user_shown(user)
    require_version(if_match, shown.updated_at)
    _change_hold(directory=directory, user=shown, view=None)
    return []


def _held_user_shown(user: DirectoryUser) -> DirectoryUser:
    """The identity provider's view of a user with changes held (its row locked): 404 when that is a delete."""
    shown = scim_user_shown(user)
    if shown is None:
        raise not_found("User")
    return shown


def _user_name_free(directory: Directory, before: DirectoryUser, after: DirectoryUser) -> None:
    """A guarded change that renames a user: 409 when another user has that userName (as the application or
    the identity provider sees it). The database's constraint checks the rest when the change is applied."""
    if after.user_name_key != before.user_name_key and user_name_taken(
        directory=directory, key=after.user_name_key, user_id=before.id
    ):
        raise uniqueness("A user with this userName")


def _admit(
    *, directory: Directory, user: DirectoryUser, view: DirectoryUser | None, now: datetime | None = None
) -> HeldChange | None:
    """A deprovision of `user` (its row locked by the caller): None when it may go through (counted in the
    window when the guard is on), else the held change (the guard trips on it when it was armed).

    `view`: the user after the change, for a deactivation; None for a delete."""
    now = now or rules.now()
    directory_guard_lock(directory)
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


def _change_hold(*, directory: Directory, user: DirectoryUser, view: DirectoryUser | None) -> HeldChange:
    """Hold a change of a user that already has changes held, behind them (its row locked by the caller).
    `view`: the user as the identity provider sees it after this change; None for a delete."""
    now = rules.now()
    directory_guard_lock(directory)
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
        return str(HeldChangeKind.DELETE)
    return str(HeldChangeKind.DEACTIVATE if user.active and not view.active else HeldChangeKind.UPDATE)


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


# --- the window's SQL (both databases, core.rows) ----------------------------------------------------------

_window_rows = RowWriter(Deprovision)
_window = RowReader(Deprovision, fields=("directory_id", "at"))
_active = RowReader(DirectoryUser, fields=("id",))


def record_sql(
    directory_id: uuid.UUID,
    now: datetime,
    *,
    since: datetime | None = None,
    below: int = 0,
    only_if: tuple[str, list[Any]] | None = None,
) -> tuple[str, list[Any]]:
    """The INSERT of a deprovision at `now` into the window, and its parameters. With `below`: only if the
    window (after `since`) holds fewer than that. With `only_if` (a condition and its parameters): only if
    that holds too. To be run after the directory's lock, in a statement of its own, so that its snapshot
    counts every deprovision committed before the lock was granted."""
    row = Deprovision(directory_id=directory_id, at=now)
    conditions: list[str] = []
    params: list[Any] = []
    if below:
        count = _window.count_sql('{table}."directory_id" = %s AND {table}."at" > %s')
        conditions.append(f"({count}) < %s")
        params += [_window.param("directory_id", directory_id), _window.param("at", since), below]
    if only_if is not None:
        conditions.append(only_if[0])
        params += only_if[1]
    if not conditions:
        return _window_rows.insert_sql(row)
    sql, values = _window_rows.insert_sql(row, where=" AND ".join(conditions))
    return sql, [*values, *params]


def counting_sql(
    setting: dict[str, Any], *, directory_id: uuid.UUID, armed_at: datetime | None, now: datetime
) -> tuple[str, list[Any]]:
    """For a deprovision while the guard is on and armed (`setting` and `armed_at` as read under the
    directory's lock): the INSERT that records it when nothing else needs asking, which inserts nothing
    when the window already holds `max_users` (then the active users decide, `_admit`). With
    `max_percent` 100 it always records: the user is active, so one more deprovision never exceeds 100 %
    of a base it is part of. Run after the directory's lock, in a statement of its own (`record_sql`)."""
    if setting["max_percent"] >= 100:
        return record_sql(directory_id, now)
    since = window_since(setting, now, armed_at)
    return record_sql(directory_id, now, since=since, below=setting["max_users"])


def _record(directory_id: uuid.UUID, now: datetime) -> None:
    """Record a deprovision at `now` in the window (`record_sql`, unconditional)."""
    sql, params = record_sql(directory_id, now)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


# PostgreSQL: the directory's active users, from the tally its triggers keep (directories.models.UserTally):
# at most UserTally.SHARDS rows, however large the directory and the window. Its snapshot is the
# statement's, as a count of the users would be: what committed before it, and none of its own changes.
_ACTIVE = (
    f"SELECT COALESCE(SUM({q('active')}), 0) FROM {q(UserTally._meta.db_table)} "  # noqa: S608
    f"WHERE {q('directory_id')} = %s"
)


def _active_users(directory_id: uuid.UUID, limit: int) -> int:
    """The directory's active users (the application's view): on PostgreSQL the tally's sum (`_ACTIVE`), its
    constant cost; elsewhere counted up to `limit` only."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_ACTIVE, [_active.param("directory_id", directory_id)])
        else:
            inner = _active.sql('{table}."directory_id" = %s AND {table}."active" = %s', suffix=" LIMIT %s")
            params = [_active.param("directory_id", directory_id), _active.param("active", True), limit]
            cursor.execute(f"SELECT COUNT(*) FROM ({inner}) t", params)  # noqa: S608
        return int(cursor.fetchone()[0])


# --- PostgreSQL outside a transaction: a deprovision the guard lets through, in two statements --------------


def counted(
    directory: Directory,
    before: DirectoryUser,
    *,
    read_at: Any,
    user: DirectoryUser | None = None,
    names: list[str] | None = None,
) -> tuple[DirectoryUser, Events] | None:
    """A deprovision the guard lets through, in one transaction of two statements sent together: the user's
    and the directory's locks (`_locks`), then the guard's record with the write and its event (a delete
    when `user` is None, else the update of `before` into `user`, the columns `names`). None, with nothing
    written, when the record was not made: the user changed since it was read, has changes held or is gone;
    the guard was changed, turned off or tripped since authentication read it; this deprovision would
    trip it; or PostgreSQL cancelled the transaction to break a deadlock. The caller then goes the locked
    path, where the guard decides (`deactivate`, `delete`).

    The directory's lock serializes the directory's deprovisions, so nothing waits on this process while it
    is held: the change, its event and the record (`_guessed_counting`, from the guard as authentication
    read it) are built before, and both statements go in one pipeline, outside any transaction block, so
    PostgreSQL runs them as one implicit transaction that ends (commits, or rolls back on an error) at the
    pipeline's end, with no round trip to this process between the locks and the commit."""
    guess = _guessed_counting(directory, before, read_at)
    if guess is None:
        return None  # tripped as read: the locked path holds it (or finds the guard reset meanwhile)
    stamp = user.updated_at if user is not None else None
    if user is None:
        change = _delete_change(directory=directory, user=before)
    else:
        assert names is not None
        change = _update_change(directory=directory, user=user, names=names, before=before)
    events = change.written(_locks(directory=directory, user=before, delete=user is None, then=change.statement(guess)))
    if events is not None:
        return before if user is None else user, events
    if user is not None:
        user.updated_at = stamp  # as it was read (the change bumped it): the locked path writes it
    return None


def _guessed_counting(directory: Directory, user: DirectoryUser, read_at: Any) -> tuple[str, list[Any]] | None:
    """The window's record of a deprovision, built from the guard as authentication read it, to run only if
    the locked rows still say the same (`_unchanged_sql`); None when the guard was tripped then."""
    setting = guard_setting(directory.deprovision_guard)
    if not setting["enabled"] or directory.guard_tripped_at is not None:
        return None
    now, unchanged = rules.now(), _unchanged_sql(directory, user, read_at)
    if setting["max_percent"] >= 100:
        return record_sql(directory.id, now, only_if=unchanged)
    return _within_limits_sql(
        setting, directory.id, window_since(setting, now, directory.guard_armed_at), now, unchanged
    )


def _within_limits_sql(
    setting: dict[str, Any], directory_id: uuid.UUID, since: datetime, now: datetime, only_if: tuple[str, list[Any]]
) -> tuple[str, list[Any]]:
    """PostgreSQL: the INSERT of a deprovision into the window only if it stays within the guard's limits,
    all of `rules.trips` in SQL: the window holds fewer than `max_users`, or with this one it stays within
    `max_percent` of the directory's users (active now, from the tally: `_ACTIVE`, plus those the window
    counts). When it would trip, it inserts nothing and the locked path decides (`_admit`)."""
    window = _window.count_sql('{table}."directory_id" = %s AND {table}."at" > %s')
    within = f"(w.c < %s OR (w.c + 1) * 100 <= %s * (w.c + ({_ACTIVE}))) AND {only_if[0]}"
    sql, values = _window_rows.insert_sql(
        Deprovision(directory_id=directory_id, at=now), where=within, source=f"({window}) w(c)"
    )
    return sql, [
        *values,
        _window.param("directory_id", directory_id),
        _window.param("at", since),
        setting["max_users"],
        setting["max_percent"],
        _window.param("directory_id", directory_id),
        *only_if[1],
    ]


def _unchanged_sql(directory: Directory, user: DirectoryUser, read_at: Any) -> tuple[str, list[Any]]:
    """The condition that the user and the directory still say, under the locks, what was read before."""
    users, directories = q(DirectoryUser._meta.db_table), q(Directory._meta.db_table)
    sql = (
        f"EXISTS (SELECT 1 FROM {users} WHERE {q('id')} = %s AND {q('updated_at')} = %s "  # noqa: S608
        f"AND NOT {q('held')}) AND EXISTS (SELECT 1 FROM {directories} WHERE {q('id')} = %s "
        f"AND {q('deprovision_guard')} IS NOT DISTINCT FROM CAST(%s AS jsonb) "
        f"AND {q('guard_tripped_at')} IS NULL AND {q('guard_armed_at')} IS NOT DISTINCT FROM %s)"
    )
    stored = None if directory.deprovision_guard is None else orjson.dumps(directory.deprovision_guard).decode()
    return sql, [user.id, read_at, directory.id, stored, directory.guard_armed_at]


_users = RowWriter(DirectoryUser)


def _locks(
    *, directory: Directory, user: DirectoryUser, delete: bool, then: tuple[str, list[Any]]
) -> list[tuple[Any, ...]]:
    """Lock the user's row (FOR UPDATE for a delete, else FOR NO KEY UPDATE, as scim.selectors does), then
    the directory's (FOR NO KEY UPDATE, as `_admit` does), in the order every deprovision takes them (the
    lateral subquery depends on the user's row), then run `then`: two statements in one pipeline and one
    transaction; returns `then`'s rows (none when PostgreSQL cancelled it to break a deadlock). The server
    runs them in order, `then` with a snapshot taken after the locks were granted, so its count of the
    window sees every deprovision committed before."""
    users, directories = q(DirectoryUser._meta.db_table), q(Directory._meta.db_table)
    lock = "UPDATE" if delete else "NO KEY UPDATE"
    sql = (
        f"SELECT 1 FROM (SELECT {q('id')} FROM {users} "  # noqa: S608
        f"WHERE {q('id')} = %s AND {q('directory_id')} = %s FOR {lock}) u "
        f"CROSS JOIN LATERAL (SELECT 1 FROM {directories} WHERE {q('id')} = %s AND u.{q('id')} IS NOT NULL "
        f"FOR NO KEY UPDATE) d"
    )
    with connection.cursor() as first, connection.cursor() as second:
        # Outside a transaction block (autocommit), statements sent in one pipeline up to its end are one
        # implicit transaction. An error raises as Django's, as from a cursor, with nothing written.
        try:
            with connection.wrap_database_errors, connection.connection.pipeline():
                first.execute(sql, [user.id, directory.id, directory.id])
                second.execute(*then)
        except OperationalError as exc:
            if deadlocked(exc):
                # PostgreSQL broke a lock cycle by cancelling this transaction, which wrote nothing: the
                # users' tally (taken at the statement's end, after the events' counter) against a
                # transaction of the locked path that holds the same tally row and waits for the counter.
                # The caller redoes the deprovision on the locked path, as for any race it lost.
                return []
            raise
        return second.fetchall()


@dataclass(frozen=True)
class _Change:
    """A deprovision's change and its event, built before the locks: `statement` writes them behind the
    guard's record (`counting`), only if that recorded one; `written` reads its events from its rows."""

    sql: str
    params: list[Any]
    prepared: PreparedEvents
    also: str = ""

    def statement(self, counting: tuple[str, list[Any]]) -> tuple[str, list[Any]]:
        return with_events(
            self.sql, self.params, self.prepared, when="EXISTS (SELECT 1 FROM a)", also=self.also, first=counting
        )

    def written(self, rows: list[tuple[Any, ...]]) -> Events | None:
        """The events, from the statement's rows; None when it wrote nothing."""
        return events_written(self.prepared, rows[0][-1]) if rows else None


def _update_change(*, directory: Directory, user: DirectoryUser, names: list[str], before: DirectoryUser) -> _Change:
    """The UPDATE of the columns `names` and `user.updated`, to run only if the guard recorded the
    deprovision (`r`, the record in front of it)."""
    update, params = _users.update_sql(user, names, where="EXISTS (SELECT 1 FROM r)")  # bumps updated_at
    prepared = events_prepare(directory=directory, events=[user_updated(directory, user, before)])
    return _Change(f"{update} RETURNING 1", params, prepared)


def _delete_change(*, directory: Directory, user: DirectoryUser) -> _Change:
    """The DELETE of the user and its memberships (under `_locks`' FOR UPDATE, no membership of the user can
    be added meanwhile) and `user.deleted`, to run only if the guard recorded the deprovision."""
    users, members = q(DirectoryUser._meta.db_table), q(GroupMembership._meta.db_table)
    change = (
        f"DELETE FROM {users} WHERE {q('id')} = %s AND {q('directory_id')} = %s "  # noqa: S608
        f"AND EXISTS (SELECT 1 FROM r) RETURNING {q('id')}"
    )
    memberships = f", m AS (DELETE FROM {members} WHERE {q('user_id')} IN (SELECT {q('id')} FROM a))"  # noqa: S608
    prepared = events_prepare(directory=directory, events=[("user.deleted", user_event(directory, user))])
    return _Change(change, [user.id, directory.id], prepared, memberships)
