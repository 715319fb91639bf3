"""Translate a parsed SCIM filter into a Django Q over DirectoryUser / DirectoryGroup columns.

Everything runs in the database. What cannot be expressed faithfully is refused with 400
invalidFilter (RFC 7644 §3.4.2.2): an unsupported filter silently ignored would return every user.

Comparison semantics follow RFC 7643 `caseExact`: userName and displayName are compared on their
NFC+casefold key columns; name parts and emails case-insensitively; externalId and id exactly.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Lower
from django.db.models.lookups import GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual

from core.comparison import comparison_key
from directories.models import GroupMembership
from scim.protocol.documents.emails import ENTRY, FIELD, index_text
from scim.protocol.errors import ScimError, invalid_filter
from scim.protocol.filter import ENTERPRISE_SCHEMA, And, AttrPath, Compare, ElementFilter, Node, Not, Or, parse_filter

ALWAYS = Q(pk__isnull=False)
NEVER = Q(pk__in=[])

_NOT_SEP = "[^\x1e\x1f]"

_ORDERING = {"gt": GreaterThan, "ge": GreaterThanOrEqual, "lt": LessThan, "le": LessThanOrEqual}


def _string(node: Compare) -> str:
    if not isinstance(node.value, str):
        raise invalid_filter(f"{node.path.text} {node.op} needs a quoted string value.")
    return node.value


def _key_column(column: str) -> Callable[[Compare], Q]:
    """A caseExact=false attribute stored casefolded in `column` (user_name_key, display_name_key)."""

    def compile_(node: Compare) -> Q:
        if node.op == "pr":
            return ALWAYS
        if node.value is None and node.op in ("eq", "ne"):
            return NEVER if node.op == "eq" else ALWAYS
        key = comparison_key(_string(node))
        lookup = {"eq": "exact", "co": "contains", "sw": "startswith", "ew": "endswith"}
        if node.op == "ne":
            return ~Q(**{column: key})
        if node.op in lookup:
            return Q(**{f"{column}__{lookup[node.op]}": key})
        return Q(**{f"{column}__{node.op[0]}{'t' if node.op[1] == 't' else 'te'}": key})

    return compile_


def _exact_column(column: str, *, nullable: bool = True) -> Callable[[Compare], Q]:
    """A caseExact=true string attribute (externalId)."""

    def compile_(node: Compare) -> Q:
        present = Q(**{f"{column}__isnull": False}) & ~Q(**{column: ""})
        if node.op == "pr":
            return present
        if node.value is None and node.op in ("eq", "ne"):
            return ~present if node.op == "eq" else present
        value = _string(node)
        lookup = {"eq": "exact", "co": "contains", "sw": "startswith", "ew": "endswith"}
        if node.op == "ne":
            return ~Q(**{column: value})
        if node.op in lookup:
            return Q(**{f"{column}__{lookup[node.op]}": value})
        return Q(**{f"{column}__{ {'gt': 'gt', 'ge': 'gte', 'lt': 'lt', 'le': 'lte'}[node.op] }": value})

    return compile_


def _insensitive_column(column: str) -> Callable[[Compare], Q]:
    """A caseExact=false attribute stored as sent (name.givenName, name.familyName)."""

    def compile_(node: Compare) -> Q:
        present = ~Q(**{column: ""})
        if node.op == "pr":
            return present
        if node.value is None and node.op in ("eq", "ne"):
            return ~present if node.op == "eq" else present
        value = _string(node)
        lookup = {"eq": "iexact", "co": "icontains", "sw": "istartswith", "ew": "iendswith"}
        if node.op == "ne":
            return ~Q(**{f"{column}__iexact": value})
        if node.op in lookup:
            return Q(**{f"{column}__{lookup[node.op]}": value})
        return Q(_ORDERING[node.op](Lower(column), value.lower()))

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


def _active(node: Compare) -> Q:
    if node.op == "pr":
        return ALWAYS
    value = node.value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        value = value.lower() == "true"  # Entra's legacy string booleans
    if node.op not in ("eq", "ne") or not isinstance(value, bool):
        raise invalid_filter("active supports eq and ne with true or false.")
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
        if node.op == "eq":
            return Q(**{column: moment})
        if node.op == "ne":
            return ~Q(**{column: moment})
        return Q(**{f"{column}__{ {'gt': 'gt', 'ge': 'gte', 'lt': 'lt', 'le': 'lte'}[node.op] }": moment})

    return compile_


def _email_field_fragment(op: str, value: Any, field: str) -> str:
    if op == "pr":
        return f"{_NOT_SEP}+"
    if field == "primary":
        if op != "eq" or not isinstance(value, bool):
            raise invalid_filter("emails.primary supports only eq true / eq false.")
        return "true" if value else ""
    if not isinstance(value, str):
        raise invalid_filter(f"emails.{field} needs a quoted string value.")
    text = re.escape(comparison_key(value))
    if ENTRY in value or FIELD in value:
        return "(?!)"
    if op == "eq":
        return text
    if op == "co":
        return f"{_NOT_SEP}*{text}{_NOT_SEP}*"
    if op == "sw":
        return f"{text}{_NOT_SEP}*"
    if op == "ew":
        return f"{_NOT_SEP}*{text}"
    raise invalid_filter(f"emails.{field} supports eq, co, sw, ew and pr, not {op}.")


def _email_conjunctions(node: Node) -> list[dict[str, tuple[str, Any]]]:
    """A value filter on emails as a disjunction of conjunctions of {sub-attribute: (op, value)}."""
    if isinstance(node, Or):
        return _email_conjunctions(node.left) + _email_conjunctions(node.right)
    if isinstance(node, And):
        result = []
        for left in _email_conjunctions(node.left):
            for right in _email_conjunctions(node.right):
                if any(k in left and left[k] != v for k, v in right.items()):
                    raise invalid_filter("Two conditions on the same email sub-attribute are not supported.")
                result.append({**left, **right})
        return result
    if isinstance(node, Compare) and node.path.sub is None and node.path.schema is None:
        field = node.path.attr
        if field not in ("type", "value", "primary"):
            raise invalid_filter(f"emails[{node.path.text} …] is not supported (type, value, primary are).")
        return [{field: (node.op, node.value)}]
    raise invalid_filter("This emails value filter is not supported (use eq/co/sw/ew/pr joined by and/or).")


def _emails_regex(conj: dict[str, tuple[str, Any]]) -> str:
    frags = []
    for field in ("type", "value", "primary"):
        if field in conj:
            frags.append(_email_field_fragment(*conj[field], field))
        else:
            frags.append(f"{_NOT_SEP}*")
    return ENTRY + FIELD.join(frags) + ENTRY


def _emails_compare(node: Compare) -> Q:
    """`emails.value op x` (or `emails op x`, RFC 7644 §3.4.2.2: multi-valued without sub means value)."""
    sub = node.path.sub or "value"
    if sub not in ("value", "type", "primary"):
        raise invalid_filter(f"emails.{sub} is not filterable.")
    if node.op == "ne":
        return ~_emails_compare(Compare(node.path, "eq", node.value))
    if node.op == "eq" and sub == "value" and isinstance(node.value, str):
        # The common case stays a plain LIKE, which every backend runs without a regex engine.
        return Q(emails_index__contains=FIELD + index_text(node.value) + FIELD)
    return Q(emails_index__regex=_emails_regex({sub: (node.op, node.value)}))


def _emails_element(node: ElementFilter) -> Q:
    q = NEVER
    for conj in _email_conjunctions(node.inner):
        q |= Q(emails_index__regex=_emails_regex(conj))
    return q


def _members_compare(node: Compare) -> Q:
    sub = node.path.sub or "value"
    if sub != "value" or node.op != "eq" or not isinstance(node.value, str):
        raise invalid_filter('Groups can be filtered on members with eq only: members[value eq "<user id>"].')
    try:
        user_id = uuid.UUID(node.value)
    except ValueError:
        return NEVER
    return Q(Exists(GroupMembership.objects.filter(group_id=OuterRef("pk"), user_id=user_id)))


def _members_element(node: ElementFilter) -> Q:
    def walk(inner: Node) -> Q:
        if isinstance(inner, Or):
            return walk(inner.left) | walk(inner.right)
        if isinstance(inner, Compare) and inner.path.attr == "value" and inner.path.sub is None:
            return _members_compare(Compare(node.path, inner.op, inner.value))
        raise invalid_filter('Groups can be filtered on members with eq only: members[value eq "<user id>"].')

    return walk(node.inner)


Compiler = Callable[[Compare], Q]

USER_ATTRIBUTES: dict[tuple[str, str | None], Compiler] = {
    ("username", None): _key_column("user_name_key"),
    ("externalid", None): _exact_column("external_id"),
    ("id", None): _id,
    ("active", None): _active,
    ("name", "givenname"): _insensitive_column("first_name"),
    ("name", "familyname"): _insensitive_column("last_name"),
    ("meta", "created"): _datetime_column("created_at"),
    ("meta", "lastmodified"): _datetime_column("updated_at"),
}
GROUP_ATTRIBUTES: dict[tuple[str, str | None], Compiler] = {
    ("displayname", None): _key_column("display_name_key"),
    ("externalid", None): _exact_column("external_id"),
    ("id", None): _id,
    ("meta", "created"): _datetime_column("created_at"),
    ("meta", "lastmodified"): _datetime_column("updated_at"),
}
USER_FILTERABLE = "userName, externalId, id, active, name.givenName, name.familyName, emails, emails.value, "
USER_FILTERABLE += 'emails[type eq "…"], meta.created, meta.lastModified'
GROUP_FILTERABLE = "displayName, externalId, id, members.value, meta.created, meta.lastModified"


class _Compiler:
    def __init__(self, resource_type: str) -> None:
        self.is_user = resource_type == "users"
        self.table = USER_ATTRIBUTES if self.is_user else GROUP_ATTRIBUTES

    def compile(self, node: Node) -> Q:
        if isinstance(node, And):
            return self.compile(node.left) & self.compile(node.right)
        if isinstance(node, Or):
            return self.compile(node.left) | self.compile(node.right)
        if isinstance(node, Not):
            return ~self.compile(node.inner)
        if isinstance(node, ElementFilter):
            self._check_schema(node.path)
            if self.is_user and node.path.attr == "emails":
                return _emails_element(node)
            if not self.is_user and node.path.attr == "members":
                return _members_element(node)
            raise self._unsupported(node.path)
        path = node.path
        self._check_schema(path)
        if path.attr == "password":
            raise ScimError(403, "Filtering on password is not allowed.", scim_type="sensitive")
        if self.is_user and path.attr == "emails":
            return _emails_compare(node)
        if not self.is_user and path.attr == "members":
            return _members_compare(node)
        compiler = self.table.get((path.attr, path.sub))
        if compiler is None:
            raise self._unsupported(path)
        return compiler(node)

    def _check_schema(self, path: AttrPath) -> None:
        if path.schema is not None and not (self.is_user and path.schema == ENTERPRISE_SCHEMA.lower()):
            raise self._unsupported(path)
        if path.schema is not None:
            # No enterprise attribute has a filter column yet; say so rather than scan raw JSON.
            raise self._unsupported(path)

    def _unsupported(self, path: AttrPath) -> ScimError:
        supported = USER_FILTERABLE if self.is_user else GROUP_FILTERABLE
        return invalid_filter(f"Filtering on {path.text!r} is not supported. Filterable: {supported}.")


def filter_q(text: str, *, resource_type: str) -> Q:
    """Parse `text` and compile it for 'users' or 'groups'; raises ScimError (400 invalidFilter, 403 sensitive)."""
    return _Compiler(resource_type).compile(parse_filter(text))


@dataclass(frozen=True)
class Equality:
    """`column = value`: the whole filter is one equality on an indexed column."""

    column: str
    value: str


# What identity providers send before every push (Okta: userName eq, Entra: userName/externalId eq,
# displayName eq for groups): the column it compares and how the value becomes that column's form.
_EQUALITY_COLUMNS: dict[tuple[bool, str], tuple[str, Callable[[str], str]]] = {
    (True, "username"): ("user_name_key", comparison_key),
    (True, "externalid"): ("external_id", str),
    (False, "displayname"): ("display_name_key", comparison_key),
    (False, "externalid"): ("external_id", str),
}


def filter_plan(text: str, *, resource_type: str) -> Q | Equality:
    """Like `filter_q`, but a filter that is a single `eq` on userName, externalId or displayName
    comes back as an `Equality`, which the selectors answer with a fixed SQL statement instead of
    compiling a QuerySet (bench/README.md: the lookup every push starts with)."""
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
    return _Compiler(resource_type).compile(node)
