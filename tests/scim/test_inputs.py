"""The input gate of SCIM bodies (scim.protocol.inputs, `document_problem`, and scim.processor.parse_json),
against plain references: the two walks it replaced (the general check, then one for refused floats),
and, for the bodies orjson reads, the same check with every string and name looked at. The gate walks
once and skips the strings of a body orjson read without a `\\u0000` escape; these properties say that
neither changes an answer."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.text import number_problem, text_problem
from scim.processor import _json_fallback, parse_json
from scim.protocol.errors import ScimError
from scim.protocol.inputs import MAX_JSON_DEPTH, check_document, document_problem, number_refused

# Text that an escape can make of anything: NUL, lone and paired surrogates, an escaped backslash before
# "u0000" (no NUL), a plain escape, a control character written raw (orjson refuses it), non-ASCII.
_PIECES = [
    "a",
    "é",
    "ß",
    "😀",
    "\\u0000",
    "\\\\u0000",
    "\\ud800",
    "\\udc00",
    "\\ud83d\\ude00",
    "\\u0041",
    '\\"',
    "\x01",
    "\\n",
]
_NUMBERS = [
    "0",
    "-1",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "1e19",
    "-9.3e18",
    "1e400",
    "2.5",
    "true",
    "null",
]


def _text() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(_PIECES), max_size=4).map(lambda parts: '"' + "".join(parts) + '"')


def _json_text() -> st.SearchStrategy[str]:
    leaves = st.one_of(_text(), st.sampled_from(_NUMBERS))
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3).map(lambda items: "[" + ",".join(items) + "]"),
            st.lists(st.tuples(_text(), inner), max_size=3).map(
                lambda pairs: "{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}"
            ),
        ),
        max_leaves=12,
    )


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call()
    except ScimError as exc:
        return "error", (exc.status, exc.body())


def _parsed_with_every_text_checked(raw: bytes) -> Any:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        value = _json_fallback(raw, exc)
    check_document(value, texts=True)
    return value


@settings(max_examples=400, deadline=None)
@given(_json_text())
def test_a_body_gets_the_answer_it_gets_with_every_string_checked(text: str) -> None:
    raw = text.encode("utf-8", "surrogatepass")
    assert _outcome(lambda: parse_json(raw)) == _outcome(lambda: _parsed_with_every_text_checked(raw))


def _reference_problem(value: Any) -> str | None:
    """What the gate answered before it walked once: the general check, a walk that built each attribute's
    label as it went, then a walk for the first refused float."""
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, where = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return f"The document is nested deeper than {MAX_JSON_DEPTH} levels."
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
    floats = [value]
    while floats:
        item = floats.pop()
        if isinstance(item, float):
            problem = number_refused(item)
            if problem:
                return f"A number {problem}."
        elif isinstance(item, dict):
            floats.extend(item.values())
        elif isinstance(item, list):
            floats.extend(item)
    return None


# Names: short, with NUL or a lone surrogate, and one too long to be repeated in a message.
_KEYS = st.one_of(st.text(alphabet=st.sampled_from(["k", "\x00", "\udc00"]), max_size=2), st.just("x" * 70))
_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**65), max_value=2**65),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(alphabet=st.sampled_from(["a", "\x00", "\ud800", "é", "b"]), max_size=3),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(_KEYS, inner, max_size=3),
    ),
    max_leaves=15,
)


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_one_walk_finds_what_the_two_walks_before_it_found(value: Any) -> None:
    assert document_problem(value) == _reference_problem(value)


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b'{"userName": "a", "title": "x\\u0000y"}', "'title' must not contain NUL characters."),
        (b'{"userName": "a", "x\\u0000": 1}', "An attribute name must not contain NUL characters."),
        (b'{"userName": "a", "n": 9223372036854775808}', "'n' is outside the 64-bit integer range."),
        (b'{"userName": "a", "n": [1e19]}', "A number is outside the 64-bit integer range."),
        (b'{"userName": "a", "t": "\\\\u0000"}', None),
    ],
)
def test_what_the_gate_says_of_a_body(body: bytes, detail: str | None) -> None:
    kind, answer = _outcome(lambda: parse_json(body))
    if detail is None:
        assert kind == "ok" and answer["t"] == "\\u0000"
    else:
        assert kind == "error" and answer[0] == 400 and answer[1]["detail"] == detail
