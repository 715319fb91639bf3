"""What people do with the deprovision guard's held changes (contract §4.2). What a SCIM write does when
the guard is involved (count a deprovision, or hold it, tripping the guard; hold a later change behind
earlier ones) is the SCIM store's: scim.storage.guard.

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

from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.actors import Actor
from audit.services import audit_record
from core.apiinput import fields_known
from core.errors import Conflict, ValidationFailed
from core.timefmt import iso_utc
from directories.guard import rules
from directories.guard.rules import WINDOW_MAX
from directories.guard.selectors import directory_guard_lock, held_changes
from directories.models import Deprovision, Directory, DirectoryUser, HeldChange, HeldChangeKind
from directories.outbox import outbox
from directories.rendering import user_event, user_updated

# At most this many ids in one resolution (a page of the held list is at most 1000 too).
IDS_MAX = 1000


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
    directory_guard_lock(directory)
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
