"""The store's reads on SQLite: through the selectors (the ORM and core.rows, SQL that any database runs), the
comparison document in SQLite's JSON1 functions. scim.storage.postgres has PostgreSQL's."""

from __future__ import annotations

from typing import Any

from directories.models import Directory, DirectoryUser
from directories.pages import UsersPage
from directories.selectors import directory_get
from scim.selectors import FirstRead, scim_users_page
from scim.storage.query.documents import SqliteDocuments


class SqliteReads:
    """`Reads` without joins or locks of one database: the first read is made by the handler, after the
    directory's (`read` is left as it is), and every page counts its rows."""

    documents = SqliteDocuments()

    def directory_with(self, *, directory_id: Any, read: FirstRead) -> Directory | None:
        return directory_get(directory_id=directory_id)

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
        # `page` is only ever read by PostgresReads.directory_with; the users' groups are read by the caller.
        return scim_users_page(
            directory=directory, condition=condition, start_index=start_index, count=count, order=order
        )
