"""Translate a parsed SCIM filter into a Django Q over DirectoryUser / DirectoryGroup.

Everything runs in the database. Which attribute a path names, and how it compares, comes from
scim/protocol/attributes.py; what cannot be expressed faithfully is refused with 400 invalidFilter
(RFC 7644 §3.4.2.2): an unsupported filter silently ignored would return every user.

Three kinds of attributes:
- columns: userName and displayName on their NFC+casefold key columns, externalId and id exactly,
  active, meta.created and meta.lastModified (all indexed or cheap);
- memberships: a user's `groups` and a group's `members`, as EXISTS over the membership table;
- everything else, in the resource's comparison document (`filter_doc`, see
  scim/protocol/documents/filterdoc.py): a test on it is a `DocTest`/`DocElement` tree that the store's
  `documents` dialect (scim.storage.query.documents) turns into SQL for its database, so that SQLite and
  PostgreSQL give the same answers.

A filter that is one equality on an indexed column is planned apart (`filter_plan`): kept for speed,
bench/README.md, 'Code kept for speed', "Fixed SQL for hot lookups".
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from django.db.models import Exists, Expression, OuterRef, Q

from core.comparison import comparison_key
from directories.models import GroupMembership
from scim.protocol.attributes import STRING_TYPES, Attribute, Info, element_info, resolve
from scim.protocol.errors import invalid_filter
from scim.protocol.filter import And, AttrPath, Compare, ElementFilter, Node, Not, Or, parse_filter
from scim.selectors import Equality

ALWAYS = Q(pk__isnull=False)
NEVER = Q(pk__in=[])


# --- tests on the comparison document, rendered by the store's dialect ---------------------------------


@dataclass(frozen=True)
class DocTest:
    """Some value at `steps` satisfies `op` with `value`. Ops: eq co sw ew gt ge lt le (the value is in
    comparison form already), pr (a value exists) and str (a string value exists: `co ""`)."""

    steps: tuple[str, ...]
    op: str
    value: Any = None


@dataclass(frozen=True)
class DocAll:
    left: DocNode
    right: DocNode


@dataclass(frozen=True)
class DocAny:
    left: DocNode
    right: DocNode


@dataclass(frozen=True)
class DocNot:
    inner: DocNode


@dataclass(frozen=True)
class DocElement:
    """Some element at `steps` satisfies `inner`, whose steps are relative to the element."""

    steps: tuple[str, ...]
    inner: DocNode


DocNode = DocTest | DocAll | DocAny | DocNot | DocElement


class Documents(Protocol):
    """The store's SQL for the comparison document (scim.storage.query.documents: one per database)."""

    def condition(self, node: DocNode) -> Expression: ...


# --- columns ------------------------------------------------------------------------------------------

_LOOKUPS = {"eq": "exact", "co": "contains", "sw": "startswith", "ew": "endswith"}
_ORDERING = {"gt": "gt", "ge": "gte", "lt": "lt", "le": "lte"}


def _string(node: Compare) -> str:
    if not isinstance(node.value, str):
        raise invalid_filter(f"{node.path.text} {node.op} needs a quoted string value.")
    return node.value


def _text_column(column: str, *, fold: bool, nullable: bool) -> Callable[[Compare], Q]:
    """A string column: `fold` for a caseExact=false attribute stored in comparison form."""

    def compile_(node: Compare) -> Q:
        present = Q(**{f"{column}__isnull": False}) & ~Q(**{column: ""}) if nullable else ALWAYS
        if node.op == "pr":
            return present
        if node.value is None and node.op in ("eq", "ne"):
            return ~present if node.op == "eq" else present
        value = _string(node)
        value = comparison_key(value) if fold else value
        if node.op == "ne":
            return ~Q(**{column: value})
        lookup = _LOOKUPS.get(node.op) or _ORDERING[node.op]
        return Q(**{f"{column}__{lookup}": value})

    return compile_


def _id(node: Compare) -> Q:
    if node.op == "pr":
        return ALWAYS
    if node.op not in ("eq", "ne"):
        raise invalid_filter(f"id supports only eq, ne and pr, not {node.op}.")
    try:
        pk = uuid.UUID(_string(node))
    except ValueError:
        # An id that is not a UUID names no resource: no match for eq (never an error, never "all").
        return NEVER if node.op == "eq" else ALWAYS
    return Q(pk=pk) if node.op == "eq" else ~Q(pk=pk)


