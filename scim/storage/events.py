"""The webhook events of the SCIM writes (contract §5): what each one says, built from the rows as written.

Both write strategies (scim.storage.locked, scim.storage.statements) build their events here and hand
them to the outbox (webhooks.services), so a change says the same whichever path wrote it. A user's own
events (`user_event`, `user_updated`) are built by directories.rendering, which the deprovision guard also
uses when it applies an approved change (directories.guard).
"""

from __future__ import annotations

import uuid

from directories.models import Directory, DirectoryGroup, DirectoryUser
from directories.rendering import group_data, previous_attributes, user_data
from directories.selectors import user_groups_attach
from webhooks.services.recording import EventSpec


def group_updated(group: DirectoryGroup, before: DirectoryGroup) -> EventSpec:
    """`group.updated` for `group` as changed, with its `previous_attributes` against `before` (as above)."""
    data = group_data(group)
    return ("group.updated", data, previous_attributes(group_data(before), data))


def member_events(
    directory: Directory,
    group: DirectoryGroup,
    users: dict[uuid.UUID, DirectoryUser],
    removed: list[uuid.UUID],
    to_add: list[uuid.UUID],
    added: list[uuid.UUID],
) -> list[EventSpec]:
    """`group.user_removed` for each id of `removed`, then `group.user_added` for each id of `added` in
    the order of `to_add` (the request's order). Called once the memberships are written, so the users'
    roles (read in the same transaction) are those after the change."""
    gdata = group_data(group)
    if directory.role_map:
        user_groups_attach(users=[users[i] for i in [*removed, *added] if i in users])
    events: list[EventSpec] = []
    for user_id in removed:
        if user_id in users:
            events.append(("group.user_removed", user_data(users[user_id], directory=directory) | {"group": gdata}))
    order = {user_id: i for i, user_id in enumerate(to_add)}
    for user_id in sorted(added, key=order.__getitem__):
        events.append(("group.user_added", user_data(users[user_id], directory=directory) | {"group": gdata}))
    return events


def members_adding(
    directory: Directory, group: DirectoryGroup, users: dict[uuid.UUID, DirectoryUser], user_ids: list[uuid.UUID]
) -> list[EventSpec]:
    """`group.user_added` for each of `user_ids`, in order, built before the memberships are written (a
    single statement writes only those it really adds: scim.storage.statements). The users' roles are
    those once added: their groups so far, and this one."""
    gdata = group_data(group)
    if directory.role_map:
        user_groups_attach(users=[users[user_id] for user_id in user_ids])
        for user_id in user_ids:
            joined = users[user_id].member_of or []
            if all(group_id != group.id for group_id, _name in joined):
                users[user_id].member_of = [*joined, (group.id, group.display_name)]
    return [
        ("group.user_added", user_data(users[user_id], directory=directory) | {"group": gdata}) for user_id in user_ids
    ]
