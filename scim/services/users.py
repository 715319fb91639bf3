"""SCIM writes of users: create, replace, patch, delete, each with its events."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError, connection, transaction

from core.rows import RowWriter
from directories.models import Directory, DirectoryUser, GroupMembership
from directories.rendering import user_data
from scim import statements
from scim.documents import patch_operations, require_object, user_finalize, user_patch
from scim.errors import not_found, uniqueness
from scim.selectors import scim_user_get
from scim.statements import Events
from webhooks.services import events_record

_users = RowWriter(DirectoryUser)
USER_FIELDS = ["user_name", "user_name_key", "external_id", "first_name", "last_name", "email", "active"]


def scim_user_create(*, directory: Directory, body: Any) -> tuple[DirectoryUser, Events]:
    user_id = uuid.uuid4()
    raw, columns = user_finalize(require_object(body), user_id, default_active=True)
    user = DirectoryUser(id=user_id, directory=directory, raw=raw, **columns.as_dict())
    try:
        if statements.enabled():
            return user, statements.user_create(directory=directory, user=user)
        with transaction.atomic():
            _users.insert(user)
            events = events_record(directory=directory, events=[("user.created", user_data(user))])
    except IntegrityError:
        raise uniqueness("A user with this userName") from None
    return user, events


def _user_apply(user: DirectoryUser, build: Any) -> list[str] | None:
    """Set the new document `build(user)` on `user`; the columns to write, or None when nothing changed."""
    raw, columns = user_finalize(build(user), user.id)
    new_values = columns.as_dict()
    changed = [f for f, v in new_values.items() if getattr(user, f) != v]
    if raw == user.raw and not changed:
        return None  # nothing changed: no write, no event (issue 3 §9)
    for name, value in new_values.items():
        setattr(user, name, value)
    user.raw = raw
    return [*new_values, "raw"]


def _user_unlocked(*, directory: Directory, user_id: Any, known: list[DirectoryUser] | None) -> DirectoryUser | None:
    """The user as the single-statement path reads it, without a lock: `known` when the request read it
    with its authentication (scim.api; [] when there is no such user), else read now."""
    if known is not None:
        return known[0] if known else None
    return scim_user_get(directory=directory, user_id=user_id)


def _user_write(
    *, directory: Directory, user_id: Any, build: Any, known: list[DirectoryUser] | None = None
) -> tuple[DirectoryUser, Events]:
    """Compute the user's new document with `build(user)` and write it if it changed: in one statement
    conditional on the row being unchanged (PostgreSQL), else, or when it changed, under its row lock.
    `known`: see `_user_unlocked`."""
    try:
        if statements.enabled():
            user = _user_unlocked(directory=directory, user_id=user_id, known=known)
            if user is None:
                raise not_found("User")
            read_at = user.updated_at
            names = _user_apply(user, build)
            if names is None:
                return user, []
            events = statements.user_update(directory=directory, user=user, names=names, read_at=read_at)
            if events is not None:
                return user, events
        with transaction.atomic():
            user = scim_user_get(directory=directory, user_id=user_id, for_update=True)
            if user is None:
                raise not_found("User")
            names = _user_apply(user, build)
            if names is None:
                return user, []
            _users.update(user, names)
            events = events_record(directory=directory, events=[("user.updated", user_data(user))])
    except IntegrityError:
        raise uniqueness("A user with this userName") from None
    return user, events


def scim_user_replace(
    *, directory: Directory, user_id: Any, body: Any, known: list[DirectoryUser] | None = None
) -> tuple[DirectoryUser, Events]:
    body = require_object(body)

    def build(user: DirectoryUser) -> dict[str, Any]:
        doc = dict(body)
        if not any(k.lower() == "active" for k in doc) and "active" in user.raw:
            doc["active"] = user.active  # decision: PUT without `active` keeps it (interop O10)
        return doc

    return _user_write(directory=directory, user_id=user_id, build=build, known=known)


def scim_user_patch(
    *, directory: Directory, user_id: Any, body: Any, known: list[DirectoryUser] | None = None
) -> tuple[DirectoryUser, Events]:
    operations = patch_operations(body)

    def build(user: DirectoryUser) -> dict[str, Any]:
        return user_patch(user.raw, operations)

    return _user_write(directory=directory, user_id=user_id, build=build, known=known)


def scim_user_delete(*, directory: Directory, user_id: Any, known: list[DirectoryUser] | None = None) -> Events:
    if statements.enabled():
        user = _user_unlocked(directory=directory, user_id=user_id, known=known)
        if user is None:
            raise not_found("User")
        events = statements.user_delete(directory=directory, user=user)
        if events is not None:
            return events
    with transaction.atomic():
        user = scim_user_get(directory=directory, user_id=user_id, for_delete=True)
        if user is None:
            raise not_found("User")
        data = user_data(user)
        # Raw deletes: the memberships go in one statement, without Django's collector re-reading them.
        GroupMembership.objects.filter(user_id=user.id)._raw_delete(connection.alias)
        DirectoryUser.objects.filter(pk=user.id)._raw_delete(connection.alias)
        return events_record(directory=directory, events=[("user.deleted", data)])