def _boolean(node: Compare) -> bool:
    value = node.value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        value = value.lower() == "true"  # Entra's legacy string booleans
    if node.op not in ("eq", "ne") or not isinstance(value, bool):
        raise invalid_filter(f"{node.path.text} supports eq and ne with true or false, and pr.")
    return value


def _active(node: Compare) -> Q:
    if node.op == "pr":
        return ALWAYS
    value = _boolean(node)
    return Q(active=value) if node.op == "eq" else Q(active=not value)


def _datetime_column(column: str) -> Callable[[Compare], Q]:
    def compile_(node: Compare) -> Q:
        if node.op == "pr":
            return ALWAYS
        if node.op in ("co", "sw", "ew"):
            raise invalid_filter(f"{node.path.text} supports eq, ne, gt, ge, lt, le and pr.")
        try:
            moment = datetime.fromisoformat(_string(node))
        except ValueError as exc:
            raise invalid_filter(f"{node.path.text} needs an ISO 8601 date-time.") from exc
        if moment.tzinfo is None:
            raise invalid_filter(f"{node.path.text} needs a date-time with a time zone (e.g. Z).")
        try:
            moment = moment.astimezone(UTC)  # as the database compares it
        except OverflowError as exc:
            raise invalid_filter(f"{node.path.text}: that moment is outside years 1 to 9999 in UTC.") from exc
        if node.op == "eq":
            return Q(**{column: moment})
        if node.op == "ne":
            return ~Q(**{column: moment})
        return Q(**{f"{column}__{_ORDERING[node.op]}": moment})

    return compile_


def _resource_type(name: str) -> Callable[[Compare], Q]:
    def compile_(node: Compare) -> Q:
        if node.op == "pr":
            return ALWAYS
        if node.op not in ("eq", "ne"):
            raise invalid_filter("meta.resourceType supports eq, ne and pr.")
        same = comparison_key(_string(node)) == comparison_key(name)
        return ALWAYS if same == (node.op == "eq") else NEVER

    return compile_


Compiler = Callable[[Compare], Q]
_COMMON_COLUMNS: dict[str, Compiler] = {
    "id": _id,
    "meta.created": _datetime_column("created_at"),
    "meta.lastmodified": _datetime_column("updated_at"),
    "externalid": _text_column("external_id", fold=False, nullable=True),
}
COLUMNS: dict[str, dict[str, Compiler]] = {
    "users": _COMMON_COLUMNS
    | {
        "username": _text_column("user_name_key", fold=True, nullable=False),
        "active": _active,
        "meta.resourcetype": _resource_type("User"),
    },
    "groups": _COMMON_COLUMNS
    | {
        "displayname": _text_column("display_name_key", fold=True, nullable=False),
        "meta.resourcetype": _resource_type("Group"),
    },
}


# --- memberships: a user's groups, a group's members ----------------------------------------------------


def _membership_value(node: Compare, field: str, *, ref: bool) -> Q:
    """`groups.value` / `members.value` (or `$ref`, read by its last segment) compared on a membership."""
    if node.op not in ("eq", "ne"):
        raise invalid_filter(f"{node.path.text} supports eq, ne and pr.")
    text = _string(node)
    try:
        pk = uuid.UUID(text.rstrip("/").rpartition("/")[2] if ref else text)
    except ValueError:
        return NEVER if node.op == "eq" else ALWAYS
    return Q(**{field: pk}) if node.op == "eq" else ~Q(**{field: pk})


def _membership_compare(node: Compare, sub: str, *, users: bool) -> Q:
    """A condition on one membership row (a user's group, or a group's member) for a sub-attribute."""
    if node.op == "pr":
        return ALWAYS
    if node.value is None and node.op in ("eq", "ne"):
        return NEVER if node.op == "eq" else ALWAYS
    other = "group_id" if users else "user_id"
    if sub in ("value", "$ref"):
        return _membership_value(node, other, ref=sub == "$ref")
    if sub == "type":
        # Every membership is "direct" (a user's groups) or of a "User" (a group's members).
        return _resource_type("direct" if users else "User")(node)
    # groups.display: the group's displayName, compared on its comparison form.
    return _text_column("group__display_name_key", fold=True, nullable=False)(node)


