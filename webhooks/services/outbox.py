# ruff: noqa: S608  (the SQL is assembled from quoted table and column names; every value is a parameter)
"""The outbox table's statements, all of them: recording a directory's events with their numbers (both write
paths), and for the drain: claiming a batch (or one event), closing the attempted rows with their
outcomes, putting back the unattempted ones.

Numbering and inserting a directory's events is written once, in `PreparedEvents`: `insert_sql` is the
PostgreSQL text (the counter's upsert and the events' insert as `WITH` queries), which the services'
path runs as a statement of its own (`events_insert`) and the single-statement SCIM writes of
scim.storage compose into theirs; SQLite, which has no data-modifying `WITH`, takes its numbers with
the same upsert and then inserts the rows (docs/events.md).

Roster runs on PostgreSQL and SQLite, and each statement here is written for both. Identifiers come
from the model and are quoted; every value is a parameter. The texts are built once per database
(`_sql`, the one cache of webhooks)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from django.db import connection
from django.utils import timezone

from directories.models import Directory
from webhooks.models import EventSequence, EventState, WebhookEvent

_statements: dict[tuple[str, str], str] = {}


def _sql(name: str, build: Callable[[], str]) -> str:
    """The statement text `name` for the running database, built once per process by `build`."""
    key = (connection.vendor, name)
    text = _statements.get(key)
    if text is None:
        text = _statements[key] = build()
    return text


def _columns() -> tuple[str, dict[str, str]]:
    """The outbox table's quoted name and column names, for the builders of the texts below."""
    meta = WebhookEvent._meta
    quote = connection.ops.quote_name
    return quote(meta.db_table), {f.name: quote(f.column) for f in meta.concrete_fields}


# --- recording: a directory's events, numbered as the transaction's last write ------------------------

_MICROSECOND = timedelta(microseconds=1)

# Why an event of a directory without a webhook is recorded already closed: it is in the changes feed
# (an application may only pull), but nothing will ever send it.
NO_WEBHOOK = "directory has no webhook endpoint"


def outbox_rows(directory_id: uuid.UUID, target: str, payloads: list[dict[str, Any]]) -> list[WebhookEvent]:
    """The outbox rows of `payloads` (contract §5 payloads, their "id" the row's), not written yet."""
    # Explicit created_at, one microsecond apart, so the events of one transaction are claimed in the order
    # they were recorded (ties on created_at would fall back to the random id).
    now = timezone.now()
    return [
        WebhookEvent(
            id=uuid.UUID(payload["id"]),
            directory_id=directory_id,
            event_type=payload["event"],
            target=target,
            body=orjson.dumps(payload).decode(),
            created_at=now + i * _MICROSECOND,
        )
        for i, payload in enumerate(payloads)
    ]


def body_parts(payload: dict[str, Any]) -> tuple[str, str]:
    """A directory event's JSON body around its sequence number: `prefix + str(n) + suffix` is the body,
    with "sequence" right after "created_at". The number is known only once the event is recorded (the
    PostgreSQL statement joins the parts itself), and the body must be the exact bytes sent."""
    head = {key: payload[key] for key in ("id", "event", "created_at")}
    rest = {key: value for key, value in payload.items() if key not in head and key != "sequence"}
    return orjson.dumps(head).decode()[:-1] + ',"sequence":', "," + orjson.dumps(rest).decode()[1:]


