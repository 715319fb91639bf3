"""Which attribute a filter or `sortBy` names, and how it is compared (RFC 7644 §3.4.2.2, §3.4.2.3).

Every attribute of the published schemas (scim/protocol/schemas.py) can be filtered and sorted on, and
so can any attribute under an extension URN Roster does not publish (what the identity provider sends
there is kept in `raw`). `resolve` turns a parsed path into an `Attribute`: either one of the few
attributes kept in their own columns or computed from other tables (`kind` other than "document"), or
a path into the resource's comparison document (scim/protocol/documents/filterdoc.py). A name the
published schemas do not have is refused with the caller's error, naming it; `password` is sensitive.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scim.protocol.errors import ScimError
from scim.protocol.filter import ENTERPRISE_SCHEMA, GROUP_SCHEMA, USER_SCHEMA, AttrPath
from scim.protocol.schemas import ENTERPRISE_ATTRIBUTES, GROUP_ATTRIBUTES, USER_ATTRIBUTES

ENTERPRISE = ENTERPRISE_SCHEMA.lower()
STRING_TYPES = ("string", "reference", "binary")


@dataclass(frozen=True)
class Sub:
    name: str
    type: str
    case_exact: bool


@dataclass(frozen=True)
class Info:
    """A published attribute: its SCIM type, whether it is multi-valued, its caseExact and sub-attributes."""

    name: str
    type: str
    multi: bool
    case_exact: bool
    subs: dict[str, Sub]


def _infos(attributes: list[dict[str, Any]]) -> dict[str, Info]:
    return {
        a["name"].lower(): Info(
            a["name"],
            a["type"],
            a["multiValued"],
            a.get("caseExact", False),
            {
                s["name"].lower(): Sub(s["name"], s["type"], s.get("caseExact", False))
                for s in a.get("subAttributes", [])
            },
        )
        for a in attributes
    }


# RFC 7643 §3.1: externalId is caseExact; id and meta are common attributes kept in columns.
_EXTERNAL_ID = Info("externalId", "string", False, True, {})
USER_INFO = _infos(USER_ATTRIBUTES) | {"externalid": _EXTERNAL_ID}
GROUP_INFO = _infos(GROUP_ATTRIBUTES) | {"externalid": _EXTERNAL_ID}
ENTERPRISE_INFO = _infos(ENTERPRISE_ATTRIBUTES)
# Published attributes of each resource type's comparison document, by lower-case schema (None: core).
DOCUMENT_SCHEMAS: dict[str, dict[str | None, dict[str, Info]]] = {
    "users": {None: USER_INFO, ENTERPRISE: ENTERPRISE_INFO},
    "groups": {None: GROUP_INFO},
}
# Attributes answered from columns or other tables rather than the document: (kind, column key).
_SPECIAL: dict[str, dict[tuple[str, str | None], str]] = {
    "users": {
        ("username", None): "username",
        ("externalid", None): "externalid",
        ("active", None): "active",
    },
    "groups": {
        ("displayname", None): "displayname",
        ("externalid", None): "externalid",
    },
}
_COMMON = {
    ("id", None): "id",
    ("meta", "created"): "meta.created",
    ("meta", "lastmodified"): "meta.lastmodified",
    ("meta", "resourcetype"): "meta.resourcetype",
}


@dataclass(frozen=True)
class Attribute:
    """What a filter or sortBy path names.

    kind: "column" (`column` is the key: username, externalid, active, displayname, id, meta.created,
    meta.lastmodified, meta.resourcetype), "groups" (a user's groups), "members" (a group's members)
    or "document". For a document attribute, `steps` are the lower-case keys into the comparison
    document; `type` is the SCIM type (None for an extension Roster does not publish, whose values
    are compared by their JSON type) and `case_exact` how strings compare. `complex` marks a complex
    attribute named without a sub-attribute that has no `value` to stand for it (only `pr` applies)."""

    text: str
    kind: str
    column: str = ""
    sub: str | None = None
    steps: tuple[str, ...] = ()
    type: str | None = None
    case_exact: bool = False
    multi: bool = False
    complex: bool = False


Refuse = Callable[[str], ScimError]


def resolve(path: AttrPath, *, resource_type: str, refuse: Refuse) -> Attribute:
    """The attribute `path` names on 'users' or 'groups'; `refuse(detail)` builds the error for a name
    the resource type does not have (400 invalidFilter for filters, invalidValue for sortBy)."""
    schema, attr, sub = path.schema, path.attr, path.sub
    if schema is None and attr == "password":
        raise ScimError(403, "Filtering or sorting on password is not allowed.", scim_type="sensitive")
    core_urn = USER_SCHEMA if resource_type == "users" else GROUP_SCHEMA
    if schema is None:
        key = _COMMON.get((attr, sub)) or _SPECIAL[resource_type].get((attr, sub))
        if key is not None:
            return Attribute(path.text, "column", column=key)
        if attr == "meta":
            raise refuse(f"{path.text!r} is not filterable or sortable (meta.created, meta.lastModified are).")
        if resource_type == "users" and attr == "groups":
            return Attribute(path.text, "groups", sub=_sub_of(path, USER_INFO["groups"], refuse))
        if resource_type == "groups" and attr == "members":
            return Attribute(path.text, "members", sub=_sub_of(path, GROUP_INFO["members"], refuse))
    schemas = DOCUMENT_SCHEMAS[resource_type]
    if schema is not None and schema not in schemas:
        if schema in (USER_SCHEMA.lower(), GROUP_SCHEMA.lower(), ENTERPRISE):
            raise refuse(f"{path.text!r}: {schema} is not a schema of this resource type.")
        # An extension Roster does not publish: whatever the identity provider sent under it.
        steps = (schema, attr, *((sub,) if sub else ()))
        return Attribute(path.text, "document", steps=steps)
    info = schemas[schema].get(attr)
    if info is None:
        urn = core_urn if schema is None else ENTERPRISE_SCHEMA
        raise refuse(f"{path.text!r} is not an attribute of {urn}.")
    prefix = (schema,) if schema is not None else ()
    if sub is not None:
        found = info.subs.get(sub)
        if found is None:
            raise refuse(f"{path.text!r}: {info.name} has no sub-attribute {sub!r}.")
        return Attribute(
            path.text,
            "document",
            steps=(*prefix, attr, sub),
            type=found.type,
            case_exact=found.case_exact,
            multi=info.multi,
        )
    if info.subs:
        # RFC 7644 §3.4.2.2: a multi-valued attribute named without a sub-attribute means its `value`.
        value = info.subs.get("value") if info.multi else None
        if value is None:
            return Attribute(path.text, "document", steps=(*prefix, attr), type="complex", complex=True)
        return Attribute(
            path.text,
            "document",
            steps=(*prefix, attr, "value"),
            type=value.type,
            case_exact=value.case_exact,
            multi=True,
        )
    return Attribute(
        path.text, "document", steps=(*prefix, attr), type=info.type, case_exact=info.case_exact, multi=info.multi
    )


def _sub_of(path: AttrPath, info: Info, refuse: Refuse) -> str:
    """The sub-attribute of `groups`/`members` a path names (`value` when none)."""
    if path.sub is None:
        return "value"
    if path.sub not in info.subs:
        raise refuse(f"{path.text!r}: {info.name} has no sub-attribute {path.sub!r}.")
    return path.sub


def element_info(attribute: AttrPath, *, resource_type: str, refuse: Refuse) -> tuple[tuple[str, ...], Info | None]:
    """For a value filter `attr[...]`: the document steps to the elements and the attribute's published
    description (None for an extension Roster does not publish)."""
    schema = attribute.schema
    schemas = DOCUMENT_SCHEMAS[resource_type]
    if schema is not None and schema not in schemas:
        if schema in (USER_SCHEMA.lower(), GROUP_SCHEMA.lower(), ENTERPRISE):
            raise refuse(f"{attribute.text!r}: {schema} is not a schema of this resource type.")
        return (schema, attribute.attr), None
    info = schemas[schema].get(attribute.attr)
    if info is None:
        urn = (USER_SCHEMA if resource_type == "users" else GROUP_SCHEMA) if schema is None else ENTERPRISE_SCHEMA
        raise refuse(f"{attribute.text!r} is not an attribute of {urn}.")
    if not info.subs:
        raise refuse(f"{attribute.text!r} has no sub-attributes to filter on in brackets.")
    return ((schema,) if schema is not None else ()) + (attribute.attr,), info