def _memberships(q: Q, *, users: bool) -> Q:
    owner = "user" if users else "group"
    return Q(Exists(GroupMembership.objects.filter(**{owner: OuterRef("pk")}).filter(q)))


# --- the compiler --------------------------------------------------------------------------------------


class _Compiler:
    def __init__(self, resource_type: str, documents: Documents) -> None:
        self.resource_type = resource_type
        self.is_user = resource_type == "users"
        self.documents = documents

    def compile(self, node: Node) -> Q:
        if isinstance(node, And):
            return self.compile(node.left) & self.compile(node.right)
        if isinstance(node, Or):
            return self.compile(node.left) | self.compile(node.right)
        if isinstance(node, Not):
            return ~self.compile(node.inner)
        if isinstance(node, ElementFilter):
            return self._element(node)
        attribute = resolve(node.path, resource_type=self.resource_type, refuse=invalid_filter)
        if attribute.kind == "column":
            return COLUMNS[self.resource_type][attribute.column](node)
        if attribute.kind in ("groups", "members"):
            users = attribute.kind == "groups"
            if node.op == "ne":
                return ~_memberships(_membership_compare(_eq(node), attribute.sub or "value", users=users), users=users)
            if node.op == "eq" and node.value is None:
                return ~_memberships(ALWAYS, users=users)
            return _memberships(_membership_compare(node, attribute.sub or "value", users=users), users=users)
        return self._document(node, attribute)

    def _document(self, node: Compare, attribute: Attribute) -> Q:
        test = document_test(node, attribute.steps, attribute.type, attribute.case_exact, attribute.complex)
        return _q(self.documents, test)

    def _element(self, node: ElementFilter) -> Q:
        path = node.path
        if path.schema is None and path.sub is None:
            if self.is_user and path.attr == "groups":
                return _memberships(self._membership_inner(node.inner, users=True), users=True)
            if not self.is_user and path.attr == "members":
                return _memberships(self._membership_inner(node.inner, users=False), users=False)
            if path.attr == "password":
                resolve(path, resource_type=self.resource_type, refuse=invalid_filter)  # 403 sensitive
        steps, info = element_info(path, resource_type=self.resource_type, refuse=invalid_filter)
        return _q(self.documents, DocElement(steps, self._element_inner(node.inner, info, path)))

    def _membership_inner(self, inner: Node, *, users: bool) -> Q:
        if isinstance(inner, And):
            return self._membership_inner(inner.left, users=users) & self._membership_inner(inner.right, users=users)
        if isinstance(inner, Or):
            return self._membership_inner(inner.left, users=users) | self._membership_inner(inner.right, users=users)
        if isinstance(inner, Not):
            return ~self._membership_inner(inner.inner, users=users)
        if isinstance(inner, ElementFilter) or inner.path.schema is not None or inner.path.sub is not None:
            raise invalid_filter("Nested value filters are not allowed (RFC 7644 §3.4.2.2).")
        subs = ("value", "$ref", "display", "type") if users else ("value", "$ref", "type")
        if inner.path.attr not in subs:
            raise invalid_filter(f"{'groups' if users else 'members'} has no sub-attribute {inner.path.text!r}.")
        if inner.op == "ne":
            return ~_membership_compare(_eq(inner), inner.path.attr, users=users)
        return _membership_compare(inner, inner.path.attr, users=users)

    def _element_inner(self, inner: Node, info: Info | None, outer: AttrPath) -> DocNode:
        if isinstance(inner, And):
            return DocAll(self._element_inner(inner.left, info, outer), self._element_inner(inner.right, info, outer))
        if isinstance(inner, Or):
            return DocAny(self._element_inner(inner.left, info, outer), self._element_inner(inner.right, info, outer))
        if isinstance(inner, Not):
            return DocNot(self._element_inner(inner.inner, info, outer))
        if isinstance(inner, ElementFilter) or inner.path.schema is not None:
            raise invalid_filter("Nested value filters are not allowed (RFC 7644 §3.4.2.2).")
        if info is None:  # an extension Roster does not publish: any sub-path, values by their JSON type
            steps = (inner.path.attr, *((inner.path.sub,) if inner.path.sub else ()))
            return document_test(inner, steps, None, False, False)
        sub = info.subs.get(inner.path.attr)
        if sub is None or inner.path.sub is not None:
            raise invalid_filter(f"{outer.text}[…]: {info.name} has no sub-attribute {inner.path.text!r}.")
        return document_test(inner, (inner.path.attr,), sub.type, sub.case_exact, False)


