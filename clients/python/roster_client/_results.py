"""The base of every typed result, and how a JSON object becomes one.

The result classes themselves are generated from Roster's OpenAPI document (`_generated/models.py`); this
module only fills them. A field that a newer Roster adds is kept in `extra` (and in `to_dict()`), never an
error; a field an older Roster lacks is None.
"""

from __future__ import annotations

import dataclasses
import keyword
from collections.abc import Mapping
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

T = TypeVar("T", bound="Result")


class Result:
    """A result from Roster: a dataclass with the fields Roster documents, plus

    - `extra`: the fields this version of the client does not know (from a newer Roster), as received;
    - `to_dict()`: the object exactly as received;
    - `result["field"]`: the same value as `result.field` (or an `extra` one), for code that reads results
      like the JSON they came from.
    """

    extra: dict[str, Any]

    def __post_init__(self) -> None:
        self.extra = {}
        self._received: dict[str, Any] = {}

    @classmethod
    def from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
        return _build(cls, data)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._received)

    def __getitem__(self, key: str) -> Any:
        name = _attribute_name(key)
        if name in _field_names(type(self)):
            return getattr(self, name)
        return self.extra[key]

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


def _attribute_name(key: str) -> str:
    # The generator renames a JSON field that is a Python keyword with a trailing underscore (class_).
    return f"{key}_" if keyword.iskeyword(key) else key


def _json_name(name: str) -> str:
    return name[:-1] if name.endswith("_") and keyword.iskeyword(name[:-1]) else name


def _field_names(cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls) if f.init}


_hints: dict[type, dict[str, Any]] = {}


def _type_hints(cls: type) -> dict[str, Any]:
    if cls not in _hints:
        _hints[cls] = get_type_hints(cls)
    return _hints[cls]


def _build(cls: type[T], data: Mapping[str, Any]) -> T:
    if not isinstance(data, Mapping):
        raise TypeError(f"{cls.__name__} expects a JSON object, got {type(data).__name__}")
    hints = _type_hints(cls)
    fields = _field_names(cls)
    values = {name: _convert(hints[name], data.get(_json_name(name))) for name in fields}
    result = cls(**values)
    result.extra = {key: value for key, value in data.items() if _attribute_name(key) not in fields}
    result._received = dict(data)
    return result


def _convert(hint: Any, value: Any) -> Any:
    """`value` as `hint` says: a nested result, a list of them, or the JSON value as it is (strings, numbers,
    maps and `raw` stay plain)."""
    if value is None:
        return None
    origin = get_origin(hint)
    if origin is Union:
        for option in get_args(hint):
            if option is not type(None):
                converted = _convert(option, value)
                if converted is not value:
                    return converted
        return value
    if origin is list and isinstance(value, list):
        (item,) = get_args(hint) or (Any,)
        return [_convert(item, element) for element in value]
    if isinstance(hint, type) and issubclass(hint, Result) and isinstance(value, Mapping):
        return _build(hint, value)
    return value
