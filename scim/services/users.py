"""SCIM writes of users: create, replace, patch, delete, each with its events (written by scim.storage)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError

from directories.models import Directory, DirectoryUser
from scim import storage
from scim.protocol.documents import patch_operations, require_object, user_finalize, user_patch
from scim.protocol.errors import uniqueness
from scim.protocol.versions import Precondition
from scim.storage.store import Events


def scim_user_create(*, directory: Directory, body: Any) -> tuple[DirectoryUser, Events]:
    user_id = uuid.uuid4()
    raw, columns = user_finalize(require_object(body), user_id, default_active=True)
    user = DirectoryUser(id=user_id, directory=directory, raw=raw, **columns.as_dict())
    try:
        return user, storage.current().user_insert(directory=directory, user=user)
    except IntegrityError:
        raise uniqueness("A user with this userName") from None


def _user_apply(user: DirectoryUser, build: Any) -> list[str] | None:
    """Set the new document `build(user)` on `user`; the columns to write, or None when nothing changed."""
    raw, columns = user_finalize(build(user), user.id)
    new_values = columns.as_dict()
    changed = [f for f, v in new_values.items() if getattr(user, f) != v]
    if raw == user.raw and not changed:
        return None  # nothing changed: no write, no event (docs/contract.md, webhooks)
    for name, value in new_values.items():
        setattr(user, name, value)
    user.raw = raw
    return [*new_values, "raw"]


def _user_write(
    *,
    directory: Directory,
    user_id: Any,
    build: Any,
    known: list[DirectoryUser] | None,
    if_match: Precondition | None,
) -> tuple[DirectoryUser, Events]:
    """Write the user's new document `build(user)` if it changed. `known`: the user as read with the
    authentication (scim.processor.process; [] when there is no such user), None when it was not read.
    `if_match`: the request's If-Match, checked against the row the write changes (412)."""
    try:
        return storage.current().user_update(
            directory=directory,
            user_id=user_id,
            change=lambda user: _user_apply(user, build),
            known=known,
            if_match=if_match,
        )
    except IntegrityError:
        raise uniqueness("A user with this userName") from None


def scim_user_replace(
    *,
    directory: Directory,
    user_id: Any,
    body: Any,
    known: list[DirectoryUser] | None = None,
    if_match: Precondition | None = None,
) -> tuple[DirectoryUser, Events]:
    body = require_object(body)

    def build(user: DirectoryUser) -> dict[str, Any]:
        doc = dict(body)
        if not any(k.lower() == "active" for k in doc) and "active" in user.raw:
            doc["active"] = user.active  # decision: PUT without `active` keeps it (interop O10)
        return doc

    return _user_write(directory=directory, user_id=user_id, build=build, known=known, if_match=if_match)


def scim_user_patch(
    *,
    directory: Directory,
    user_id: Any,
    body: Any,
    known: list[DirectoryUser] | None = None,
    if_match: Precondition | None = None,
) -> tuple[DirectoryUser, Events]:
    operations = patch_operations(body)

    def build(user: DirectoryUser) -> dict[str, Any]:
        return user_patch(user.raw, operations)

    return _user_write(directory=directory, user_id=user_id, build=build, known=known, if_match=if_match)


def scim_user_delete(
    *,
    directory: Directory,
    user_id: Any,
    known: list[DirectoryUser] | None = None,
    if_match: Precondition | None = None,
) -> Events:
    return storage.current().user_delete(directory=directory, user_id=user_id, known=known, if_match=if_match)
