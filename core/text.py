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


def json_problem(value: Any, *, max_depth: int) -> str | None:
    """The first reason a parsed JSON document cannot be stored, or None. Walks without recursion, so a
    deep document costs a loop, never Python's stack."""
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, where = stack.pop()
        if depth > max_depth:
            return f"The document is nested deeper than {max_depth} levels."
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return f"{where or 'A string'} {problem}."
        elif isinstance(item, dict):
            for key, child in item.items():
                problem = text_problem(key)
                if problem:
                    return f"An attribute name {problem}."
                stack.append((child, depth + 1, f"'{key}'" if len(key) <= 64 else "An attribute"))
        elif isinstance(item, list):
            stack.extend((child, depth + 1, where) for child in item)
        elif isinstance(item, int | float):
            problem = number_problem(item)
            if problem:
                return f"{where or 'A number'} {problem}."
    return None
