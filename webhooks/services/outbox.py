"""Hand-written statements on the outbox table: take a directory's next sequence numbers (as events are
recorded), and for the drain: claim a batch (or one event), close the attempted rows with their
outcomes, put back the unattempted ones. Identifiers come from the model and are quoted; every value
is a parameter. PostgreSQL and SQLite get one statement each; other databases a slower generic path."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models import F
from django.utils import timezone

from webhooks.models import EventSequence, EventState, WebhookEvent


@dataclass(frozen=True, slots=True)
class Claimed:
    id: uuid.UUID
    event_type: str
    body: str
    created_at: datetime | None = None  # when it was recorded (with the change): the start of its lag
    sequence: int | None = None  # None for dsync.* events
    resend: bool = False  # this attempt was asked for by a resend


_sequence_sql: dict[str, str] = {}


def sequence_take(directory_id: uuid.UUID, count: int) -> int:
    """Add `count` to the directory's event counter and return its new value: the events being recorded
    get the numbers last-count+1 .. last. The upsert locks the counter row until the transaction
    commits, so it must be the transaction's last write (docs/events.md). The same statement runs on
    PostgreSQL and on SQLite (3.35+: ON CONFLICT with RETURNING)."""
    sql = _sequence_sql.get(connection.vendor)
    if sql is None:
        quote = connection.ops.quote_name
        table = quote(EventSequence._meta.db_table)
        key, last = quote("directory_id"), quote("last")
        sql = _sequence_sql[connection.vendor] = (
            f"INSERT INTO {table} ({key}, {last}) VALUES (%s, %s) "  # noqa: S608
            f"ON CONFLICT ({key}) DO UPDATE SET {last} = {table}.{last} + excluded.{last} RETURNING {last}"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql, [EventSequence._meta.pk.get_db_prep_value(directory_id, connection), count])
        return int(cursor.fetchone()[0])


_names: dict[str, tuple[str, dict[str, str]]] = {}


def _columns() -> tuple[str, dict[str, str]]:
    """The outbox table's quoted name and column names, for the hand-written statements below."""
    names = _names.get(connection.vendor)
    if names is None:
        meta = WebhookEvent._meta
        quote = connection.ops.quote_name
        names = _names[connection.vendor] = (
            quote(meta.db_table),
            {f.name: quote(f.column) for f in meta.concrete_fields},
        )
    return names


_claim_sql: dict[str, str] = {}


def _batch_claim_sql() -> str:
    """The batch claim for this database. Identifiers come from the model and are quoted; every value
    is a parameter: state `sending`, claimed_at, directory_id, target, state `pending`, limit, state
    `pending`."""
    sql = _claim_sql.get(connection.vendor)
    if sql is None:
        table, c = _columns()
        pick = (
            f"SELECT {c['id']} FROM {table} "  # noqa: S608
            f"WHERE {c['directory_id']} = %s AND {c['target']} = %s AND {c['state']} = %s "
            f"ORDER BY {c['sequence']}, {c['created_at']}, {c['id']} LIMIT %s"
        )
        returned = ("id", "event_type", "body", "created_at", "sequence", "resend")
        if connection.vendor == "postgresql":
            # The pick must run once. As `id IN (subquery)` PostgreSQL may run it again for every row
            # it scans, and FOR UPDATE skips the rows this very statement already updated, so each run
            # yields the next rows and one claim takes far more than its LIMIT (seen on a table the
            # planner has no statistics for). A CTE with FOR UPDATE is evaluated exactly once.
            sql = (
                f"WITH picked AS MATERIALIZED ({pick} FOR UPDATE SKIP LOCKED) "  # noqa: S608
                f"UPDATE {table} SET {c['state']} = %s, {c['claimed_at']} = %s FROM picked "
                f"WHERE {table}.{c['id']} = picked.{c['id']} AND {table}.{c['state']} = %s "
                f"RETURNING {', '.join(f'{table}.{c[f]}' for f in returned)}"
            )
        else:
            # SQLite: one writer at a time, and the statement runs under the write lock; the outer
            # condition on `state` is what makes the claim exclusive.
            sql = (
                f"UPDATE {table} SET {c['state']} = %s, {c['claimed_at']} = %s "  # noqa: S608
                f"WHERE {c['id']} IN ({pick}) AND {c['state']} = %s "
                f"RETURNING {', '.join(c[f] for f in returned)}"
            )
        _claim_sql[connection.vendor] = sql
    return sql


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
    if connection.vendor not in ("postgresql", "sqlite"):
        return _claim_generic(
            WebhookEvent.objects.filter(directory_id=directory_id, target=target, state=EventState.PENDING)
            .order_by("sequence", "created_at", "id")
            .values_list("id", flat=True)[:limit],
            claimed_at,
        )
    params = _batch_claim_params(claimed_at, directory_id, target, limit)
    with connection.cursor() as cursor:
        cursor.execute(_batch_claim_sql(), params)
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
    if connection.vendor not in ("postgresql", "sqlite"):
        if not WebhookEvent.objects.filter(pk=event_id, state=EventState.PENDING).update(
            state=EventState.SENDING, claimed_at=claimed_at
        ):
            return None
        row = WebhookEvent.objects.values_list(
            "id", "event_type", "body", "created_at", "sequence", "resend", "directory_id", "target"
        ).get(pk=event_id)
    else:
        meta = WebhookEvent._meta
        table, c = _columns()
        sql = (
            f"UPDATE {table} SET {c['state']} = %s, {c['claimed_at']} = %s "  # noqa: S608
            f"WHERE {c['id']} = %s AND {c['state']} = %s "
            f"RETURNING {c['id']}, {c['event_type']}, {c['body']}, {c['created_at']}, {c['sequence']}, "
            f"{c['resend']}, {c['directory_id']}, {c['target']}"
        )
        params = [
            EventState.SENDING,
            meta.get_field("claimed_at").get_db_prep_value(claimed_at, connection),
            meta.pk.get_db_prep_value(event_id, connection),
            EventState.PENDING,
        ]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
    return _claimed(row), as_uuid(row[6]), row[7]


