"""SCIM writes of groups and their memberships, each with its events (written by scim.storage)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError

from directories.models import Directory, DirectoryGroup
from scim import storage
from scim.protocol.documents import (
    MemberPlan,
    group_finalize,
    group_patch,
    member_ids,
    patch_operations,
    require_object,
)
from scim.protocol.errors import ScimError, uniqueness
from scim.protocol.versions import Precondition
from scim.storage.store import CHUNK, Events, GroupChange


def _group_apply(group: DirectoryGroup, build: Any) -> tuple[list[str] | None, MemberPlan]:
    """Set the new document of `build(group)` on `group`; the columns to write (None when the document
    is unchanged) and the member plan."""
    doc, plan = build(group)
    raw, columns = group_finalize(doc, group.id)
    if raw == group.raw and all(getattr(group, f) == v for f, v in columns.items()):
        return None, plan
    for name, value in columns.items():
        setattr(group, name, value)
    group.raw = raw
    return [*columns, "raw"], plan


def _change(build: Any) -> GroupChange:
    return lambda group: _group_apply(group, build)


def scim_group_create(*, directory: Directory, body: Any) -> tuple[DirectoryGroup, Events]:
    body = require_object(body)
    group_id = uuid.uuid4()
    raw, columns = group_finalize(body, group_id)
    plan = MemberPlan()
    members_key = next((k for k in body if k.lower() == "members"), None)
    if members_key is not None and body[members_key] is not None:
        plan.do_add(member_ids(body[members_key], strict=True))
    group = DirectoryGroup(id=group_id, directory=directory, raw=raw, **columns)
    try:
        return group, storage.current().group_insert(directory=directory, group=group, plan=plan)
    except IntegrityError:
        raise uniqueness("A group with this displayName") from None


def members_added(operations: list[tuple[str, Any, Any, bool]]) -> list[uuid.UUID] | None:
    """The user ids of a group PATCH whose operations only add members (Okta sends one PATCH per
    member), in order and without repeats; None for any other PATCH, one with a malformed member (the
    locked path answers it: 404 for an unknown group comes first) or one adding more than CHUNK."""
    if not all(op == "add" and (path or "").strip().lower() == "members" for op, path, *_ in operations):
        return None
    try:
        user_ids = list(dict.fromkeys(i for _o, _p, value, _h in operations for i in member_ids(value, strict=True)))
    except ScimError:
        return None
    return user_ids if 0 < len(user_ids) <= CHUNK else None


def scim_group_replace(
    *, directory: Directory, group_id: Any, body: Any, if_match: Precondition | None = None
) -> tuple[DirectoryGroup, Events]:
    body = require_object(body)

    def build(group: DirectoryGroup) -> tuple[dict[str, Any], MemberPlan]:
        plan = MemberPlan()
        members_key = next((k for k in body if k.lower() == "members"), None)
        if members_key is not None:
            # Decision: PUT with `members` sets exactly that list; PUT without it leaves members alone.
            plan.do_replace(member_ids(body[members_key] or [], strict=True))
        return body, plan

    try:
        return storage.current().group_update(
            directory=directory, group_id=group_id, change=_change(build), if_match=if_match
        )
    except IntegrityError:
        raise uniqueness("A group with this displayName") from None


def scim_group_patch(
    *, directory: Directory, group_id: Any, body: Any, if_match: Precondition | None = None
) -> tuple[DirectoryGroup, Events]:
    operations = patch_operations(body)

    def build(group: DirectoryGroup) -> tuple[dict[str, Any], MemberPlan]:
        return group_patch(group.raw, operations)

    store = storage.current()
    # A PATCH that only adds members names its users before the group is read: a store can read the
    # group and those users together.
    # (With If-Match, the locked path: the version is checked under the group's lock.)
    user_ids = members_added(operations) if if_match is None else None
    try:
        if user_ids is not None:
            return store.members_add(directory=directory, group_id=group_id, user_ids=user_ids, change=_change(build))
        return store.group_update(directory=directory, group_id=group_id, change=_change(build), if_match=if_match)
    except IntegrityError:
        raise uniqueness("A group with this displayName") from None


def scim_group_delete(*, directory: Directory, group_id: Any, if_match: Precondition | None = None) -> Events:
    return storage.current().group_delete(directory=directory, group_id=group_id, if_match=if_match)
