"""The one check every decoded value passes before it may reach the database or the JSON encoder.

Bodies, filter strings, paths and query values arrive as text that any escape can produce: a JSON
`"\\u0000"`, a `%00` in a query, a lone `"\\ud800"`. PostgreSQL text and jsonb cannot hold NUL, and
an unpaired surrogate is not a character at all (it cannot be encoded as UTF-8, so the database
driver fails on it). Numbers have the same kind of edge: JSON allows integers of any size, but
orjson (which renders every response) refuses integers outside 64 bits and PostgreSQL's jsonb keeps
them, so one stored 2**64 would break every later read of that row. Each surface calls these
functions and renders the problem in its own error format.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# What orjson encodes and decodes without loss: signed 64-bit integers (it also reads unsigned ones
# up to 2**64 - 1, which the database driver and other JSON clients do not all accept).
INT_MIN = -(2**63)
INT_MAX = 2**63 - 1


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text, or None when it can."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must not contain unpaired surrogate escapes (\\ud800-\\udfff)"
    return None


def number_problem(value: int | float) -> str | None:
    """Why a JSON number cannot be kept, or None when it can: integers outside 64 bits, NaN and infinities."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if value < INT_MIN or value > INT_MAX:
            return "is outside the 64-bit integer range"
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return "must be a finite number"
    return None


def json_problem(
    value: Any,
    *,
    max_depth: int,
    texts: bool = True,
    float_problem: Callable[[float], str | None] | None = None,
) -> str | None:
    """The first reason a parsed JSON document cannot be stored, or None. Walks without recursion, so a
    deep document costs a loop, never Python's stack; the attribute a problem sits under is named only
    once one is found.

    `texts=False` leaves strings and attribute names unchecked, for a caller that knows they are clean.
    `float_problem`: a further check of each float (a surface that refuses more floats than
    `number_problem`), whose first finding is returned only when nothing else is wrong."""
    stack: list[tuple[Any, int, Any]] = [(value, 1, None)]
    floats: str | None = None
    while stack:
        item, depth, name = stack.pop()
        if depth > max_depth:
            return f"The document is nested deeper than {max_depth} levels."
        if isinstance(item, str):
            if texts:
                problem = text_problem(item)
                if problem:
                    return f"{_named(name, 'A string')} {problem}."
        elif isinstance(item, dict):
            for key, child in item.items():
                if texts:
                    problem = text_problem(key)
                    if problem:
                        return f"An attribute name {problem}."
                stack.append((child, depth + 1, key if len(key) <= 64 else _LONG))
        elif isinstance(item, list):
            stack.extend((child, depth + 1, name) for child in item)
        elif isinstance(item, int | float):
            problem = number_problem(item)
            if problem:
                return f"{_named(name, 'A number')} {problem}."
            if float_problem is not None and floats is None and type(item) is float:
                refused = float_problem(item)
                if refused:
                    floats = f"A number {refused}."
    return floats


# The name of an attribute too long to repeat in a message.
_LONG = object()


def _named(name: Any, unnamed: str) -> str:
    """How a message names the attribute a value sits under."""
    if name is None:
        return unnamed
    return "An attribute" if name is _LONG else f"'{name}'"
