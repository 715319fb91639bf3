"""The one gate every decoded value of a SCIM request passes before it may reach the database or the
JSON encoder: bodies, filter strings (after their escapes are undone), path segments and query values.

What it refuses, and why:
- NUL characters and unpaired surrogates (`core.text.text_problem`): PostgreSQL text and jsonb cannot
  hold the first, and the second is not a character (it cannot be encoded as UTF-8).
- Numbers that the store or the encoder cannot give back: integers outside 64 bits and non-finite
  numbers (`core.text.number_problem`), and floats whose magnitude passes the 64-bit integer range.
  The last kind matters because orjson reads an integer literal of 2**64 or more as a float, and
  PostgreSQL's jsonb prints a large float without an exponent (`1e20` comes back as
  `100000000000000000000`), which Python then reads as an integer that orjson refuses to render.
- Nesting deeper than MAX_JSON_DEPTH (a deep document costs a loop here, never Python's stack).

A body is checked in one walk (`document_problem`), linear in its size: a few microseconds for an
identity provider's body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.text import INT_MIN, json_problem, number_problem, text_problem
from scim.protocol.errors import ScimError, invalid_filter, invalid_syntax, invalid_value

MAX_JSON_DEPTH = 32


def number_refused(value: int | float) -> str | None:
    """Why a JSON number cannot be stored and read back, or None: `number_problem`, plus floats beyond
    the 64-bit integer range (see the module docstring)."""
    problem = number_problem(value)
    # Strict at both ends: the float -2**63 is printed as -9.223372036854776e+18, which the database
    # reads as -9223372036854776000, past the range.
    if problem is None and isinstance(value, float) and not INT_MIN < value < -INT_MIN:
        return "is outside the 64-bit integer range"
    return problem


def document_problem(value: Any, *, texts: bool = True) -> str | None:
    """The first reason a parsed body cannot be stored, or None: `core.text.json_problem` (depth, strings
    and attribute names, integers and non-finite numbers), then the first float `number_refused` refuses,
    in one walk. `texts=False` leaves the strings and names unchecked, for a body orjson read from bytes
    without a `\\u0000` escape: orjson refuses a lone surrogate, and a NUL in a string can only come
    from that escape (it refuses a raw control character too). Kept for speed: bench/README.md, "Code kept
    for speed", "Bodies checked in one walk, documents copied as JSON"."""
    return json_problem(value, max_depth=MAX_JSON_DEPTH, texts=texts, float_problem=number_refused)


def check_document(value: Any, *, texts: bool = True) -> None:
    """Raise 400 for a parsed body that cannot be stored: invalidSyntax when nested too deeply,
    invalidValue for bad text or numbers (`document_problem`; `texts` as there)."""
    problem = document_problem(value, texts=texts)
    if problem is not None:
        if problem.startswith("The document is nested"):
            raise invalid_syntax(f"The request body is nested deeper than {MAX_JSON_DEPTH} levels.")
        raise invalid_value(problem)


def check_text(value: str, what: str, error: Callable[[str], ScimError] = invalid_value) -> None:
    """Raise `error(...)` (a ScimError builder) when `value` cannot be stored as text."""
    problem = text_problem(value)
    if problem is not None:
        raise error(f"{what} {problem}.")


def text_ok(value: Any) -> bool:
    """Whether a path segment or other identifier can name anything at all."""
    return not isinstance(value, str) or text_problem(value) is None


def check_query(query: dict[str, Any]) -> None:
    """Every query value (a string, or a list of them from a SearchRequest body) passes the text gate;
    a filter's problem is invalidFilter, any other's invalidValue."""
    for name, value in query.items():
        if isinstance(value, str):
            check_text(value, _label(name), invalid_filter if name == "filter" else invalid_value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, str):
                    check_text(item, _label(name))


def _label(name: Any) -> str:
    """A query parameter's name for an error message, when it is safe to repeat."""
    if isinstance(name, str) and len(name) <= 64 and name.isascii() and name.isprintable():
        return name
    return "A query parameter"
