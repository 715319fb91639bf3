"""The comparison document of a user or group: what filters and sortBy read (the `filter_doc` column).

A resource's `raw` is kept exactly as sent; comparing it as sent would need case folding inside the
database, where neither SQLite's nor PostgreSQL's `lower()` is Python's NFC + casefold
(core.comparison), so the two databases would answer differently. This document is derived once per
write instead, in one uniform shape that both databases walk the same way:

- every key is lower-cased (attribute names are case-insensitive, RFC 7643 §2.1);
- every attribute's value is a list: a singular value becomes a one-element list, so "some value at
  this path satisfies the test" is one rule for singular and multi-valued attributes alike;
- strings of caseExact=false attributes are in comparison form (NFC + casefold), those of
  caseExact=true ones (externalId, x509Certificates.value) as sent; a number or boolean sent for a
  string attribute is kept as its JSON text, so it compares (and sorts) like the string it stands for;
- empty values (null, "", [], {}) are left out, so `pr` is "the key exists";
- in a multi-valued attribute the primary element comes first, so the first element is the one that
  RFC 7644 §3.4.2.3 sorts by;
- `schemas`, `id`, `meta`, `password` and the read-only `groups`/`members` are left out (id and meta
  are columns, groups and members come from the membership table).

Attributes under an extension URN Roster does not publish are kept with every string folded (RFC 7643
§2.2: caseExact defaults to false). Unknown attributes of the core schema are left out: no filter can
name them (scim/protocol/attributes.py refuses them).
"""

from __future__ import annotations

from typing import Any

import orjson

from core.comparison import comparison_key
from scim.protocol.attributes import DOCUMENT_SCHEMAS, STRING_TYPES, Info

_SKIPPED = frozenset({"schemas", "id", "meta", "password", "groups", "members"})
_EMPTY: tuple[Any, ...] = (None, "", [], {})


def filter_document(raw: dict[str, Any], *, resource_type: str) -> dict[str, Any]:
    """The comparison document of a stored `raw` document of 'users' or 'groups'."""
    schemas = DOCUMENT_SCHEMAS[resource_type]
    core = schemas[None]
    out: dict[str, Any] = {}
    for key, value in raw.items():
        lowered = key.lower()
        if lowered in _SKIPPED or value in _EMPTY:
            continue
        if lowered in schemas:  # a published extension (the enterprise User extension)
            if isinstance(value, dict):
                _put(out, lowered, [_extension(value, schemas[lowered])])
        elif lowered.startswith("urn:"):
            if isinstance(value, dict):
                _put(out, lowered, [_extension(value, None)])
        elif lowered in core:
            _put(out, lowered, _values(value, core[lowered]))
    return out


def _put(out: dict[str, Any], key: str, values: list[Any]) -> None:
    values = [v for v in values if v not in _EMPTY]
    if values:
        out[key] = values


def _extension(value: dict[str, Any], infos: dict[str, Info] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        lowered = key.lower()
        if lowered == "schemas" or item in _EMPTY:
            continue
        if infos is None:
            _put(out, lowered, _loose(item))
        elif lowered in infos:
            _put(out, lowered, _values(item, infos[lowered]))
    return out


def _values(value: Any, info: Info) -> list[Any]:
    """A published attribute's values: a list of scalars, or of objects of sub-attribute lists."""
    items = value if isinstance(value, list) else [value]
    if not info.subs:
        return [_scalar(v, info.type, info.case_exact) for v in items if not isinstance(v, dict | list)]
    elements = []
    for item in items:
        if not isinstance(item, dict):
            continue
        element: dict[str, Any] = {}
        for key, sub_value in item.items():
            sub = info.subs.get(key.lower())
            if sub is None or sub_value in _EMPTY:
                continue
            scalars = sub_value if isinstance(sub_value, list) else [sub_value]
            _put(element, key.lower(), [_scalar(v, sub.type, sub.case_exact) for v in scalars if _is_scalar(v)])
        if element:
            elements.append(element)
    # The primary element first: sortBy on a multi-valued attribute sorts by it (RFC 7644 §3.4.2.3).
    elements.sort(key=lambda e: e.get("primary") != [True])
    return elements


def _loose(value: Any) -> list[Any]:
    """A value under an extension Roster does not publish: strings folded, structure kept as lists."""
    items = value if isinstance(value, list) else [value]
    out: list[Any] = []
    for item in items:
        if isinstance(item, dict):
            element: dict[str, Any] = {}
            for key, sub_value in item.items():
                if sub_value not in _EMPTY:
                    _put(element, key.lower(), _loose(sub_value))
            if element:
                out.append(element)
        elif isinstance(item, list):
            out += _loose(item)
        elif isinstance(item, str):
            out.append(comparison_key(item))
        else:
            out.append(item)
    return out


def _is_scalar(value: Any) -> bool:
    return value is not None and not isinstance(value, dict | list)


def _scalar(value: Any, kind: str, case_exact: bool) -> Any:
    if isinstance(value, str):
        if kind == "boolean" and value.lower() in ("true", "false"):
            return value.lower() == "true"  # Entra's legacy string booleans (interop E2)
        return value if case_exact else comparison_key(value)
    if kind in STRING_TYPES:
        # A number (or boolean) sent for a string attribute compares and sorts as its JSON text.
        return orjson.dumps(value).decode()
    return value
