"""Pages of one directory's users on PostgreSQL, at the same cost at any size and position (the SCIM
list and the REST users list, both in (created_at, id) order).

Read naively, two parts of a list page grow with the directory: COUNT(*) for totalResults, and the
OFFSET, which walks every index entry before the page. Here instead:

- totalResults is `SUM(created) - SUM(deleted)` over the directory's `UserTally` rows (at most 16,
  kept by triggers), read by the same statement as the page, so the two always agree.
- A deep page starts from a *mark*: the (created_at, id) key of every `MARK_EVERY`-th user in list
  order, built by one statement and kept in this process per directory, with the tally sums it was
  built at (its generation). The page is read from the nearest mark with an OFFSET below
  `MARK_EVERY`. Every user created or deleted since changes the sums; the page statement returns
  them, and a page read from stale marks is read again from the start of the directory.
- Marks are built only when two deep reads in a row found the directory unchanged. A directory in
  the middle of a provisioning run keeps paging by OFFSET (what it cost before) instead of paying
  for a rebuild on every request; once it is quiet, every position costs the same.

A page costs the same at any position; building the marks walks the directory's index once; each web
worker builds its own. Kept for speed: bench/README.md, "Code kept for speed", "Position marks for deep
pages".
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from core.rows import RowReader, rows_cursor
from directories.models import DirectoryUser, UserTally

MARK_EVERY = 1000
_MAX_DIRECTORIES = 256  # directories whose marks one process keeps (least recently used dropped)

Generation = tuple[int, int]


@dataclass(frozen=True)
class _Marks:
    generation: Generation
    keys: tuple[tuple[Any, Any], ...] | None  # None: seen at this generation, not built yet


_marks: OrderedDict[uuid.UUID, _Marks] = OrderedDict()
_marks_lock = threading.Lock()  # the development server is threaded


def _marks_get(directory_id: uuid.UUID) -> _Marks | None:
    with _marks_lock:
        found = _marks.get(directory_id)
        if found is not None:
            _marks.move_to_end(directory_id)
        return found


def _marks_put(directory_id: uuid.UUID, marks: _Marks) -> None:
    with _marks_lock:
        _marks[directory_id] = marks
        _marks.move_to_end(directory_id)
        while len(_marks) > _MAX_DIRECTORIES:
            _marks.popitem(last=False)


def marks_forget() -> None:
    """Drop every kept mark (tests)."""
    with _marks_lock:
        _marks.clear()


@dataclass
class UsersPage:
    """One page to read: where it starts (a mark or the directory's first user) and, once read, what
    came back. `directory_id` is only used to look up marks; the statement's own directory condition
    is what scopes the rows."""

    directory_id: uuid.UUID
    start_index: int
    count: int
    mark: int = -1  # index of the mark the page is read from, -1 for none
    generation: Generation | None = None  # of the marks used
    key: tuple[Any, Any] | None = None
    offset: int = 0  # from the mark, or from the first user
    result: tuple[Generation, list[Any]] | None = field(default=None, repr=False)

    @classmethod
    def plan(cls, directory_id: uuid.UUID, *, start_index: int, count: int, marks: bool = True) -> UsersPage:
        offset = start_index - 1
        kept = _marks_get(directory_id) if marks and offset >= MARK_EVERY else None
        if kept is None or not kept.keys:
            return cls(directory_id, start_index, count, offset=offset)
        mark = min(offset // MARK_EVERY, len(kept.keys) - 1)
        return cls(
            directory_id,
            start_index,
            count,
            mark=mark,
            generation=kept.generation,
            key=kept.keys[mark],
            offset=offset - mark * MARK_EVERY,
        )

    def sql(self, reader: RowReader[Any], *, directory: str = "%s") -> str:
        """The page statement: the page's rows (the reader's columns), each followed by the tally sums;
        one row of NULLs and the sums for an empty page. `directory`: the SQL for the directory's id,
        a parameter or a column of an enclosing query."""
        users = reader.table()
        tally = connection.ops.quote_name(UserTally._meta.db_table)
        after = ' AND (u."created_at", u."id") >= (%s, %s)' if self.key is not None else ""
        ids = (
            f'SELECT u."id" FROM {users} u WHERE u."directory_id" = {directory}{after}'  # noqa: S608 - fixed text
            ' ORDER BY u."created_at", u."id" LIMIT %s OFFSET %s'
        )
        page = reader.sql(f'{{table}}."id" IN ({ids})')
        sums = (
            'SELECT COALESCE(SUM(t."created"), 0) AS "created", COALESCE(SUM(t."deleted"), 0) AS "deleted"'  # noqa: S608
            f' FROM {tally} t WHERE t."directory_id" = {directory}'
        )
        return (
            f'SELECT p.*, s."created", s."deleted" FROM ({sums}) AS s'  # noqa: S608 - fixed text
            f' LEFT JOIN LATERAL ({page}) AS p ON TRUE ORDER BY p."created_at", p."id"'
        )

    def params(self, directory: Any = None) -> list[Any]:
        """The statement's parameters; `directory` given when the statement takes it as a parameter."""
        own = [directory, directory] if directory is not None else []  # the sums', then the page's
        key = list(self.key) if self.key is not None else []
        return [*own, *key, self.count, self.offset]

    def take(self, rows: list[tuple[Any, ...]], reader: RowReader[Any]) -> None:
        """Keep what the statement returned (rows as `sql` lays them out)."""
        generation = (int(rows[0][-2]), int(rows[0][-1]))
        self.result = (generation, reader.build_many(row[:-2] for row in rows if row[0] is not None))