class PreparedEvents:
    """A directory's events built but not yet written: `payloads` (contract §5, "sequence" still to come),
    `rows` their outbox rows and `parts` their bodies around the number (body_parts), all three in
    recording order. Every directory records its events (they are its changes feed); without a webhook
    they are recorded `dropped` (`send` is False) and nothing asks for a drain."""

    __slots__ = ("directory_id", "parts", "payloads", "rows", "send")

    def __init__(self, directory: Directory, payloads: list[dict[str, Any]]) -> None:
        self.directory_id = directory.id
        self.payloads = payloads
        self.parts = [body_parts(payload) for payload in payloads]
        self.rows = outbox_rows(directory.id, "directory", payloads)
        self.send = directory.has_webhook
        if not self.send:
            for row in self.rows:
                row.state, row.state_reason, row.finished_at = EventState.DROPPED, NO_WEBHOOK, row.created_at

    def numbered(self, last: int, indexes: list[int] | None = None) -> list[dict[str, Any]]:
        """Give the events written (all, or only those at `indexes`, in recording order) the numbers up to
        `last`, the directory's counter after the write; returns their payloads."""
        chosen = list(range(len(self.rows))) if indexes is None else indexes
        first = last - len(chosen) + 1
        for offset, i in enumerate(chosen):
            sequence = first + offset
            prefix, suffix = self.parts[i]
            self.rows[i].sequence = self.payloads[i]["sequence"] = sequence
            self.rows[i].body = f"{prefix}{sequence}{suffix}"
        return [self.payloads[i] for i in chosen]

    def insert_sql(self, *, keys: list[Any] | None = None, when: str = "TRUE") -> tuple[str, list[Any]]:
        """PostgreSQL: `WITH` queries (without the `WITH`) that record the events whose key (`keys`, parallel
        to the rows) satisfies `when` (`{key}` in it stands for the key), with the directory's next numbers:

        - `c`: the chosen events, numbered 1..k in recording order;
        - `q`: the directory's counter raised by k (an upsert that locks the counter row until the
          statement's transaction commits, so numbers follow commit order: docs/events.md); nothing
          when k is 0;
        - `e`: the outbox rows, each body joined around its number.

        A statement that composes them reads `(SELECT last FROM q)`, the counter after it (None when it
        wrote no event)."""
        first = self.rows[0]
        keys = [None] * len(self.rows) if keys is None else keys
        values = ", ".join([_CHOSEN_ROW] * len(self.rows))
        params: list[Any] = []
        for i, (key, row, (prefix, suffix)) in enumerate(zip(keys, self.rows, self.parts, strict=True)):
            params += [key, i, row.id, row.event_type, prefix, suffix, row.created_at]
        # The rows differ only in what `c` carries: target, state and reason are those of every row, and a
        # row closed at once (dropped: no webhook) is finished when it is recorded.
        params += [self.directory_id, self.directory_id, first.target, first.state, first.state_reason]
        params.append(first.finished_at is not None)
        chosen = (
            f"c AS (SELECT v.*, row_number() OVER (ORDER BY v.o) AS n FROM (VALUES {values}) "
            f"AS v(k, o, i, t, p, s, at) WHERE {when.replace('{key}', 'v.k')})"
        )
        return f"{chosen}, {_sql('insert-numbered', _insert_numbered)}", params


# One chosen event: (its key, its place in recording order, id, type, body prefix, body suffix, created_at).
_CHOSEN_ROW = "(CAST(%s AS uuid), CAST(%s AS integer), CAST(%s AS uuid), %s, %s, %s, CAST(%s AS timestamptz))"


def _counter_upsert(source: str) -> str:
    """`INSERT INTO <counter> (directory_id, last) <source> ON CONFLICT … DO UPDATE … RETURNING last`: the
    directory's counter raised by the count `source` gives (docs/events.md), on either database."""
    quote = connection.ops.quote_name
    table, key, last = quote(EventSequence._meta.db_table), quote("directory_id"), quote("last")
    return (
        f"INSERT INTO {table} ({key}, {last}) {source} "
        f"ON CONFLICT ({key}) DO UPDATE SET {last} = {table}.{last} + excluded.{last} RETURNING {last} AS last"
    )


def _insert_numbered() -> str:
    table, c = _columns()
    columns = ", ".join(
        c[name]
        for name in (
            "id", "directory_id", "event_type", "target", "body", "state", "state_reason", "created_at",
            "finished_at", "sequence", "attempts", "resend",
        )
    )  # fmt: skip
    number = "q.last - k.n + c.n"
    counter = _counter_upsert("SELECT CAST(%s AS uuid), count(*) FROM c HAVING count(*) > 0")
    return (
        f"q AS ({counter}), "
        f"e AS (INSERT INTO {table} ({columns}) SELECT c.i, CAST(%s AS uuid), c.t, %s, "
        f"c.p || CAST({number} AS text) || c.s, %s, %s, c.at, CASE WHEN CAST(%s AS boolean) THEN c.at END, "
        f"{number}, 0, FALSE FROM c, q, (SELECT count(*) AS n FROM c) AS k)"
    )


def events_insert(prepared: PreparedEvents) -> list[dict[str, Any]]:
    """Write every event of `prepared` with the directory's next numbers, inside the caller's transaction
    and as its last write (taking the numbers locks the directory's counter row until that transaction
    commits: docs/events.md); returns their payloads, numbered. PostgreSQL: `insert_sql` as one
    statement. SQLite: the counter's upsert, then the rows."""
    if connection.vendor == "postgresql":
        sql, params = prepared.insert_sql()
        with connection.cursor() as cursor:
            cursor.execute(f"WITH {sql} SELECT last FROM q", params)
            return prepared.numbered(int(cursor.fetchone()[0]))
    upsert = _sql("counter-take", lambda: _counter_upsert("VALUES (%s, %s)"))
    with connection.cursor() as cursor:
        cursor.execute(
            upsert, [EventSequence._meta.pk.get_db_prep_value(prepared.directory_id, connection), len(prepared.rows)]
        )
        payloads = prepared.numbered(int(cursor.fetchone()[0]))
    WebhookEvent.objects.bulk_create(prepared.rows)
    return payloads


