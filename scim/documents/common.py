"""What the user and group documents share: attribute lookup, key spelling, type checks."""

from __future__ import annotations

from typing import Any

from scim.errors import invalid_syntax, invalid_value
from scim.filter import ENTERPRISE_SCHEMA
from scim.schemas import ENTERPRISE_INDEX

MAX_STRING = 512  # the width of the indexed columns (userName, externalId, names, email, displayName)
READ_ONLY = frozenset({"id", "meta", "groups"})
Index = dict[str, tuple[str, bool, dict[str, str] | None]]


def key_of(obj: dict[str, Any], name: str) -> str | None:
    """The key of `obj` that spells `name` in any case (attribute names are case-insensitive, RFC 7643 §2.1)."""
    lowered = name.lower()
    for key in obj:
        if key.lower() == lowered:
            return key
    return None


def coerce_active(value: Any) -> bool:
    """`active` as a boolean; Entra's legacy job sends the strings "True"/"False" (INTEROP E2)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise invalid_value("active must be true or false.")


def canonical_keys(doc: dict[str, Any], index: Index) -> dict[str, Any]:
    """Rename known attributes to their schema spelling (attribute names are case-insensitive, RFC 7643 §2.1)."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        info = index.get(key.lower())
        if info is not None:
            name, _multi, subs = info
            if subs and isinstance(value, dict):
                value = {subs.get(k.lower(), k): v for k, v in value.items()}
            elif subs and isinstance(value, list):
                value = [
                    {subs.get(k.lower(), k): v for k, v in item.items()} if isinstance(item, dict) else item
                    for item in value
                ]
            key = name
        elif key.lower() == ENTERPRISE_SCHEMA.lower():
            key = ENTERPRISE_SCHEMA
            if isinstance(value, dict):
                value = canonical_keys(value, ENTERPRISE_INDEX)
        out[key] = value
    return out


def check_string(value: Any, name: str, *, required: bool = False, limit: int | None = MAX_STRING) -> None:
    if value is None and not required:
        return
    if not isinstance(value, str) or (required and not value.strip()):
        raise invalid_value(f"{name} must be a {'non-empty ' if required else ''}string.")
    if limit is not None and len(value) > limit:
        raise invalid_value(f"{name} must be at most {limit} characters.")


def check_known_types(doc: dict[str, Any], index: Index, prefix: str = "") -> None:
    """Known attributes must have the shape their schema gives them (INTEROP E10: actionable 400s)."""
    for key, value in doc.items():
        info = index.get(key.lower())
        if info is None or value is None or key == "active":
            continue
        name, multi, subs = info
        label = prefix + name
        if multi:
            if not isinstance(value, list):
                raise invalid_value(f"{label} must be an array.")
            if subs:
                for item in value:
                    if not isinstance(item, dict):
                        raise invalid_value(f"Each element of {label} must be an object.")
                    for sub_key, sub_value in item.items():
                        if sub_key == "primary" and not isinstance(sub_value, bool | str):
                            raise invalid_value(f"{label}.primary must be a boolean.")
                        if sub_key in ("value", "type", "display") and not isinstance(sub_value, str | None):
                            raise invalid_value(f"{label}.{sub_key} must be a string.")
        elif subs:
            if not isinstance(value, dict):
                raise invalid_value(f"{label} must be an object.")
            for sub_key, sub_value in value.items():
                if sub_key in subs.values() and not isinstance(sub_value, str | None):
                    raise invalid_value(f"{label}.{sub_key} must be a string.")
        elif index is not ENTERPRISE_INDEX and not isinstance(value, str):
            raise invalid_value(f"{label} must be a string.")


def require_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise invalid_syntax("The request body must be a JSON object.")
    return body