def _read(page: UsersPage, directory_id: uuid.UUID, reader: RowReader[Any]) -> None:
    with rows_cursor() as cursor:
        cursor.execute(page.sql(reader), page.params(directory_id))
        page.take(cursor.fetchall(), reader)


def directory_users_total(*, directory_id: uuid.UUID) -> int:
    """The number of the directory's users, from the tally (PostgreSQL only): what an unfiltered list
    reports as totalResults however it is ordered, without counting the rows."""
    tally = connection.ops.quote_name(UserTally._meta.db_table)
    sql = f'SELECT COALESCE(SUM(t."created") - SUM(t."deleted"), 0) FROM {tally} t WHERE t."directory_id" = %s'  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, [directory_id])
        return int(cursor.fetchone()[0])


def _marks_build(directory_id: uuid.UUID) -> None:
    """Every MARK_EVERY-th key of the directory in list order, and the tally sums of the same snapshot."""
    users = connection.ops.quote_name(DirectoryUser._meta.db_table)
    tally = connection.ops.quote_name(UserTally._meta.db_table)
    sql = (
        'WITH RECURSIVE m(n, "created_at", "id") AS ('  # noqa: S608 - fixed text, values are parameters
        f'(SELECT 0, u."created_at", u."id" FROM {users} u WHERE u."directory_id" = %s'
        ' ORDER BY u."created_at", u."id" LIMIT 1)'
        ' UNION ALL SELECT m.n + 1, nx."created_at", nx."id" FROM m, LATERAL ('
        f'SELECT u."created_at", u."id" FROM {users} u WHERE u."directory_id" = %s'
        ' AND (u."created_at", u."id") > (m."created_at", m."id")'
        ' ORDER BY u."created_at", u."id" OFFSET %s LIMIT 1) AS nx)'
        ' SELECT s."created", s."deleted", m."created_at", m."id" FROM ('
        'SELECT COALESCE(SUM(t."created"), 0) AS "created", COALESCE(SUM(t."deleted"), 0) AS "deleted"'
        f' FROM {tally} t WHERE t."directory_id" = %s) AS s LEFT JOIN m ON TRUE ORDER BY m.n'
    )
    pk = directory_id
    with connection.cursor() as cursor:
        cursor.execute(sql, [pk, pk, MARK_EVERY - 1, pk])
        rows = cursor.fetchall()
    keys = tuple((row[2], row[3]) for row in rows if row[2] is not None)
    _marks_put(directory_id, _Marks((int(rows[0][0]), int(rows[0][1])), keys))


def directory_users_page(
    *, directory_id: uuid.UUID, start_index: int, count: int, reader: RowReader[Any], page: UsersPage | None = None
) -> tuple[int, list[Any]]:
    """The number of the directory's users and `count` of them from position `start_index` (1-based),
    as instances built by `reader` (which reads "id" and "created_at" at least). PostgreSQL only.
    `page`: planned and possibly already read with the request's authentication
    (scim.storage.postgres)."""
    if page is None or page.start_index != start_index or page.count != count:
        page = UsersPage.plan(directory_id, start_index=start_index, count=count)
    if page.result is None:
        _read(page, directory_id, reader)
    generation, rows = page.result  # type: ignore[misc]
    if page.mark >= 0 and generation != page.generation:
        # The directory changed since the marks were built: read this page from its first user.
        _marks_put(directory_id, _Marks(generation, None))
        page = UsersPage.plan(directory_id, start_index=start_index, count=count, marks=False)
        _read(page, directory_id, reader)
        generation, rows = page.result  # type: ignore[misc]
    elif page.mark < 0 and page.offset >= MARK_EVERY:
        seen = _marks_get(directory_id)
        if seen is not None and seen.generation == generation:
            _marks_build(directory_id)  # unchanged since the last deep read: later ones start from marks
        else:
            _marks_put(directory_id, _Marks(generation, None))
    return generation[0] - generation[1], rows