def global_event_insert(directory_id: uuid.UUID, payload: dict[str, Any]) -> None:
    """Write a dsync.* event for the service-wide receiver (target "global"): no number, no counter."""
    WebhookEvent.objects.bulk_create(outbox_rows(directory_id, "global", [payload]))


# --- the drain: claims and outcomes ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claimed:
    id: uuid.UUID
    event_type: str
    body: str
    created_at: datetime | None = None  # when it was recorded (with the change): the start of its lag
    sequence: int | None = None  # None for dsync.* events
    resend: bool = False  # this attempt was asked for by a resend


def _batch_claim_text() -> str:
    """The batch claim. Its parameters: see `_batch_claim_params`."""
    table, c = _columns()
    pick = (
        f"SELECT {c['id']} FROM {table} "
        f"WHERE {c['directory_id']} = %s AND {c['target']} = %s AND {c['state']} = %s "
        f"ORDER BY {c['sequence']}, {c['created_at']}, {c['id']} LIMIT %s"
    )
    returned = ("id", "event_type", "body", "created_at", "sequence", "resend")
    if connection.vendor == "postgresql":
        # The pick must run once. As `id IN (subquery)` PostgreSQL may run it again for every row
        # it scans, and FOR UPDATE skips the rows this very statement already updated, so each run
        # yields the next rows and one claim takes far more than its LIMIT (seen on a table the
        # planner has no statistics for). A CTE with FOR UPDATE is evaluated exactly once.
        return (
            f"WITH picked AS MATERIALIZED ({pick} FOR UPDATE SKIP LOCKED) "
            f"UPDATE {table} SET {c['state']} = %s, {c['claimed_at']} = %s FROM picked "
            f"WHERE {table}.{c['id']} = picked.{c['id']} AND {table}.{c['state']} = %s "
            f"RETURNING {', '.join(f'{table}.{c[f]}' for f in returned)}"
        )
    # SQLite: one writer at a time, and the statement runs under the write lock; the outer
    # condition on `state` is what makes the claim exclusive.
    return (
        f"UPDATE {table} SET {c['state']} = %s, {c['claimed_at']} = %s "
        f"WHERE {c['id']} IN ({pick}) AND {c['state']} = %s "
        f"RETURNING {', '.join(c[f] for f in returned)}"
    )


def _batch_claim_params(claimed_at: Any, directory_id: uuid.UUID, target: str, limit: int) -> list[Any]:
    meta = WebhookEvent._meta
    claim = [EventState.SENDING, meta.get_field("claimed_at").get_db_prep_value(claimed_at, connection)]
    pick = [
        meta.get_field("directory_id").get_db_prep_value(directory_id, connection),
        target,
        EventState.PENDING,
        limit,
    ]
    if connection.vendor == "postgresql":
        return [*pick, *claim, EventState.PENDING]
    return [*claim, *pick, EventState.PENDING]


def as_uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def claim_batch(directory_id: uuid.UUID, target: str, limit: int, claimed_at: Any = None) -> list[Claimed]:
    """Up to `limit` pending events of one directory and target, oldest first, now `sending` and ours.
    `claimed_at` (default now) marks the claimed rows, so `unclaim` can find them."""
    claimed_at = claimed_at or timezone.now()
    params = _batch_claim_params(claimed_at, directory_id, target, limit)
    with connection.cursor() as cursor:
        cursor.execute(_sql("claim-batch", _batch_claim_text), params)
        rows = cursor.fetchall()
    # RETURNING gives no order; sort as the claim did: by sequence (a directory's own events), then
    # created_at (dsync.* events, which have none). created_at compares as datetimes on PostgreSQL and
    # as fixed-format text on SQLite; the id tie-break compares the same way as in SQL.
    rows.sort(key=lambda row: (row[4] or 0, row[3], row[0]))
    return [_claimed(row) for row in rows]


def _claimed(row: tuple[Any, ...] | list[Any]) -> Claimed:
    """A Claimed from (id, event_type, body, created_at, sequence, resend) as a claim returned them."""
    return Claimed(as_uuid(row[0]), row[1], row[2], _moment(row[3]), row[4], bool(row[5]))


