"""Where the SCIM path's reads and writes meet the database: one interface, `portable.Store`, and the
one place that picks its implementation for the running request (`current`).

- `portable.Store`: every write in an atomic block under the row's lock, through the row writer; any
  database (SQLite for development).
- `postgres.PostgresStore`: the same locked path with PostgreSQL's lock modes, its LATERAL join of the
  authentication with the first read and its constant-cost user pages; used inside a caller's
  transaction (the embedding API).
- `postgres.PostgresStatements`: PostgreSQL outside any transaction (every HTTP request): the hot
  writes as one statement each, redone on the locked path when the row changed since it was read.

Each store also carries `documents`, the SQL of filters and sorts on the comparison document for its
database (`portable.DocumentSql`, SQLite's JSON1; `postgres.PostgresDocumentSql`, jsonb). All
PostgreSQL-only SQL of the SCIM path lives in `postgres.py`.
"""

from __future__ import annotations

from django.db import connection

from scim.storage.portable import Store
from scim.storage.postgres import PostgresStatements, PostgresStore

_PORTABLE = Store()
_POSTGRES = PostgresStore()
_STATEMENTS = PostgresStatements()


def current() -> Store:
    """The store for the running request: decided by the database and by whether a caller's transaction
    is open (the single statements are transactions of their own, so they run only outside one)."""
    if connection.vendor != "postgresql":
        return _PORTABLE
    return _POSTGRES if connection.in_atomic_block else _STATEMENTS
