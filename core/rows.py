"""Reading whole model rows by a fixed condition without the ORM's query compiler.

Every SCIM request authenticates against its directory and most then read one user or group by id.
Through a QuerySet each of those lookups spends CPU time building and compiling the same SQL again (kept
for speed: bench/README.md, "Code kept for speed", "Fixed SQL for hot lookups"). `RowReader` builds the
column list and the value converters of a model once per database connection alias and then only
executes: the SQL text is fixed, every value is a parameter.

The rows come back as ordinary model instances, with the same conversions the ORM applies (UUIDs and
datetimes on SQLite, JSON fields, the decryption of secret fields), so the callers cannot tell the
difference. They are made the way `Model.from_db` leaves them (the values read in the instance's
`__dict__`, the fields not read deferred, `_state` saying "from this database, not adding") without
running `Model.__init__`, which sets every field through `setattr`, looks the deferred ones up and
sends `pre_init` and `post_init`. That is only done for a model whose `__init__` and `from_db` are
Django's, whose fields read have no descriptor that acts on assignment other than the foreign key's
(which only clears a related object cached on the instance: a new one has none), and while nothing
listens to `pre_init` or `post_init` for it; any other model goes through `from_db`. Kept for speed:
bench/README.md, "Code kept for speed", "Model instances without __init__".
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson
from django.db import connections, models
from django.db.models.base import ModelState
from django.db.models.fields import AutoFieldMixin
from django.db.models.query_utils import DeferredAttribute
from django.db.models.signals import post_init, pre_init

M = TypeVar("M", bound=models.Model)

# Row locks, by name; SQLite has none (it locks the whole database for a write transaction).
LOCKS = {
    "update": " FOR UPDATE",
    "no_key_update": " FOR NO KEY UPDATE",
    "key_share": " FOR KEY SHARE",
}


def _native_timestamptz_loader() -> Any:
    """psycopg's compiled loader for `timestamptz` values sent as text, or None where psycopg runs
    its pure-Python implementation (or is not installed)."""
    try:
        import psycopg
        from psycopg.pq import Format
    except ImportError:
        return None
    if psycopg.pq.__impl__ == "python":
        return None
    oid = psycopg.adapters.types["timestamptz"].oid
    return psycopg.adapters.get_loader(oid, Format.TEXT)


_TIMESTAMPTZ_LOADER = _native_timestamptz_loader()

# Descriptors of a field's attribute that do nothing on assignment to a new instance: Django's own for a
# column (no __set__) and for a foreign key's id (clears the related object cached on the instance).
_PLAIN_DESCRIPTORS: tuple[type, ...] = (
    DeferredAttribute,
    models.fields.related_descriptors.ForeignKeyDeferredAttribute,
)


@contextmanager
def rows_cursor(alias: str = "default") -> Iterator[Any]:
    """A cursor of connection `alias` that parses `timestamptz` columns with psycopg's compiled loader.

    Why: Django registers its own loader for them on every PostgreSQL connection, a Python subclass of
    psycopg's Python loader that sets the connection's time zone (UTC) on each value. A user row has
    two such values, so a page of 100 users parsed its times in Python 200 times (kept for speed:
    bench/README.md, "Code kept for speed", "Compiled time loader"). The compiled loader gives the same
    instant with the session's time zone, which Django sets to UTC when it opens the connection, and
    every surface formats times through core.timefmt, which converts to UTC anyway. The loader is
    registered on the cursor, not the connection: Django checks the connection's loader when it opens
    a cursor. Delete when Django's loader is compiled or no longer registered. On SQLite, or without
    compiled psycopg, this is a plain cursor.
    """
    connection = connections[alias]
    with connection.cursor() as opened:
        if _TIMESTAMPTZ_LOADER is not None and connection.vendor == "postgresql":
            opened.adapters.register_loader("timestamptz", _TIMESTAMPTZ_LOADER)
        yield opened


def _json_loads(value: Any, expression: Any, connection: Any) -> Any:
    """JSONField.from_db_value with orjson: same result for the plain documents stored here (a list
    page decodes 100 of them; the stdlib decoder was a tenth of its CPU)."""
    if isinstance(value, str | bytes):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            pass  # what orjson refuses (NaN, integers beyond 64 bits) the stdlib decoder may accept
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


@dataclass(frozen=True)
class _Prepared:
    table: str
    columns: str
    converters: tuple[tuple[int, tuple[Any, ...], Any], ...]
    locks: bool
    names: frozenset[str] | None  # attnames read, when not all of them
    width: int  # number of columns, the extra ones included
    fields: int  # number of the model's columns
    attnames: tuple[str, ...] | None  # the columns' attribute names, when instances may skip __init__


@dataclass(frozen=True)
class Extra:
    """A computed column read along with the row and set on the instance as `attribute`: `sql` is an
    expression in which `{table}` stands for the quoted table name; `convert` turns the value read."""

    attribute: str
    sql: str
    convert: Any


class RowReader(Generic[M]):
    def __init__(self, model: type[M], fields: tuple[str, ...] | None = None, extras: tuple[Extra, ...] = ()) -> None:
        """`fields`: read only these (the others are deferred on the instances, as with `.only()`);
        `extras`: computed columns read after them (see `Extra`)."""
        self.model = model
        self.fields = fields
        self.extras = extras
        self._prepared: dict[str, _Prepared] = {}

    def _concrete(self) -> list[models.Field]:
        concrete = self.model._meta.concrete_fields
        if self.fields is None:
            return list(concrete)
        return [f for f in concrete if f.attname in self.fields or f.name in self.fields]

    def _prepare(self, alias: str) -> _Prepared:
        prepared = self._prepared.get(alias)
        if prepared is not None:
            return prepared
        connection = connections[alias]
        meta = self.model._meta
        quote = connection.ops.quote_name
        table = quote(meta.db_table)
        fields = self._concrete()
        columns = ", ".join(
            [f"{table}.{quote(f.column)}" for f in fields]
            + [f"{extra.sql.replace('{table}', table)} AS {quote(extra.attribute)}" for extra in self.extras]
        )
        converters = []
        for index, field in enumerate(fields):
            column = field.get_col(meta.db_table)
            own = field.get_db_converters(connection)
            if isinstance(field, models.JSONField) and field.decoder is None:
                own = [_json_loads]
            found = tuple(connection.ops.get_db_converters(column) + own)
            if found:
                converters.append((index, found, column))
        names = None if self.fields is None else frozenset(f.attname for f in fields)
        attnames = tuple(f.attname for f in fields) if _plain_model(self.model, fields) else None
        prepared = _Prepared(
            table,
            columns,
            tuple(converters),
            connection.features.has_select_for_update,
            names,
            len(fields) + len(self.extras),
            len(fields),
            attnames,
        )
        self._prepared[alias] = prepared
        return prepared

    def sql(self, where: str, *, suffix: str = "", lock: str | None = None, alias: str = "default") -> str:
        """`SELECT <every column> FROM <table> WHERE <where><suffix>[ <lock>]`; `{table}` in `where`
        and `suffix` stands for the quoted table name."""
        prepared = self._prepare(alias)
        text = f"SELECT {prepared.columns} FROM {prepared.table} WHERE {where}{suffix}".replace(  # noqa: S608
            "{table}", prepared.table
        )
        if lock and prepared.locks:
            text += LOCKS[lock]
        return text

    def table(self, *, alias: str = "default") -> str:
        return self._prepare(alias).table

    def columns(self, *, alias: str = "default") -> tuple[str, int]:
        """The table-qualified column list and its length, for a SELECT that joins two tables and builds
        an instance of each from its part of the row (`build(row[:n])`, `other.build(row[n:])`)."""
        prepared = self._prepare(alias)
        return prepared.columns, prepared.width

    def count_sql(self, where: str, *, alias: str = "default") -> str:
        table = self._prepare(alias).table
        return f"SELECT COUNT(*) FROM {table} WHERE {where}".replace("{table}", table)  # noqa: S608

    def param(self, field: str, value: Any, *, alias: str = "default") -> Any:
        """`value` as the database expects it for this field (SQLite stores UUIDs as hex text)."""
        return self.model._meta.get_field(field).get_db_prep_value(value, connections[alias])

    def build(self, row: tuple[Any, ...] | list[Any], *, alias: str = "default") -> M:
        return self.build_many((row,), alias=alias)[0]

    def build_many(self, rows: Iterable[tuple[Any, ...] | list[Any]], *, alias: str = "default") -> list[M]:
        """An instance for each row (the columns of `sql()`, or of `columns()`, in order)."""
        prepared = self._prepare(alias)
        connection = connections[alias]
        model = self.model
        bare = prepared.attnames is not None and not (pre_init.has_listeners(model) or post_init.has_listeners(model))
        built = []
        for row in rows:
            values = list(row)
            for index, converters, column in prepared.converters:
                value = values[index]
                for converter in converters:
                    value = converter(value, column, connection)
                values[index] = value
            if bare:
                instance = model.__new__(model)
                instance.__dict__.update(zip(prepared.attnames, values, strict=False))  # type: ignore[arg-type]  # extras after
                state = instance._state = ModelState()
                state.adding = False
                state.db = alias
            else:
                instance = model.from_db(alias, prepared.names, values[: prepared.fields])
            for extra, value in zip(self.extras, values[prepared.fields : prepared.width], strict=True):
                setattr(instance, extra.attribute, extra.convert(value))
            built.append(instance)
        return built

    def fetch(self, sql: str, params: list[Any] | tuple[Any, ...], *, alias: str = "default") -> list[M]:
        with rows_cursor(alias) as opened:
            opened.execute(sql, params)
            rows = opened.fetchall()
        return self.build_many(rows, alias=alias)

    def first(self, sql: str, params: list[Any] | tuple[Any, ...], *, alias: str = "default") -> M | None:
        with rows_cursor(alias) as opened:
            opened.execute(sql, params)
            row = opened.fetchone()
        return None if row is None else self.build(row, alias=alias)


def _plain_model(model: type[models.Model], fields: list[models.Field]) -> bool:
    """Whether `model`'s instances can be made without `__init__` (see the module's docstring)."""
    if model.__init__ is not models.Model.__init__ or model.from_db.__func__ is not models.Model.from_db.__func__:  # type: ignore[attr-defined]
        return False
    for field in fields:
        descriptor = next((k.__dict__[field.attname] for k in model.__mro__ if field.attname in k.__dict__), None)
        if type(descriptor) not in _PLAIN_DESCRIPTORS:
            return False
    return True


class RowWriter(Generic[M]):
    """INSERT and UPDATE of model instances through fixed SQL, for the SCIM write path.

    Values go through each field's `pre_save` (so `auto_now` / `auto_now_add` timestamps are set
    on the instance as with `save()`) and `get_db_prep_save` (JSON, encryption, UUIDs on SQLite).
    These models have no save signals or overridden `save()`, which is what makes skipping
    `Model.save` safe; a uniqueness violation raises the same IntegrityError.
    """

    def __init__(self, model: type[M]) -> None:
        self.model = model
        self._sql: dict[tuple[Any, ...], str] = {}

    def _fields(self, names: tuple[str, ...] | None) -> list[models.Field]:
        meta = self.model._meta
        if names is None:
            # An auto-incremented key is the database's to set, as with save().
            return [f for f in meta.concrete_fields if not isinstance(f, AutoFieldMixin)]
        chosen = [meta.get_field(n) for n in names]
        # Like save(update_fields=…): auto_now fields are refreshed by every update.
        chosen += [f for f in meta.concrete_fields if getattr(f, "auto_now", False) and f not in chosen]
        return chosen

    def insert(self, obj: M, *, alias: str = "default") -> None:
        sql, values = self.insert_sql(obj, alias=alias)
        with connections[alias].cursor() as cursor:
            cursor.execute(sql, values)
        self._saved(obj, alias)

    def _saved(self, obj: M, alias: str) -> None:
        obj._state.adding = False
        obj._state.db = alias

    def insert_sql(
        self, obj: M, *, where: str | None = None, source: str | None = None, alias: str = "default"
    ) -> tuple[str, list[Any]]:
        """The INSERT of `obj` and its parameters, not executed: for a caller that combines it with
        other statements into one (`WITH a AS (<insert>) …`, see `statement_run`). Runs `pre_save`, so
        the instance's auto timestamps are set as soon as this returns. With `where` (a condition, whose
        parameters the caller appends): `INSERT … SELECT <values> [FROM <source>] WHERE <where>`, which
        inserts nothing unless it holds; `source` (a subquery and its alias, e.g. `(SELECT …) w`) gives the
        condition values to refer to, its parameters appended before the condition's."""
        connection = connections[alias]
        fields = self._fields(None)
        values = [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
        self._saved(obj, alias)
        return self._insert_text(alias, fields, where, source), values

    def _insert_text(
        self, alias: str, fields: list[models.Field], where: str | None = None, source: str | None = None
    ) -> str:
        key = (alias, ("*insert*", where, source))
        sql = self._sql.get(key)
        if sql is None:
            quote = connections[alias].ops.quote_name
            columns = ", ".join(quote(f.column) for f in fields)
            marks = ", ".join(["%s"] * len(fields))
            source_text = f" FROM {source}" if source else ""
            values = f"VALUES ({marks})" if where is None else f"SELECT {marks}{source_text} WHERE {where}"
            sql = self._sql[key] = f"INSERT INTO {quote(self.model._meta.db_table)} ({columns}) {values}"  # noqa: S608
        return sql

    def insert_many(self, objs: list[M], *, alias: str = "default") -> None:
        """INSERT every instance of `objs` with the one INSERT text, sent as a batch (psycopg pipelines
        an executemany: one round trip). Unlike the ORM's bulk_create on PostgreSQL, which sends each
        column as an array and escapes every string element of it in Python, the values go as plain
        parameters: for rows with long text, several times less CPU."""
        if not objs:
            return
        connection = connections[alias]
        fields = self._fields(None)
        rows = []
        for obj in objs:
            rows.append([f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields])
            self._saved(obj, alias)
        with connection.cursor() as cursor:
            cursor.executemany(self._insert_text(alias, fields), rows)

    def copy_rows(self, names: tuple[str, ...], rows: Iterable[Sequence[Any]], *, alias: str = "default") -> None:
        """Write `rows` with one `COPY … FROM STDIN` (PostgreSQL only): each row the values of the fields
        `names`, in that order, as psycopg adapts them (a UUID, an aware datetime, a str, an int, a bool,
        None); nothing fills defaults or prepares a value, so every column goes in every row. One statement
        is its own transaction. Against `insert_many`, no model instance and no per-field preparation per
        row, and PostgreSQL parses one statement instead of one per row (kept for speed: bench/README.md,
        "Code kept for speed", "Request log by COPY")."""
        connection = connections[alias]
        key = (alias, ("*copy*", names))
        sql = self._sql.get(key)
        if sql is None:
            quote = connection.ops.quote_name
            by_name = {f.name: f for f in self.model._meta.concrete_fields}
            columns = ", ".join(quote(by_name[name].column) for name in names)
            sql = self._sql[key] = f"COPY {quote(self.model._meta.db_table)} ({columns}) FROM STDIN"
        started = time.monotonic()
        # Django's cursor does not wrap copy(): its error translation (psycopg's errors into django.db's)
        # is taken here, so callers catch the same exceptions as around execute().
        with connection.cursor() as cursor, connection.wrap_database_errors, cursor.cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row(row)
        if connection.queries_logged:  # Django's query log (DEBUG, CaptureQueriesContext) sees only execute()
            connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})

    def update(self, obj: M, names: list[str], *, alias: str = "default") -> None:
        connection = connections[alias]
        fields = self._fields(tuple(names))
        key = (alias, tuple(f.name for f in fields))
        sql = self._sql.get(key)
        if sql is None:
            quote = connection.ops.quote_name
            sets = ", ".join(f"{quote(f.column)} = %s" for f in fields)
            pk = quote(self.model._meta.pk.column)
            sql = self._sql[key] = f"UPDATE {quote(self.model._meta.db_table)} SET {sets} WHERE {pk} = %s"  # noqa: S608
        values = [f.get_db_prep_save(f.pre_save(obj, False), connection) for f in fields]
        values.append(self.model._meta.pk.get_db_prep_value(obj.pk, connection))
        with connection.cursor() as cursor:
            cursor.execute(sql, values)

    def update_sql(self, obj: M, names: list[str], *, where: str, alias: str = "default") -> tuple[str, list[Any]]:
        """`UPDATE t SET … WHERE pk = %s AND <where>` and its parameters (the values of `obj` first, then
        its pk; the caller appends the parameters of `where`), not executed. `where` is the optimistic
        check of a write made without a row lock: the update touches nothing if the row changed since
        it was read."""
        connection = connections[alias]
        fields = self._fields(tuple(names))
        quote = connection.ops.quote_name
        sets = ", ".join(f"{quote(f.column)} = %s" for f in fields)
        table = quote(self.model._meta.db_table)
        pk = quote(self.model._meta.pk.column)
        values = [f.get_db_prep_save(f.pre_save(obj, False), connection) for f in fields]
        values.append(self.model._meta.pk.get_db_prep_value(obj.pk, connection))
        return f"UPDATE {table} SET {sets} WHERE {pk} = %s AND ({where})", values  # noqa: S608


def statement_run(sql: str, params: list[Any], *, alias: str = "default") -> list[tuple[Any, ...]]:
    """Run one statement outside any transaction, so that it is a transaction of its own, and return its
    rows: one round trip, where an atomic block costs BEGIN, its statements and COMMIT one each."""
    connection = connections[alias]
    if connection.in_atomic_block:
        raise RuntimeError("statement_run is for autocommit mode; inside a transaction use the ORM")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else []