def _moment(value: Any) -> datetime | None:
    """A created_at as the claim returned it: a datetime on PostgreSQL, Django's UTC text on SQLite."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if isinstance(value, datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value if isinstance(value, datetime) else None


def claim_one(event_id: uuid.UUID, claimed_at: Any = None) -> tuple[Claimed, uuid.UUID, str] | None:
    """This one event, if it is still pending: (event, its directory id, its target)."""
    claimed_at = claimed_at or timezone.now()
    meta = WebhookEvent._meta
    params = [
        EventState.SENDING,
        meta.get_field("claimed_at").get_db_prep_value(claimed_at, connection),
        meta.pk.get_db_prep_value(event_id, connection),
        EventState.PENDING,
    ]
    with connection.cursor() as cursor:
        cursor.execute(_sql("claim-one", _claim_one_text), params)
        row = cursor.fetchone()
    if row is None:
        return None
    return _claimed(row), as_uuid(row[6]), row[7]


def _claim_one_text() -> str:
    table, c = _columns()
    return (
        f"UPDATE {table} SET {c['state']} = %s, {c['claimed_at']} = %s "
        f"WHERE {c['id']} = %s AND {c['state']} = %s "
        f"RETURNING {c['id']}, {c['event_type']}, {c['body']}, {c['created_at']}, {c['sequence']}, "
        f"{c['resend']}, {c['directory_id']}, {c['target']}"
    )


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one attempted (or dropped) event ends: its final state and what the feed shows of it."""

    id: uuid.UUID
    state: str  # delivered, failed or dropped
    reason: str  # state_reason: the error message of a failure, the reason of a drop
    attempted_at: datetime | None  # None: no attempt was made (a drop)
    status_code: int | None


def close_sending(outcomes: list[Outcome]) -> list[uuid.UUID]:
    """Close the rows among `outcomes` still `sending` with their outcome (an attempt counts one more
    attempt); the ids actually closed. One statement: UPDATE … FROM a VALUES list of the outcomes."""
    if not outcomes:
        return []
    now = timezone.now()
    meta = WebhookEvent._meta
    fields = [meta.pk, meta.get_field("state"), meta.get_field("state_reason")]
    fields += [meta.get_field("last_attempt_at"), meta.get_field("status_code")]
    values = ", ".join([_sql("close-values-row", lambda: _close_values_row(fields))] * len(outcomes))
    head, tail = _sql("close-head", _close_head), _sql("close-tail", _close_tail)
    sql = f"{head} FROM (VALUES {values}) AS v {tail}"
    params: list[Any] = [meta.get_field("finished_at").get_db_prep_value(now, connection), False]
    values_params: list[Any] = []
    for outcome in outcomes:
        row = [outcome.id, outcome.state, outcome.reason[:255], outcome.attempted_at, outcome.status_code]
        values_params += [f.get_db_prep_value(value, connection) for f, value in zip(fields, row, strict=True)]
    # Parameters in the order of the statement's placeholders: SET (finished_at, resend), VALUES, WHERE.
    params = [params[0], params[1], *values_params, EventState.SENDING]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [as_uuid(row[0]) for row in cursor.fetchall()]


def _close_values_row(fields: list[Any]) -> str:
    if connection.vendor == "postgresql":  # a VALUES list has no column types of its own there
        return "(" + ", ".join(f"CAST(%s AS {f.cast_db_type(connection)})" for f in fields) + ")"
    # SQLite compares by the stored text; a CAST to its "datetime" would turn the text into a number.
    return "(" + ", ".join(["%s"] * len(fields)) + ")"


def _close_head() -> str:
    table, c = _columns()
    return (
        f"UPDATE {table} SET {c['state']} = v.column2, {c['state_reason']} = v.column3, "
        f"{c['finished_at']} = %s, "
        f"{c['attempts']} = {table}.{c['attempts']} + (CASE WHEN v.column4 IS NULL THEN 0 ELSE 1 END), "
        f"{c['last_attempt_at']} = COALESCE(v.column4, {table}.{c['last_attempt_at']}), "
        f"{c['status_code']} = CASE WHEN v.column4 IS NULL THEN {table}.{c['status_code']} ELSE v.column5 END, "
        f"{c['resend']} = %s"
    )


def _close_tail() -> str:
    table, c = _columns()
    return f"WHERE {table}.{c['id']} = v.column1 AND {table}.{c['state']} = %s RETURNING {table}.{c['id']}"


def release(events: list[Claimed]) -> None:
    """Claimed but never attempted: back to `pending`, to be claimed again (oldest first, as before)."""
    WebhookEvent.objects.filter(pk__in=[e.id for e in events], state=EventState.SENDING).update(
        state=EventState.PENDING, claimed_at=None
    )


def unclaim(claimed_at: Any, *, directory_id: uuid.UUID | None = None, event_id: uuid.UUID | None = None) -> int:
    """Put back the rows a claim marked with `claimed_at` (of one directory's batch, or one event), when
    that claim's connection died: PostgreSQL may have committed it although its answer never arrived,
    and those rows, never attempted, would otherwise wait in `sending` until the sweep reports them
    lost. A claim time is unique to its claim down to the microsecond in practice: two claims of one
    key at the same microsecond would need two drains of it in the same instant."""
    rows = WebhookEvent.objects.filter(state=EventState.SENDING, claimed_at=claimed_at)
    rows = rows.filter(directory_id=directory_id) if event_id is None else rows.filter(pk=event_id)
    return rows.update(state=EventState.PENDING, claimed_at=None)
