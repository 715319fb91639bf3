"""Hand-written statements on the outbox table for the drain: claim a batch (or one event), delete the
closed rows, put back the unattempted ones. Identifiers come from the model and are quoted; every value
is a parameter. PostgreSQL and SQLite get one statement each; other databases a slower generic path."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.utils import timezone

from webhooks.models import EventState, WebhookEvent


@dataclass(frozen=True, slots=True)
class Claimed:
    id: uuid.UUID
    event_type: str
    body: str
    created_at: datetime | None = None  # when it was recorded (with the change): the start of its lag


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
            f"ORDER BY {c['created_at']}, {c['id']} LIMIT %s"
        )
        returned = ("id", "event_type", "body", "created_at")
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
            .order_by("created_at", "id")
            .values_list("id", flat=True)[:limit],
            claimed_at,
        )
    params = _batch_claim_params(claimed_at, directory_id, target, limit)
    with connection.cursor() as cursor:
        cursor.execute(_batch_claim_sql(), params)
        rows = cursor.fetchall()
    # RETURNING gives no order; sort as the claim did. (created_at compares as datetimes on PostgreSQL
    # and as fixed-format text on SQLite; the id tie-break compares the same way as in SQL.)
    rows.sort(key=lambda row: (row[3], row[0]))
    return [Claimed(as_uuid(row[0]), row[1], row[2], _moment(row[3])) for row in rows]


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
        row = WebhookEvent.objects.values_list("id", "event_type", "body", "directory_id", "target", "created_at").get(
            pk=event_id
        )
    else:
        meta = WebhookEvent._meta
        table, c = _columns()
        sql = (
            f"UPDATE {table} SET {c['state']} = %s, {c['claimed_at']} = %s "  # noqa: S608
            f"WHERE {c['id']} = %s AND {c['state']} = %s "
            f"RETURNING {c['id']}, {c['event_type']}, {c['body']}, {c['directory_id']}, {c['target']}, "
            f"{c['created_at']}"
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
    return Claimed(as_uuid(row[0]), row[1], row[2], _moment(row[5])), as_uuid(row[3]), row[4]


def _claim_generic(event_ids: Any, claimed_at: Any) -> list[Claimed]:
    """Databases without UPDATE ... RETURNING: one conditional UPDATE per event, then read them."""
    won = [
        event_id
        for event_id in list(event_ids)
        if WebhookEvent.objects.filter(pk=event_id, state=EventState.PENDING).update(
            state=EventState.SENDING, claimed_at=claimed_at
        )
    ]
    rows = WebhookEvent.objects.filter(pk__in=won).order_by("created_at", "id")
    return [Claimed(*row) for row in rows.values_list("id", "event_type", "body", "created_at")]


def delete_sending(ids: list[uuid.UUID]) -> list[uuid.UUID]:
    """DELETE the rows among `ids` that are still `sending`; the ids actually deleted."""
    if connection.vendor not in ("postgresql", "sqlite"):
        rows = WebhookEvent.objects.filter(pk__in=ids, state=EventState.SENDING)
        gone = list(rows.values_list("id", flat=True))
        rows.delete()
        return gone
    table, c = _columns()
    pk = WebhookEvent._meta.pk
    marks = ", ".join(["%s"] * len(ids))
    sql = f"DELETE FROM {table} WHERE {c['id']} IN ({marks}) AND {c['state']} = %s RETURNING {c['id']}"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, [*(pk.get_db_prep_value(i, connection) for i in ids), EventState.SENDING])
        return [as_uuid(row[0]) for row in cursor.fetchall()]


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
