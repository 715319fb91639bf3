"""`sortBy` and `sortOrder` (RFC 7644 §3.4.2.3) as the ORDER BY of a user or group list.

Any attribute a filter can name can be sorted by (scim/protocol/attributes.py). Strings of caseExact=false
attributes sort by their comparison form (case-insensitively), in code-point order on every database;
a multi-valued attribute sorts by its primary value, else its first (the comparison document keeps the
primary element first); a resource without a value sorts after every value in ascending order and
before them in descending order. Ties are broken by `id` in the same direction, so a descending list
is exactly the ascending one reversed and paging stays stable.
"""

from __future__ import annotations

from typing import Any, Protocol

from django.db.models import Expression, F, OrderBy, OuterRef, Subquery

from directories.models import GroupMembership
from scim.protocol.attributes import resolve
from scim.protocol.errors import ScimError, invalid_value
from scim.protocol.filter import MAX_FILTER_LENGTH, split_attr_path

ORDERS = ("ascending", "descending")


class SortDocuments(Protocol):
    """What sorting needs of the store's document dialect (scim.storage.query.documents)."""

    def sort_key(self, steps: tuple[str, ...], *, strings_only: bool) -> Expression: ...

    def text_order(self, expression: Any) -> Any: ...


_COLUMNS = {
    "username": ("user_name_key", True),
    "displayname": ("display_name_key", True),
    "externalid": ("external_id", True),
    "meta.created": ("created_at", False),
    "meta.lastmodified": ("updated_at", False),
    "active": ("active", False),
}


def _first_membership(field: str, *, users: bool) -> Subquery:
    """The `field` of a user's first group (or a group's first member), in membership order."""
    owner = "user" if users else "group"
    first = GroupMembership.objects.filter(**{owner: OuterRef("pk")}).order_by("id").values(field)[:1]
    return Subquery(first)


def sort_plan(sort_by: Any, sort_order: Any, *, resource_type: str, documents: SortDocuments) -> list[OrderBy] | None:
    """The ORDER BY for `sortBy`/`sortOrder` on 'users' or 'groups', or None when `sortBy` is absent
    (the list keeps its (created, id) order). A `sortBy` that names nothing sortable, or a `sortOrder`
    other than ascending/descending, is 400 invalidValue."""
    order = "" if sort_order is None else str(sort_order).strip().lower()
    if order and order not in ORDERS:
        raise invalid_value("sortOrder must be ascending or descending.")
    text = "" if sort_by is None else str(sort_by).strip()
    if not text:
        return None
    if len(text) > MAX_FILTER_LENGTH:
        raise invalid_value("sortBy is too long.")
    try:
        path = split_attr_path(text)
        if path.schema is None and path.attr == "password":
            raise invalid_value("password cannot be sorted by.")
        attribute = resolve(path, resource_type=resource_type, refuse=invalid_value)
    except ScimError as exc:
        if exc.scim_type == "invalidFilter":
            raise invalid_value(f"sortBy must be an attribute path: {exc.detail}") from exc
        raise
    key: Any
    if attribute.kind == "column":
        if attribute.column in ("id", "meta.resourcetype"):
            key = None  # the id tie-break is the whole order
        else:
            column, text_column = _COLUMNS[attribute.column]
            key = documents.text_order(F(column)) if text_column else F(column)
    elif attribute.kind in ("groups", "members"):
        users = attribute.kind == "groups"
        if users and attribute.sub == "display":
            key = documents.text_order(_first_membership("group__display_name_key", users=True))
        else:
            key = _first_membership("group_id" if users else "user_id", users=users)
    else:
        if attribute.complex:
            raise invalid_value(f"{attribute.text} is complex: sort by one of its sub-attributes.")
        key = documents.sort_key(attribute.steps, strings_only=attribute.type is None)
    descending = order == "descending"
    tie = F("id").desc() if descending else F("id").asc()
    if key is None:
        return [tie]
    first = key.desc(nulls_first=True) if descending else key.asc(nulls_last=True)
    return [first, tie]
