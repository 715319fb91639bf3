"""Where the SCIM path's reads and writes meet the database: one interface, `Store` (store.py), three stores
built from two write strategies and two databases' reads, and the one place that picks the store of the
running request (`current`).

- `locked.LockedStore`: every write in an atomic block under the row's lock, through the row writer. With
  `sqlite_reads.SqliteReads` on SQLite; with `postgres.PostgresReads` on PostgreSQL inside a caller's
  transaction (the embedding API).
- `statements.StatementStore`: PostgreSQL outside any transaction (every HTTP request): the hot writes as
  one statement each (their SQL in postgres.py), everything else handed to the locked store it holds.
- `events`: the webhook events both strategies record; `query/`: filters and sortBy as SQL (`filter`,
  `sort`), on the comparison document of each database (`documents`).

The database-specific SQL of the SCIM path is here: PostgreSQL's in postgres.py, the comparison
document's of both databases in query/documents.py (the constant-cost user pages are directories.pages,
shared with the REST API).
"""

from __future__ import annotations

from django.db import connection

from scim.storage.locked import LockedStore
from scim.storage.postgres import PostgresReads
from scim.storage.sqlite_reads import SqliteReads
from scim.storage.statements import StatementStore
from scim.storage.store import Store

_SQLITE = LockedStore(SqliteReads())
_POSTGRES = LockedStore(PostgresReads())
_STATEMENTS = StatementStore(_POSTGRES)


def current() -> Store:
    """The store for the running request: decided by the database and by whether a caller's transaction
    is open (the single statements are transactions of their own, so they run only outside one)."""
    if connection.vendor != "postgresql":
        return _SQLITE
    return _POSTGRES if connection.in_atomic_block else _STATEMENTS


__all__ = ["Store", "current"]
