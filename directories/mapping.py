"""A directory's `attribute_map` and `role_map` (contract §3): validating them, and what they give a user.

- `attribute_map` is `{"<name>": "<SCIM attribute path>"}`; a user's `custom_attributes` holds, for each
  name, the value at that path of the user's `raw` document, or null when the user has none. A path is
  RFC 7644 §3.10's `attrPath` (`[URN ":"] attr ["." subAttr]`), optionally with a value filter of `eq`
  comparisons joined by `and` before the sub-attribute (`emails[type eq "work"].value`). Names of
  attributes and URNs are case-insensitive; a multi-valued attribute without a filter gives its
  primary element, else its first (as SCIM's sortBy reads one); a filter gives the first element it
  matches (strings compared after NFC + casefold). An attribute that no schema describes is allowed:
  the identity provider may send it later.
- `role_map` is `{"<group displayName or id>": "<role>"}`; a user's `roles` are the sorted, distinct
  roles of its groups, matched by id or by displayName (case-insensitively, as SCIM compares them).

Both are read when a user is rendered, so a changed map changes every read at once.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from core.comparison import comparison_key

ATTRIBUTE_MAP_MAX = 100
ROLE_MAP_MAX = 1000
NAME_MAX = 64
PATH_MAX = 512
ROLE_MAX = 200
GROUP_KEY_MAX = 512
# The top-level fields of a User (contract §3, and the `group` of membership events): not names for a
# custom attribute, which a reader could confuse with them.
USER_FIELDS = frozenset(
    "id first_name last_name email active raw created_at updated_at custom_attributes roles group".split()
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ATTR = r"(?:[A-Za-z][A-Za-z0-9_-]*|\$ref)"
_PATH = re.compile(
    rf"(?:(?P<urn>urn:[^\[\]\s\"]+):)?(?P<attr>{_ATTR})(?:\[(?P<filter>[^\[\]]*)\])?(?:\.(?P<sub>{_ATTR}))?",
    re.IGNORECASE,
)
_CONDITION = re.compile(rf'\s*(?P<sub>{_ATTR})\s+eq\s+(?P<value>"(?:[^"\\]|\\.)*"|true|false)\s*', re.IGNORECASE)
_CORE_URNS = ("urn:ietf:params:scim:schemas:core:2.0:user",)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class MapPath:
    urn: str | None  # lower-case extension URN, None for the core schema
    attr: str  # lower-case
    conditions: tuple[tuple[str, Any], ...]  # (lower-case sub-attribute, value) pairs of the filter
    sub: str | None  # lower-case


def map_path(text: str) -> MapPath | None:
    """The path parsed, or None when it is not one by the grammar above."""
    found = _PATH.fullmatch(text.strip())
    if found is None:
        return None
    urn = found.group("urn")
    urn = None if urn is None or urn.lower() in _CORE_URNS else urn.lower()
    conditions: list[tuple[str, Any]] = []
    flt = found.group("filter")
    if flt is not None:
        parts = re.split(r"\s+and\s+", flt.strip(), flags=re.IGNORECASE)
        for part in parts:
            condition = _CONDITION.fullmatch(part)
            if condition is None:
                return None
            raw = condition.group("value")
            try:
                value = json.loads(raw.lower() if raw.lower() in ("true", "false") else raw)
            except ValueError:
                return None
            conditions.append((condition.group("sub").lower(), value))
    sub = found.group("sub")
    return MapPath(urn, found.group("attr").lower(), tuple(conditions), sub.lower() if sub else None)


def _member(obj: Any, name: str) -> Any:
    if not isinstance(obj, dict):
        return None
    for key, value in obj.items():
        if key.lower() == name:
            return value
    return None


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(actual, str) and isinstance(expected, str):
        return comparison_key(actual) == comparison_key(expected)
    if isinstance(expected, bool) and isinstance(actual, str):
        return actual.lower() == str(expected).lower()  # Entra's "True"/"False"
    return actual == expected


def _value_at(raw: dict[str, Any], path: MapPath) -> Any:
    container = raw if path.urn is None else _member(raw, path.urn)
    value = _member(container, path.attr)
    if isinstance(value, list):
        if path.conditions:
            value = next((e for e in value if all(_same(_member(e, s), v) for s, v in path.conditions)), None)
        else:
            value = next((e for e in value if _same(_member(e, "primary"), True)), value[0] if value else None)
    elif path.conditions:
        return None  # a filter applies to a multi-valued attribute only
    if path.sub is not None:
        value = _member(value, path.sub)
    return value


def custom_attributes(raw: dict[str, Any], attribute_map: dict[str, str]) -> dict[str, Any]:
    """The user's custom attributes for the directory's `attribute_map` (validated when saved)."""
    out: dict[str, Any] = {}
    for name, text in attribute_map.items():
        path = map_path(text) if isinstance(text, str) else None
        out[name] = _value_at(raw, path) if path is not None else None
    return out


def roles(groups: Iterable[tuple[uuid.UUID, str]], role_map: dict[str, str]) -> list[str]:
    """The sorted, distinct roles that `role_map` gives the groups (id, displayName)."""
    if not role_map:
        return []
    by_key = {comparison_key(key): role for key, role in role_map.items()}
    found = set()
    for group_id, name in groups:
        for key in (comparison_key(str(group_id)), comparison_key(name)):
            if key in by_key:
                found.add(by_key[key])
    return sorted(found)


# --- validation (directories.services.directory_update) -----------------------------------------------


def attribute_map_problem(value: Any) -> tuple[str, str] | None:
    """(offending key, message) when `value` is not a valid attribute_map, else None."""
    if not isinstance(value, dict):
        return "attribute_map", "attribute_map must be an object of {name: SCIM attribute path}."
    if len(value) > ATTRIBUTE_MAP_MAX:
        return "attribute_map", f"attribute_map has more than {ATTRIBUTE_MAP_MAX} entries."
    for name, text in value.items():
        if not _IDENTIFIER.fullmatch(name) or len(name) > NAME_MAX:
            return name, f"attribute_map: {name[:NAME_MAX]!r} is not a plain identifier (letters, digits, _)."
        if name in USER_FIELDS:
            return name, f"attribute_map: {name!r} is a User field; choose another name."
        if not isinstance(text, str) or len(text) > PATH_MAX or map_path(text) is None:
            return name, f"attribute_map.{name} must be a SCIM attribute path such as name.givenName."
    return None


def role_map_problem(value: Any) -> tuple[str, str] | None:
    """(offending key, message) when `value` is not a valid role_map, else None."""
    if not isinstance(value, dict):
        return "role_map", "role_map must be an object of {group displayName or id: role}."
    if len(value) > ROLE_MAP_MAX:
        return "role_map", f"role_map has more than {ROLE_MAP_MAX} entries."
    for key, role in value.items():
        if not key.strip() or len(key) > GROUP_KEY_MAX or _CONTROL.search(key):
            return key, f"role_map: a key must be a group's displayName or id (1 to {GROUP_KEY_MAX} characters)."
        if not isinstance(role, str) or not role.strip() or len(role) > ROLE_MAX or _CONTROL.search(role):
            return key, f"role_map.{key[:GROUP_KEY_MAX]} must be a non-empty string of at most {ROLE_MAX} characters."
    return None