def _claim_generic(event_ids: Any, claimed_at: Any) -> list[Claimed]:
    """Databases without UPDATE ... RETURNING: one conditional UPDATE per event, then read them."""
    won = [
        event_id
        for event_id in list(event_ids)
        if WebhookEvent.objects.filter(pk=event_id, state=EventState.PENDING).update(
            state=EventState.SENDING, claimed_at=claimed_at
        )
    ]
    rows = WebhookEvent.objects.filter(pk__in=won).order_by("sequence", "created_at", "id")
    return [_claimed(row) for row in rows.values_list("id", "event_type", "body", "created_at", "sequence", "resend")]


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
    if connection.vendor not in ("postgresql", "sqlite"):
        return [outcome.id for outcome in outcomes if _close_generic(outcome, now)]
    meta = WebhookEvent._meta
    table, c = _columns()
    fields = [meta.pk, meta.get_field("state"), meta.get_field("state_reason")]
    fields += [meta.get_field("last_attempt_at"), meta.get_field("status_code")]
    if connection.vendor == "postgresql":  # a VALUES list has no column types of its own there
        marks = ", ".join(f"CAST(%s AS {f.cast_db_type(connection)})" for f in fields)
    else:  # SQLite compares by the stored text; a CAST to its "datetime" would turn the text into a number
        marks = ", ".join(["%s"] * len(fields))
    values = ", ".join([f"({marks})"] * len(outcomes))
    sql = (
        f"UPDATE {table} SET {c['state']} = v.column2, {c['state_reason']} = v.column3, "  # noqa: S608
        f"{c['finished_at']} = %s, "
        f"{c['attempts']} = {table}.{c['attempts']} + (CASE WHEN v.column4 IS NULL THEN 0 ELSE 1 END), "
        f"{c['last_attempt_at']} = COALESCE(v.column4, {table}.{c['last_attempt_at']}), "
        f"{c['status_code']} = CASE WHEN v.column4 IS NULL THEN {table}.{c['status_code']} ELSE v.column5 END, "
        f"{c['resend']} = %s "
        f"FROM (VALUES {values}) AS v WHERE {table}.{c['id']} = v.column1 AND {table}.{c['state']} = %s "
        f"RETURNING {table}.{c['id']}"
    )
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


def _close_generic(outcome: Outcome, now: datetime) -> bool:
    changes: dict[str, Any] = {"state": outcome.state, "state_reason": outcome.reason[:255], "finished_at": now}
    changes["resend"] = False
    if outcome.attempted_at is not None:
        changes |= {
            "attempts": F("attempts") + 1,
            "last_attempt_at": outcome.attempted_at,
            "status_code": outcome.status_code,
        }
    return bool(WebhookEvent.objects.filter(pk=outcome.id, state=EventState.SENDING).update(**changes))


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
