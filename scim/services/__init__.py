"""Writes of the SCIM surface: users, groups and memberships, each with its events in one transaction.

Every service takes the directory explicitly and returns the contract §5 event payloads it recorded
(scim.storage records them in the outbox with the change; they are sent when the directory has a webhook).
Uniqueness comes from the database: an IntegrityError on insert or update becomes 409 uniqueness.

Decisions (docs/decisions.md):
- PUT that omits `active` keeps the current value (RFC 7644 §3.5.1 lets a server treat omitted
  attributes as not asserted; Okta AIW apps PUT users without it).
- Deleting a user sends `user.deleted` only, not a `group.user_removed` per membership (as Jackson
  and WorkOS do): consumers treat a deleted user as gone from every group.
- PUT on a group without `members` keeps the members; with `members` it sets exactly that list.

The package is split by resource type: `users` and `groups` (memberships included).
"""

from __future__ import annotations

from scim.services.groups import (
    scim_group_create,
    scim_group_delete,
    scim_group_patch,
    scim_group_replace,
)
from scim.services.users import (
    scim_user_create,
    scim_user_delete,
    scim_user_patch,
    scim_user_replace,
)

__all__ = [
    "scim_group_create",
    "scim_group_delete",
    "scim_group_patch",
    "scim_group_replace",
    "scim_user_create",
    "scim_user_delete",
    "scim_user_patch",
    "scim_user_replace",
]
