"""A test on the comparison document (`filter_doc`) in SQL, for each database Roster runs on.

`scim.storage.query.filter` describes a test on a resource's comparison document as a small tree
(`DocTest`, `DocElement`, …); a store's `documents` renders it: `SqliteDocuments` with SQLite's JSON1
functions, `PostgresDocuments` with jsonb. Both walk the document the same way (every key holds a list:
scim/protocol/documents/filterdoc.py), one nested EXISTS per step, so that the two databases give the
same answers; PostgreSQL answers a pure equality with `@>` instead, which its GIN index serves. Sort
keys (`scim.storage.query.sort`) are read from the same document.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from django.db.models import BooleanField, Expression, F, TextField
from django.db.models.functions import Collate

from scim.storage.query.filter import DocAll, DocAny, DocElement, DocNode, DocNot, DocTest


class DocumentExpression(Expression):
    """SQL over the row's comparison document: `sql` with `{doc}` standing for the column, so that
    Django can still relabel the table (a subquery's alias) as it compiles."""

    def __init__(self, sql: str, params: list[Any], output_field: Any, column: str = "filter_doc") -> None:
        super().__init__(output_field=output_field)
        self.sql, self.params = sql, params
        self.doc: Any = F(column)

    def get_source_expressions(self) -> list[Any]:
        return [self.doc]

    def set_source_expressions(self, exprs: list[Any]) -> None:
        (self.doc,) = exprs

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        doc_sql, doc_params = compiler.compile(self.doc)
        if doc_params:
            raise ValueError("the document must be a plain column")
        return self.sql.replace("{doc}", doc_sql), list(self.params)


class DocumentCondition(DocumentExpression):
    """A boolean condition on the comparison document (a filter's test)."""

    def __init__(self, sql: str, params: list[Any]) -> None:
        super().__init__(sql, params, BooleanField())


class DocumentKey(DocumentExpression):
    """A sort key read from the comparison document."""

    def __init__(self, sql: str, params: list[Any]) -> None:
        super().__init__(sql, params, TextField())


def json_key(key: str) -> str:
    """A key as a quoted member of a JSON path (`$."key"`): dots and colons of URNs stay inside it."""
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


class SqliteDocuments:
    """The comparison document in SQLite's JSON1 functions (json_each, json_extract).

    A step from the document (or from an element) to the values under a key is a json_each over that
    key's list; a test is an EXISTS over the chain of steps. `json_each` reports each value's type
    ('text', 'integer', 'real', 'true', 'false', 'object'), which every comparison checks first, so a
    string never equals a number."""

    def condition(self, node: DocNode) -> Expression:
        return DocumentCondition(*_DocumentWalk(self).node(node, None))

    def sort_key(self, steps: tuple[str, ...], *, strings_only: bool) -> Expression:
        """The first value at `steps` (the primary element of a multi-valued attribute comes first),
        as text; a value that is not a string sorts as missing when `strings_only`."""
        path = "$" + "".join(f".{json_key(step)}[0]" for step in steps)
        if strings_only:
            return DocumentKey(
                "(CASE WHEN json_type({doc}, %s) = 'text' THEN json_extract({doc}, %s) END)", [path, path]
            )
        return DocumentKey("json_extract({doc}, %s)", [path])

    def text_order(self, expression: Any) -> Any:
        """`expression` ordered by code point: SQLite's default (BINARY), as Python compares strings."""
        return expression

    # the steps of a walk: (FROM item, its parameters); `alias.value` is the JSON value reached

    def first(self, key: str, alias: str) -> tuple[str, list[Any]]:
        return f"json_each({{doc}}, %s) AS {alias}", [f"$.{json_key(key)}"]

    def step(self, parent: str, key: str, alias: str) -> tuple[str, list[Any]]:
        return f"json_each(CASE WHEN {parent}.type = 'object' THEN {parent}.value END, %s) AS {alias}", [
            f"$.{json_key(key)}"
        ]

    # One value reached by a walk, `{v}` in each template (`{t}` its text, `{b}` true or false); `%s` the
    # literal. Each comparison checks the value's JSON type first (_DocumentWalk.compare).
    IS_STRING = "{v}.type = 'text'"
    IS_NUMBER = "{v}.type IN ('integer', 'real')"
    IS_BOOLEAN = "{v}.type = '{b}'"
    TEXT = "{v}.value"
    NUMBER = "{v}.value"
    STRING_OPS = {
        "co": ("instr({t}, %s) > 0", 1),
        "sw": ("substr({t}, 1, length(%s)) = %s", 2),
        "ew": ("substr({t}, -length(%s)) = %s", 2),
    }
    TEXT_ORDER = "{t}"


_SQL_OPERATORS = {"eq": "=", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}


class _DocumentWalk:
    """One condition's SQL: nested EXISTS over the steps of each test, aliases numbered once per condition."""

    def __init__(self, dialect: Any) -> None:
        self.dialect = dialect
        self.count = 0

    def node(self, node: DocNode, base: str | None) -> tuple[str, list[Any]]:
        if isinstance(node, DocAll | DocAny):
            left, lp = self.node(node.left, base)
            right, rp = self.node(node.right, base)
            return f"({left} {'AND' if isinstance(node, DocAll) else 'OR'} {right})", lp + rp
        if isinstance(node, DocNot):
            inner, params = self.node(node.inner, base)
            return f"NOT ({inner})", params
        items, params, last = self.steps(node.steps, base)
        if isinstance(node, DocElement):
            where, wp = self.node(node.inner, last)
        else:
            where, wp = self.compare(last, node.op, node.value)
        return f"EXISTS (SELECT 1 FROM {items} WHERE {where})", params + wp  # noqa: S608 - values are parameters

    def steps(self, steps: tuple[str, ...], base: str | None) -> tuple[str, list[Any], str]:
        items: list[str] = []
        params: list[Any] = []
        parent = base
        for key in steps:
            self.count += 1
            alias = f"j{self.count}"
            sql, p = self.dialect.first(key, alias) if parent is None else self.dialect.step(parent, key, alias)
            items.append(sql)
            params += p
            parent = alias
        return ", ".join(items), params, parent  # type: ignore[return-value]

    def compare(self, alias: str, op: str, value: Any) -> tuple[str, list[Any]]:
        """The condition on one value (at `alias`) for a DocTest's operator and literal, in the dialect's
        templates."""
        d = self.dialect
        if op == "pr":
            return "1 = 1", []
        text = d.TEXT.format(v=alias)
        if op == "str":
            return d.IS_STRING.format(v=alias), []
        if isinstance(value, bool):
            return d.IS_BOOLEAN.format(v=alias, b="true" if value else "false"), []
        if isinstance(value, str):
            typed = d.IS_STRING.format(v=alias)
            if op in d.STRING_OPS:
                template, uses = d.STRING_OPS[op]
                return f"{typed} AND {template.format(t=text)}", [value] * uses
            return f"{typed} AND {d.TEXT_ORDER.format(t=text)} {_SQL_OPERATORS[op]} %s", [value]
        number = d.NUMBER.format(v=alias)
        return f"{d.IS_NUMBER.format(v=alias)} AND {number} {_SQL_OPERATORS[op]} %s", [value]


# --- PostgreSQL: jsonb ----------------------------------------------------------------------------------
# The migration directories 0004 indexes `filter_doc jsonb_path_ops` (GIN) and the folded family name in
# code-point order: the SQL below must keep using `@>` for equality and that exact sort expression.

_SAFE_KEY = re.compile(r"[a-z0-9_$-]+")


def _containment(node: DocNode) -> Any:
    """The jsonb document `{doc} @>` must contain for `node` to hold, or None when `node` is not a pure
    equality: a test `eq`, or a value filter whose conditions are all `eq` on one step each (the same
    element then holds them all). Containment is what the GIN index answers."""
    if isinstance(node, DocTest) and node.op == "eq":
        return _nested(node.steps, [node.value])
    if isinstance(node, DocElement):
        element: dict[str, Any] = {}
        stack = [node.inner]
        while stack:
            item = stack.pop()
            if isinstance(item, DocAll):
                stack += [item.left, item.right]
            elif isinstance(item, DocTest) and item.op == "eq" and len(item.steps) == 1:
                if item.steps[0] in element:
                    return None  # two values for one key: not one containment
                element[item.steps[0]] = [item.value]
            else:
                return None
        return _nested(node.steps, [element])
    return None


def _nested(steps: tuple[str, ...], values: list[Any]) -> dict[str, Any]:
    """`{"a": [{"b": values}]}` for steps (a, b): the document shape of filterdoc."""
    document: dict[str, Any] = {steps[-1]: values}
    for step in reversed(steps[:-1]):
        document = {step: [document]}
    return document


class PostgresDocuments:
    """The comparison document in jsonb: `@>` for equalities (GIN-indexed), else the same nested EXISTS
    as SQLite's, over jsonb_array_elements."""

    def condition(self, node: DocNode) -> Expression:
        contained = _containment(node)
        if contained is not None:
            return DocumentCondition("({doc} @> CAST(%s AS jsonb))", [orjson.dumps(contained).decode()])
        return DocumentCondition(*_DocumentWalk(self).node(node, None))

    def sort_key(self, steps: tuple[str, ...], *, strings_only: bool) -> Expression:
        if all(_SAFE_KEY.fullmatch(step) for step in steps):
            # A literal path, so that the planner matches it with an expression index (user_sort_family_name).
            path = "'{" + ",".join(f"{step},0" for step in steps) + "}'"
            params: list[Any] = []
        else:
            path = "CAST(%s AS text[])"
            params = ["{" + ",".join(f'"{_array_item(step)}",0' for step in steps) + "}"]
        text = f'(({{doc}} #>> {path}) COLLATE "C")'
        if strings_only:
            return DocumentKey(f"(CASE WHEN jsonb_typeof({{doc}} #> {path}) = 'string' THEN {text} END)", params * 2)
        return DocumentKey(text, params)

    def text_order(self, expression: Any) -> Any:
        """`expression` ordered by code point (collation "C"), whatever the database's collation."""
        return Collate(expression, "C")

    def first(self, key: str, alias: str) -> tuple[str, list[Any]]:
        return self._elements("{doc}", key, alias)

    def step(self, parent: str, key: str, alias: str) -> tuple[str, list[Any]]:
        return self._elements(f"{parent}.value", key, alias)

    @staticmethod
    def _elements(source: str, key: str, alias: str) -> tuple[str, list[Any]]:
        # Every key of the document holds an array (filterdoc); the CASE keeps a stray scalar from failing.
        member = f"({source} -> %s)"
        return (
            f"jsonb_array_elements(CASE WHEN jsonb_typeof({member}) = 'array' THEN {member} END) AS {alias}(value)",
            [key, key],
        )

    IS_STRING = "jsonb_typeof({v}.value) = 'string'"
    IS_NUMBER = "jsonb_typeof({v}.value) = 'number'"
    IS_BOOLEAN = "{v}.value = '{b}'::jsonb"
    TEXT = "({v}.value #>> '{{}}')"
    NUMBER = "CAST({v}.value AS numeric)"
    STRING_OPS = {
        "co": ("strpos({t}, %s) > 0", 1),
        "sw": ("starts_with({t}, %s)", 1),
        "ew": ("right({t}, char_length(%s)) = %s", 2),
    }
    TEXT_ORDER = '({t} COLLATE "C")'


def _array_item(step: str) -> str:
    return step.replace("\\", "\\\\").replace('"', '\\"')
