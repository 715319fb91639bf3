"""What the user and group documents share: attribute lookup, key spelling, type checks."""

from __future__ import annotations

from typing import Any

from core.comparison import comparison_key
from scim.protocol.errors import invalid_syntax, invalid_value
from scim.protocol.filter import ENTERPRISE_SCHEMA
from scim.protocol.schemas import ENTERPRISE_INDEX

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
    """`active` as a boolean; Entra's legacy job sends the strings "True"/"False" (interop E2)."""
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
    """A string attribute bound for a column of `limit` characters. The limit holds for the value as sent
    and for its comparison form (NFC + case folding, `comparison_key`): the uniqueness columns store
    that form, which can be longer ("ß" folds to "ss", "ﬃ" to "ffi")."""
    if value is None and not required:
        return
    if not isinstance(value, str) or (required and not value.strip()):
        raise invalid_value(f"{name} must be a {'non-empty ' if required else ''}string.")
    if limit is not None and (len(value) > limit or len(comparison_key(value)) > limit):
        raise invalid_value(f"{name} must be at most {limit} characters, also once normalised (NFC and case folding).")


def _check_sub(label: str, value: Any, kind: str | None) -> None:
    """A sub-attribute's value against its published type (None: a sub-attribute the schema does not
    name, kept as sent)."""
    if value is None or kind is None:
        return
    if kind == "boolean":
        # Entra's legacy job sends booleans as the strings "True"/"False" (interop E2).
        if not isinstance(value, bool) and not (isinstance(value, str) and value.lower() in ("true", "false")):
            raise invalid_value(f"{label} must be a boolean.")
    elif not isinstance(value, str):
        raise invalid_value(f"{label} must be a string.")


def check_known_types(
    doc: dict[str, Any], index: Index, sub_types: dict[str, dict[str, str]], prefix: str = ""
) -> None:
    """Known attributes must have the shape their schema gives them (interop E10: actionable 400s):
    a multi-valued complex attribute is an array of non-empty objects, a complex one an object, and
    every sub-attribute the schema names has its type. Run on every document before it is stored, so a
    PATCH cannot leave what a POST would refuse."""
    for key, value in doc.items():
        info = index.get(key.lower())
        if info is None or value is None or key == "active":
            continue
        name, multi, subs = info
        label = prefix + name
        types = sub_types.get(name.lower(), {})
        if multi:
            if not isinstance(value, list):
                raise invalid_value(f"{label} must be an array.")
            if subs:
                for item in value:
                    if not isinstance(item, dict) or not item:
                        raise invalid_value(f"Each element of {label} must be an object with its sub-attributes.")
                    for sub_key, sub_value in item.items():
                        _check_sub(f"{label}.{sub_key}", sub_value, types.get(sub_key))
        elif subs:
            if not isinstance(value, dict):
                raise invalid_value(f"{label} must be an object.")
            for sub_key, sub_value in value.items():
                _check_sub(f"{label}.{sub_key}", sub_value, types.get(sub_key))
        elif index is not ENTERPRISE_INDEX and not isinstance(value, str):
            raise invalid_value(f"{label} must be a string.")


def require_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise invalid_syntax("The request body must be a JSON object.")
    return body
