"""Resource versions (RFC 7644 §3.14): `meta.version`, the `ETag` header, `If-Match` and `If-None-Match`.

A version is a weak entity tag made from the resource's `updated_at` (microseconds since the epoch, in
hex): every write that changes a user or group sets that column, so the version costs the hot writes
nothing and needs no column of its own. A user's version covers its own document; its `groups`
attribute comes from the membership table, and a membership change moves the group's version, not the
user's (docs/decisions.md).

Preconditions compare versions weakly (RFC 7232 §2.3.2: the opaque tags, with or without `W/`), as
SCIM clients send back the weak tags they were given. A header that is not a list of entity tags (or
`*`) is 400 invalidVers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from scim.protocol.errors import ScimError

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# RFC 7232 §2.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text.
_TAG = re.compile(r'\s*(W/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*')
MAX_HEADER = 4096


def version_of(moment: datetime) -> str:
    delta = moment - _EPOCH
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return f'W/"{micros:x}"'


@dataclass(frozen=True)
class Precondition:
    """A parsed If-Match / If-None-Match: `any` for `*`, else the opaque tags listed."""

    any: bool
    tags: frozenset[str]

    def matches(self, version: str) -> bool:
        if self.any:
            return True
        found = _TAG.fullmatch(version)
        return found is not None and found.group(2) in self.tags


def precondition(header: object, name: str) -> Precondition | None:
    """The header's value parsed; None when absent. 400 invalidVers when it is not `*` or a
    comma-separated list of entity tags."""
    if header is None:
        return None
    if not isinstance(header, str) or len(header) > MAX_HEADER:
        raise _malformed(name)
    text = header.strip()
    if text == "*":
        return Precondition(True, frozenset())
    tags = set()
    position = 0
    while position < len(text):
        found = _TAG.match(text, position)
        if found is None:
            raise _malformed(name)
        tags.add(found.group(2))
        position = found.end()
        if position < len(text):
            if text[position] != ",":
                raise _malformed(name)
            position += 1
            while position < len(text) and text[position] in " \t,":
                position += 1  # RFC 7230 §7: empty list elements are allowed
    if not tags:
        raise _malformed(name)
    return Precondition(False, frozenset(tags))


def _malformed(name: str) -> ScimError:
    return ScimError(
        400,
        f'{name} must be "*" or a comma-separated list of entity tags such as W/"5f1e2d3c4b5a6".',
        scim_type="invalidVers",
    )


def require_version(condition: Precondition | None, moment: datetime) -> None:
    """412 unless `condition` (an If-Match) matches the version of a resource last changed at `moment`."""
    if condition is not None and not condition.matches(version_of(moment)):
        raise ScimError(412, "The resource has changed since that version (If-Match does not match).")
