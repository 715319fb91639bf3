"""What a lost database means to every surface: the exceptions that say so, and how long clients wait.

`OperationalError`/`InterfaceError` are how psycopg's connection errors arrive, and so do SQLite's
"database is locked" and PostgreSQL's lock and statement timeouts: an operational condition, answered
with a 503 and `Retry-After`, never a bug's 500.
"""

from __future__ import annotations

from django.db import InterfaceError, OperationalError

# Long enough for a database failover or a restart to finish, short enough that a client retrying on
# the header does not wait noticeably longer than the outage.
RETRY_AFTER_SECONDS = 5
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)
