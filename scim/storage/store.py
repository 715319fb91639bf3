"""What the SCIM processor and services ask of the database: the `Store` interface, and `Reads`, the part of
it that differs by database. scim.storage.current() picks the store for the running request.

Every write records its events (contract §5) in the same transaction as the change and returns their
payloads; a uniqueness violation raises IntegrityError (the services turn it into 409). A write that
changes an existing row takes a `change(row)` callable from the service: it computes the new document
on the row as the store read it, sets it on the instance, and says which columns to write.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Protocol

from directories.models import Directory, DirectoryGroup, DirectoryUser
from directories.pages import UsersPage
from scim.protocol.documents import MemberPlan
from scim.protocol.versions import Precondition
from scim.selectors import FirstRead
from scim.storage.query.filter import Documents
from scim.storage.query.sort import SortDocuments

Events = list[dict[str, Any]]
# change(user) → the columns to write, None when the document is unchanged.
UserChange = Callable[[DirectoryUser], list[str] | None]
# change(group) → (the columns to write or None, the member plan of the request).
GroupChange = Callable[[DirectoryGroup], tuple[list[str] | None, MemberPlan]]

CHUNK = 500  # membership rows per statement; also the most users one fast member add may carry


class DocumentDialect(Documents, SortDocuments, Protocol):
    """The SQL of filters and sorts on the comparison document, for one database."""


class Reads(Protocol):
    """What differs by database in the store's reads."""

    @property
    def documents(self) -> DocumentDialect:
        """The SQL of filters and sorts on the comparison document (read-only: each database's own type)."""
        ...

    def directory_with(self, *, directory_id: Any, read: FirstRead) -> Directory | None:
        """The directory (None if unknown), with `read` filled in where the database reads both at once."""
        ...

    def users_page(
        self,
        *,
        directory: Directory,
        condition: Any,
        start_index: int,
        count: int,
        page: UsersPage | None = None,
        order: list[Any] | None = None,
        groups: bool = False,
    ) -> tuple[int, list[DirectoryUser]]:
        """The total and one page of the users matching `condition` (None: all), in `order` or (created, id);
        `page`: an unfiltered page read with the directory; `groups`: their groups may come along."""
        ...


class Store(Reads, Protocol):
    """The SCIM path's database: `Reads`, and the writes, each one transaction with its events."""

    # Whether a write to an existing row reads it first without a lock, so that the read can come with the
    # authentication's query (`known` below); the write then checks that the row did not change.
    optimistic: bool

    def user_insert(self, *, directory: Directory, user: DirectoryUser) -> Events:
        """Insert the user; records `user.created`."""
        ...

    def user_update(
        self,
        *,
        directory: Directory,
        user_id: Any,
        change: UserChange,
        known: list[DirectoryUser] | None = None,
        if_match: Precondition | None = None,
    ) -> tuple[DirectoryUser, Events]:
        """Apply `change` to the user; writes and records `user.updated` only if something changed. 404 if
        unknown; 412 unless `if_match` matches the row changed. `known`: the user as read with the
        authentication ([] for none), for an optimistic store."""
        ...

    def user_delete(
        self,
        *,
        directory: Directory,
        user_id: Any,
        known: list[DirectoryUser] | None = None,
        if_match: Precondition | None = None,
    ) -> Events:
        """Delete the user and its memberships; records `user.deleted` (404, 412, `known`: as above)."""
        ...

    def group_insert(self, *, directory: Directory, group: DirectoryGroup, plan: MemberPlan) -> Events:
        """Insert the group with the members of `plan`; records `group.created` and each member added."""
        ...

    def group_update(
        self, *, directory: Directory, group_id: Any, change: GroupChange, if_match: Precondition | None = None
    ) -> tuple[DirectoryGroup, Events]:
        """Apply `change` under the group's row lock: its document (`group.updated`), then its member plan
        (one event per membership really added or removed). 404, 412: as for users."""
        ...

    def members_add(
        self, *, directory: Directory, group_id: Any, user_ids: list[uuid.UUID], change: GroupChange
    ) -> tuple[DirectoryGroup, Events]:
        """`group_update` for a request that, as far as its body shows, only adds `user_ids` (at most CHUNK,
        in request order, without repeats); `change` is still the whole request."""
        ...

    def group_delete(self, *, directory: Directory, group_id: Any, if_match: Precondition | None = None) -> Events:
        """Delete the group and its memberships; records `group.deleted` (404, 412: as above)."""
        ...