def _eq(node: Compare) -> Compare:
    return Compare(node.path, "eq", node.value)


def _q(documents: Documents, node: DocNode) -> Q:
    """A document test as a Q; a negation stays outside the SQL so that Django can combine it."""
    if isinstance(node, DocNot):
        return ~_q(documents, node.inner)
    return Q(documents.condition(node))


def document_test(node: Compare, steps: tuple[str, ...], kind: str | None, case_exact: bool, complex_: bool) -> DocNode:
    """A comparison on a document attribute of SCIM type `kind` (None: unknown, compared by JSON type)."""
    op, value = node.op, node.value
    if op == "pr":
        return DocTest(steps, "pr")
    if value is None:
        if op not in ("eq", "ne"):
            raise invalid_filter(f"{node.path.text} {op} null is not a comparison; use pr or eq null.")
        present = DocTest(steps, "pr")
        return DocNot(present) if op == "eq" else present
    if op == "ne":
        return DocNot(document_test(Compare(node.path, "eq", value), steps, kind, case_exact, complex_))
    if complex_:
        raise invalid_filter(f"{node.path.text} is complex: filter on one of its sub-attributes (or use pr).")
    if kind == "boolean":
        return DocTest(steps, "eq", _boolean(node))
    if isinstance(value, bool) and op not in ("eq",):
        raise invalid_filter(f"{node.path.text} {op} cannot compare a boolean (RFC 7644 §3.4.2.2).")
    if kind in STRING_TYPES:
        value = _string(node)
        if kind == "binary" and op != "eq":
            raise invalid_filter(f"{node.path.text} is binary: only eq, ne and pr apply.")
    if op in ("co", "sw", "ew") and not isinstance(value, str):
        raise invalid_filter(f"{node.path.text} {op} needs a quoted string value.")
    if isinstance(value, str):
        if not case_exact:
            value = comparison_key(value)
        if value == "" and op in ("co", "sw", "ew"):
            return DocTest(steps, "str")  # every string contains, starts and ends with ""
    return DocTest(steps, op, value)


def filter_q(text: str, *, resource_type: str, documents: Documents) -> Q:
    """Parse `text` and compile it for 'users' or 'groups'; raises ScimError (400 invalidFilter, 403 sensitive)."""
    return _Compiler(resource_type, documents).compile(parse_filter(text))


# What identity providers send before every push (Okta: userName eq, Entra: userName/externalId eq,
# displayName eq for groups): the column it compares and how the value becomes that column's form.
_EQUALITY_COLUMNS: dict[tuple[bool, str], tuple[str, Callable[[str], str]]] = {
    (True, "username"): ("user_name_key", comparison_key),
    (True, "externalid"): ("external_id", str),
    (False, "displayname"): ("display_name_key", comparison_key),
    (False, "externalid"): ("external_id", str),
}


def filter_plan(text: str, *, resource_type: str, documents: Documents) -> Q | Equality:
    """Like `filter_q`, but a filter that is a single `eq` on userName, externalId or displayName (the
    lookup every push starts with) comes back as an `Equality`, which the selectors answer with a fixed
    SQL statement instead of compiling a QuerySet."""
    node = parse_filter(text)
    if (
        isinstance(node, Compare)
        and node.op == "eq"
        and isinstance(node.value, str)
        and node.path.schema is None
        and node.path.sub is None
    ):
        column = _EQUALITY_COLUMNS.get((resource_type == "users", node.path.attr))
        if column is not None:
            return Equality(column[0], column[1](node.value))
    return _Compiler(resource_type, documents).compile(node)
