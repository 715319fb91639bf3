"""RFC 7644 §3.4.2.2 filter expressions and PATCH paths: a tokenizer and a recursive-descent parser.

The parser produces a small AST (`Compare`, `And`, `Or`, `Not`, `ElementFilter`). `scim/storage/query/filter.py`
turns it into a Django Q for list queries; `matches()` below evaluates it in Python against the
elements of a multi-valued attribute (PATCH value paths such as `emails[type eq "work"]`).

Precedence follows the RFC: `not` binds tighter than `and`, which binds tighter than `or`; parentheses
group. Attribute names and operators are case-insensitive (§3.4.2.2, §3.10).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from scim.protocol.errors import ScimError, invalid_filter, invalid_path
from scim.protocol.inputs import check_text, number_refused

OPERATORS = frozenset({"eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le", "pr"})
MAX_FILTER_LENGTH = 4096
MAX_DEPTH = 32

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
ENTERPRISE_SCHEMA = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
CORE_SCHEMAS = (USER_SCHEMA.lower(), GROUP_SCHEMA.lower())


@dataclass(frozen=True)
class AttrPath:
    """`[schema:]attr[.sub]`; `attr` and `sub` are lower-cased for matching, `text` is as written."""

    schema: str | None  # lower-cased extension URN, or None for the core schema
    attr: str
    sub: str | None
    text: str


@dataclass(frozen=True)
class Compare:
    path: AttrPath
    op: str
    value: Any = None


@dataclass(frozen=True)
class And:
    left: Node
    right: Node


@dataclass(frozen=True)
class Or:
    left: Node
    right: Node


@dataclass(frozen=True)
class Not:
    inner: Node


@dataclass(frozen=True)
class ElementFilter:
    """`attr[filter]`: some element of the multi-valued `attr` satisfies `filter` (§3.4.2.2 valuePath)."""

    path: AttrPath
    inner: Node


Node = Compare | And | Or | Not | ElementFilter


def split_attr_path(text: str, *, for_patch: bool = False) -> AttrPath:
    """Parse `[URN:]attr[.sub]` into its parts (RFC 7644 §3.10)."""
    fail = invalid_path if for_patch else invalid_filter
    raw = text
    schema: str | None = None
    if text.lower().startswith("urn:"):
        lowered = text.lower()
        for core in CORE_SCHEMAS:
            if lowered.startswith(core + ":"):
                text = text[len(core) + 1 :]
                break
        else:
            # An extension URN ends at its last ':'; what follows is the attribute (possibly dotted).
            head, sep, tail = text.rpartition(":")
            if not sep or not tail:
                raise fail(f"Invalid attribute path {raw!r}.")
            schema, text = head.lower(), tail
    attr, _, sub = text.partition(".")
    if not attr or not _valid_name(attr) or (sub and not _valid_name(sub)) or (_ and not sub):
        raise fail(f"Invalid attribute path {raw!r}.")
    return AttrPath(schema=schema, attr=attr.lower(), sub=sub.lower() or None, text=raw)


def _valid_name(name: str) -> bool:
    # RFC 7643 §2.1 ATTRNAME = ALPHA *(nameChar), nameChar = "-" / "_" / DIGIT / ALPHA; "$ref" is the one exception.
    if name == "$ref":
        return True
    return name[0].isalpha() and all(c.isalnum() or c in "-_" for c in name)


class _Tokens:
    """Tokens: '(' ')' '[' ']', JSON strings (kind 'str') and bare words (kind 'word')."""

    def __init__(self, text: str) -> None:
        self.items: list[tuple[str, Any]] = []
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c in " \t\r\n":
                i += 1
            elif c in "()[]":
                self.items.append((c, c))
                i += 1
            elif c == '"':
                j = i + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                if j >= n:
                    raise invalid_filter("Unterminated string in filter.")
                try:
                    literal = json.loads(text[i : j + 1])
                except ValueError as exc:
                    raise invalid_filter("Invalid string literal in filter.") from exc
                # Escapes are undone only here: "\u0000" or a lone "\ud800" must not reach the database.
                check_text(literal, "A filter string", invalid_filter)
                self.items.append(("str", literal))
                i = j + 1
            else:
                j = i
                while j < n and text[j] not in ' \t\r\n()[]"':
                    j += 1
                self.items.append(("word", text[i:j]))
                i = j
        self.pos = 0

    def peek(self) -> tuple[str, Any] | None:
        return self.items[self.pos] if self.pos < len(self.items) else None

    def next(self) -> tuple[str, Any]:
        tok = self.peek()
        if tok is None:
            raise invalid_filter("Unexpected end of filter.")
        self.pos += 1
        return tok

    def peek_keyword(self, *words: str) -> str | None:
        tok = self.peek()
        if tok and tok[0] == "word" and tok[1].lower() in words:
            return tok[1].lower()
        return None


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _Tokens(text)
        self.depth = 0

    def parse(self) -> Node:
        node = self.or_expr()
        if self.tokens.peek() is not None:
            raise invalid_filter(f"Unexpected {self.tokens.peek()[1]!r} in filter.")  # type: ignore[index]
        return node

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise invalid_filter("Filter is nested too deeply.")

    def or_expr(self, *, in_brackets: bool = False) -> Node:
        node = self.and_expr(in_brackets=in_brackets)
        while self.tokens.peek_keyword("or"):
            self.tokens.next()
            node = Or(node, self.and_expr(in_brackets=in_brackets))
        return node

    def and_expr(self, *, in_brackets: bool) -> Node:
        node = self.unary(in_brackets=in_brackets)
        while self.tokens.peek_keyword("and"):
            self.tokens.next()
            node = And(node, self.unary(in_brackets=in_brackets))
        return node

    def unary(self, *, in_brackets: bool) -> Node:
        self._enter()
        try:
            tok = self.tokens.peek()
            if tok is None:
                raise invalid_filter("Unexpected end of filter.")
            if self.tokens.peek_keyword("not"):
                self.tokens.next()
                if (self.tokens.peek() or ("", ""))[0] != "(":
                    raise invalid_filter("'not' must be followed by a parenthesised filter.")
                return Not(self.unary(in_brackets=in_brackets))
            if tok[0] == "(":
                self.tokens.next()
                node = self.or_expr(in_brackets=in_brackets)
                if self.tokens.next()[0] != ")":
                    raise invalid_filter("Missing ')' in filter.")
                return node
            return self.attr_expr(in_brackets=in_brackets)
        finally:
            self.depth -= 1

    def attr_expr(self, *, in_brackets: bool) -> Node:
        kind, word = self.tokens.next()
        if kind != "word":
            raise invalid_filter(f"Expected an attribute name, found {word!r}.")
        if word.lower() in OPERATORS | {"and", "or"}:
            raise invalid_filter(f"Expected an attribute name, found {word!r}.")
        path = split_attr_path(word)
        nxt = self.tokens.peek()
        if nxt and nxt[0] == "[":
            if in_brackets or path.sub:
                raise invalid_filter("Nested value filters are not allowed (RFC 7644 §3.4.2.2).")
            self.tokens.next()
            inner = self.or_expr(in_brackets=True)
            if self.tokens.next()[0] != "]":
                raise invalid_filter("Missing ']' in filter.")
            after = self.tokens.peek()
            if after and after[0] == "word" and after[1].startswith("."):
                # Entra: `emails[type eq "work"].value eq "x"` — a value path followed by a comparison.
                self.tokens.next()
                sub = split_attr_path(after[1][1:])
                if sub.sub or sub.schema:
                    raise invalid_filter(f"Invalid sub-attribute {after[1]!r}.")
                inner = And(inner, self._comparison(AttrPath(None, sub.attr, None, sub.text)))
            return ElementFilter(path, inner)
        return self._comparison(path)

    def _comparison(self, path: AttrPath) -> Node:
        kind, op = self.tokens.next()
        if kind != "word" or op.lower() not in OPERATORS:
            raise invalid_filter(f"Unknown operator {op!r} (expected one of {', '.join(sorted(OPERATORS))}).")
        op = op.lower()
        if op == "pr":
            return Compare(path, "pr")
        kind, raw = self.tokens.next()
        if kind == "str":
            return Compare(path, op, raw)
        if kind != "word":
            raise invalid_filter(f"Expected a value after {op!r}.")
        lowered = raw.lower()
        if lowered in ("true", "false"):
            return Compare(path, op, lowered == "true")
        if lowered == "null":
            return Compare(path, op, None)
        try:
            number = json.loads(raw)
        except ValueError:
            number = None
        if isinstance(number, int | float) and not isinstance(number, bool):
            problem = number_refused(number)
            if problem:
                raise invalid_filter(f"The number {raw[:32]!r} {problem}.")
            return Compare(path, op, number)
        raise invalid_filter(f"Invalid value {raw!r}: strings must be quoted.")


def parse_filter(text: str) -> Node:
    """Parse a filter expression; any defect is a ScimError 400 invalidFilter."""
    if not isinstance(text, str) or not text.strip():
        raise invalid_filter("The filter is empty.")
    if len(text) > MAX_FILTER_LENGTH:
        raise invalid_filter(f"The filter is longer than {MAX_FILTER_LENGTH} characters.")
    if "\x00" in text:
        raise invalid_filter("The filter contains a NUL character.")
    return _Parser(text).parse()


@dataclass(frozen=True)
class PatchPath:
    """A PATCH `path` (RFC 7644 §3.5.2): attribute, optional value filter, optional sub-attribute."""

    attr: AttrPath  # attr.sub is the sub-attribute for `name.givenName`
    element_filter: Node | None
    sub: str | None  # the sub-attribute after a value filter: `emails[type eq "work"].value`


def parse_patch_path(text: Any) -> PatchPath:
    if not isinstance(text, str) or not text.strip():
        raise invalid_path("PATCH 'path' must be a non-empty string.")
    text = text.strip()
    if len(text) > MAX_FILTER_LENGTH or "\x00" in text:
        raise invalid_path("Invalid PATCH path.")
    if "[" not in text:
        return PatchPath(split_attr_path(text, for_patch=True), None, None)
    head, _, rest = text.partition("[")
    body, close, tail = rest.rpartition("]")
    if not close:
        raise invalid_path(f"Invalid PATCH path {text!r}: missing ']'.")
    attr = split_attr_path(head, for_patch=True)
    if attr.sub:
        raise invalid_path(f"Invalid PATCH path {text!r}.")
    sub: str | None = None
    if tail:
        if not tail.startswith(".") or not _valid_name(tail[1:]):
            raise invalid_path(f"Invalid PATCH path {text!r}.")
        sub = tail[1:].lower()
    try:
        inner = _Parser(body).parse() if body.strip() else None
    except ScimError as exc:
        raise invalid_path(f"Invalid value filter in PATCH path: {exc.detail}") from exc
    if inner is None:
        raise invalid_path(f"Invalid PATCH path {text!r}: empty value filter.")
    return PatchPath(attr, inner, sub)


def _get_ci(obj: dict[str, Any], key: str) -> Any:
    for k, v in obj.items():
        if k.lower() == key:
            return v
    return None


def _fold(value: Any) -> Any:
    return value.casefold() if isinstance(value, str) else value


def matches(node: Node, element: Any) -> bool:
    """Evaluate a value-filter against one element of a multi-valued attribute (sub-attributes compared
    case-insensitively: `type`, `value` of emails etc. are caseExact=false in RFC 7643 §4.1.2)."""
    if isinstance(node, And):
        return matches(node.left, element) and matches(node.right, element)
    if isinstance(node, Or):
        return matches(node.left, element) or matches(node.right, element)
    if isinstance(node, Not):
        return not matches(node.inner, element)
    if isinstance(node, ElementFilter):
        raise invalid_filter("Nested value filters are not allowed.")
    if not isinstance(element, dict):
        # A multi-valued attribute of simple values: compare the element itself as `value`.
        element = {"value": element}
    actual = _get_ci(element, node.path.attr)
    if node.path.sub is not None:
        actual = _get_ci(actual, node.path.sub) if isinstance(actual, dict) else None
    if node.op == "pr":
        return actual not in (None, "", [], {})
    expected = node.value
    if isinstance(expected, bool) and isinstance(actual, str) and actual.lower() in ("true", "false"):
        actual = actual.lower() == "true"
    a, e = _fold(actual), _fold(expected)
    if node.op == "eq":
        return a == e
    if node.op == "ne":
        return a != e
    if not isinstance(a, str) or not isinstance(e, str):
        if node.op in ("co", "sw", "ew"):
            return False
        if not isinstance(a, int | float) or not isinstance(e, int | float) or isinstance(a, bool):
            return False
    if node.op == "co":
        return e in a
    if node.op == "sw":
        return a.startswith(e)
    if node.op == "ew":
        return a.endswith(e)
    if node.op == "gt":
        return a > e
    if node.op == "ge":
        return a >= e
    if node.op == "lt":
        return a < e
    return a <= e
