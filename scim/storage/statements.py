"""The single-statement store: PostgreSQL outside any transaction (every HTTP request), where the hot writes
are one SQL statement each, their events included (scim.storage.postgres writes them).

It holds the locked store of PostgreSQL (`locked`) and hands it, explicitly, every request it has no
statement for: the reads, a conditional write (If-Match is checked under the row's lock), a group
create with members, group replaces and renames, member removals, deletes of groups, any write to a user
with changes held, and a deprovision the guard must decide on (contract §4.2: off or tripped, or a rename
with it); and a request whose statement found the row changed since it was read, or changes held for it
meanwhile (the statements change a user only while its `held` is false). A deprovision the guard counts
is a transaction of two statements (scim.storage.guard, `counted`). Kept for speed: bench/README.md, 'Code
kept for speed', "Single-statement writes" and "Deprovisions in two statements".
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

# Imported as a module, so that a test can slip another write in before a statement (tests/scim).
import scim.storage.postgres as postgres
from directories.models import Directory, DirectoryGroup, DirectoryUser
from scim.protocol.documents import MemberPlan
from scim.protocol.errors import not_found
from scim.protocol.versions import Precondition
from scim.selectors import scim_group_with_users, scim_user_get
from scim.storage import guard
from scim.storage.locked import LockedStore, require_users
from scim.storage.store import DocumentDialect, Events, GroupChange, UserChange


class StatementStore:
    """A `Store`: the statements of scim.storage.postgres where a request has one, else `locked`."""

    # A write to an existing row reads it without a lock (with the authentication's query when it can:
    # `known`), then makes its statement conditional on the row being unchanged.
    optimistic = True

    def __init__(self, locked: LockedStore) -> None:
        self.locked = locked
        # What it has no statement for, as the locked store does it: the reads, and these group writes (a
        # rename, a replace, a member removal, a delete: they read the group under its lock first).
        self.documents: DocumentDialect = locked.documents
        self.directory_with = locked.directory_with
        self.users_page = locked.users_page
        self.group_update = locked.group_update
        self.group_delete = locked.group_delete

    # users

    def user_insert(self, *, directory: Directory, user: DirectoryUser) -> Events:
        return postgres.user_insert_statement(directory=directory, user=user)

    def user_update(
        self,
        *,
        directory: Directory,
        user_id: Any,
        change: UserChange,
        known: list[DirectoryUser] | None = None,
        if_match: Precondition | None = None,
    ) -> tuple[DirectoryUser, Events]:
        if if_match is not None:
            # A conditional write checks the version under the row's lock, in the same transaction.
            return self.locked.user_update(directory=directory, user_id=user_id, change=change, if_match=if_match)
        user = _user_unlocked(directory=directory, user_id=user_id, known=known)
        if user.held:
            # Changes are held for this user: its change is made on the identity provider's view, under locks.
            return self.locked.user_update(directory=directory, user_id=user_id, change=change)
        read_at = user.updated_at
        before = copy.copy(user)
        names = change(user)
        if names is None:
            return user, []
        if before.active and not user.active and guard.watches(directory):
            # A deprovision: the guard counts it under the directory's lock, or holds it (contract §4.2).
            if user.user_name_key == before.user_name_key:  # (a rename with it: the locked path checks it)
                done = guard.counted(directory, before, read_at=read_at, user=user, names=names)
                if done is not None:
                    return done
            # What was computed here is reused when the locked row is the one read; its groups come along.
            reuse = _computed(change, read_at=read_at, computed=user, names=names)
            return self.locked.user_update(directory=directory, user_id=user_id, change=reuse, known=[before])
        events = postgres.user_update_statement(
            directory=directory, user=user, names=names, read_at=read_at, before=before
        )
        if events is not None:
            return user, events
        return self.locked.user_update(directory=directory, user_id=user_id, change=change)

    def user_delete(
        self,
        *,
        directory: Directory,
        user_id: Any,
        known: list[DirectoryUser] | None = None,
        if_match: Precondition | None = None,
    ) -> Events:
        if if_match is not None:
            return self.locked.user_delete(directory=directory, user_id=user_id, if_match=if_match)
        user = _user_unlocked(directory=directory, user_id=user_id, known=known)
        if user.held or (user.active and guard.watches(directory)):
            # A deprovision, or a user with changes held (contract §4.2): two statements when the guard only
            # counts it, else the locked path, with the guard. The usual clean-up, deleting a user
            # deactivated before, stays one statement.
            done = None if user.held else guard.counted(directory, user, read_at=user.updated_at)
            if done is not None:
                return done[1]
            return self.locked.user_delete(directory=directory, user_id=user_id)
        events = postgres.user_delete_statement(directory=directory, user=user)
        if events is not None:
            return events
        return self.locked.user_delete(directory=directory, user_id=user_id)

    # groups

    def group_insert(self, *, directory: Directory, group: DirectoryGroup, plan: MemberPlan) -> Events:
        """A group created without members (how Okta and Entra create one; members follow in PATCHes):
        one statement. With members, the locked path (their users are checked and locked first)."""
        if plan.empty:
            return postgres.group_insert_statement(directory=directory, group=group)
        return self.locked.group_insert(directory=directory, group=group, plan=plan)

    def members_add(
        self, *, directory: Directory, group_id: Any, user_ids: list[uuid.UUID], change: GroupChange
    ) -> tuple[DirectoryGroup, Events]:
        """One read of the group and the users, then one statement (`members_add_statement`); the locked
        path when the request does not qualify after all (its document changes too, or its plan is not
        exactly these adds) or the group changed meanwhile."""
        group, users = scim_group_with_users(directory=directory, group_id=group_id, user_ids=user_ids)
        if group is None:
            raise not_found("Group")
        names, plan = change(group)
        if (
            names is None
            and plan.replace_with is None
            and not plan.remove
            and list(dict.fromkeys(plan.add)) == user_ids
        ):
            require_users(directory, user_ids, users)
            events = postgres.members_add_statement(directory=directory, group=group, users=users, user_ids=user_ids)
            if events is not None:
                return group, events
        return self.locked.members_add(directory=directory, group_id=group_id, user_ids=user_ids, change=change)


def _computed(change: UserChange, *, read_at: Any, computed: DirectoryUser, names: list[str]) -> UserChange:
    """`change`, answered from what it already computed (`computed`, the columns `names`) when the row it is
    given is still the one read (same `updated_at`: every write changes it), else run again."""

    def apply(user: DirectoryUser) -> list[str] | None:
        if user.updated_at != read_at or user.held:
            return change(user)
        for name in names:
            setattr(user, name, getattr(computed, name))
        return names

    return apply


def _user_unlocked(*, directory: Directory, user_id: Any, known: list[DirectoryUser] | None) -> DirectoryUser:
    """The user read without a lock: `known` when it came with the authentication, else read now."""
    if known is not None:
        user = known[0] if known else None
    else:
        user = scim_user_get(directory=directory, user_id=user_id)
    if user is None:
        raise not_found("User")
    return user
