"""SCIM resources from stored rows, and `attributes` / `excludedAttributes` (RFC 7644 §3.4.2.5, §3.9).

A user or group resource is its `raw` document (what the identity provider last sent, minus password)
with `id`, `schemas` and a fresh `meta` laid over it. Group `members` are not kept in `raw`: they come
from the membership table, so a member change never rewrites a document that grows with the group.
"""

from __future__ import annotations

from typing import Any

from core.surfaces import scim_base_url
from core.timefmt import iso_utc
from directories.models import DirectoryGroup, DirectoryUser
from scim.protocol.errors import invalid_value
from scim.protocol.filter import ENTERPRISE_SCHEMA, GROUP_SCHEMA, USER_SCHEMA, AttrPath, split_attr_path
from scim.protocol.versions import version_of

ALWAYS_RETURNED = ("schemas", "id")
KNOWN_EXTENSIONS = {ENTERPRISE_SCHEMA.lower(): ENTERPRISE_SCHEMA}


def user_location(directory_id: Any, user_id: Any) -> str:
    return f"{scim_base_url(directory_id)}/Users/{user_id}"


def group_location(directory_id: Any, group_id: Any) -> str:
    return f"{scim_base_url(directory_id)}/Groups/{group_id}"


def user_resource(user: DirectoryUser) -> dict[str, Any]:
    """`groups` comes from `user.member_of` when it was read (scim.reads reads it when wanted)."""
    raw = user.raw
    uid = str(user.id)  # once: a list page renders a hundred of these
    resource: dict[str, Any] = {"schemas": raw.get("schemas") or [USER_SCHEMA], "id": uid}
    for key, value in raw.items():
        if key not in resource:
            resource[key] = value
    if user.member_of:
        # RFC 7643 §4.1.2: read-only, from the memberships; an empty list is the same as none (§2.5).
        resource["groups"] = [
            {"value": str(gid), "display": name, "$ref": group_location(user.directory_id, gid), "type": "direct"}
            for gid, name in user.member_of
        ]
    resource["meta"] = {
        "resourceType": "User",
        "created": iso_utc(user.created_at),
        "lastModified": iso_utc(user.updated_at),
        "location": user_location(user.directory_id, uid),
        "version": version_of(user.updated_at),
    }
    return resource


def member_item(directory_id: Any, user_id: Any) -> dict[str, Any]:
    # No `display`: it would need a join to the users table for every member listed, and no IdP reads it.
    return {"value": str(user_id), "type": "User", "$ref": user_location(directory_id, user_id)}


def group_resource(group: DirectoryGroup, members: list[dict[str, Any]] | None) -> dict[str, Any]:
    """`members` None leaves the attribute out (excludedAttributes=members, or a PATCH answer)."""
    raw = group.raw
    resource: dict[str, Any] = {"schemas": raw.get("schemas") or [GROUP_SCHEMA], "id": str(group.id)}
    for key, value in raw.items():
        if key not in resource:
            resource[key] = value
    if members is not None:
        resource["members"] = members
    resource["meta"] = {
        "resourceType": "Group",
        "created": iso_utc(group.created_at),
        "lastModified": iso_utc(group.updated_at),
        "location": group_location(group.directory_id, group.id),
        "version": version_of(group.updated_at),
    }
    return resource


MAX_ATTRIBUTE_NAMES = 256


class Projection:
    """The parsed `attributes` / `excludedAttributes` query parameters."""

    def __init__(self, attributes: Any = None, excluded: Any = None) -> None:
        self.attributes = self._parse(attributes, "attributes")
        self.excluded = self._parse(excluded, "excludedAttributes")

    @staticmethod
    def _parse(value: Any, name: str) -> list[tuple[str | None, AttrPath | None]]:
        if value is None or value == "":
            return []
        items = value if isinstance(value, list) else str(value).split(",")
        if len(items) > MAX_ATTRIBUTE_NAMES:
            # Each name costs a pass over every resource of the page: a long list (a SearchRequest body can
            # carry 100,000) would cost minutes. The schemas have fewer than 100 attributes and sub-attributes.
            raise invalid_value(f"{name} lists more than {MAX_ATTRIBUTE_NAMES} attribute names.")
        parsed: list[tuple[str | None, AttrPath | None]] = []
        for item in items:
            text = str(item).strip()
            if not text:
                continue
            if text.lower() in KNOWN_EXTENSIONS or text.lower() in (USER_SCHEMA.lower(), GROUP_SCHEMA.lower()):
                parsed.append((text.lower(), None))
                continue
            try:
                parsed.append((None, split_attr_path(text)))
            except Exception as exc:
                raise invalid_value(f"Invalid attribute name {text!r} in {name}.") from exc
        return list(dict.fromkeys(parsed))  # a name given twice is applied once

    @property
    def active(self) -> bool:
        return bool(self.attributes or self.excluded)

    def wants(self, attr: str) -> bool:
        """Whether a top-level core attribute (lower-case name) is returned; lets callers skip queries."""
        if self.attributes:
            return (
                any(p is not None and p.schema is None and p.attr == attr for _, p in self.attributes)
                or attr in ALWAYS_RETURNED
            )
        return not any(
            p is not None and p.schema is None and p.attr == attr and p.sub is None for _, p in self.excluded
        )

    def apply(self, resource: dict[str, Any]) -> dict[str, Any]:
        if self.attributes:
            out: dict[str, Any] = {k: resource[k] for k in ALWAYS_RETURNED if k in resource}
            for urn, path in self.attributes:
                _copy(resource, out, urn, path)
            resource = out
        if self.excluded:
            resource = dict(resource)
            for urn, path in self.excluded:
                _remove(resource, urn, path)
        return resource


def _key(obj: dict[str, Any], name: str) -> str | None:
    for key in obj:
        if key.lower() == name:
            return key
    return None


def _container(resource: dict[str, Any], path: AttrPath) -> tuple[dict[str, Any] | None, str | None]:
    if path.schema is None:
        return resource, None
    ext = _key(resource, path.schema)
    if ext is None or not isinstance(resource[ext], dict):
        return None, ext
    return resource[ext], ext


def _copy(src: dict[str, Any], out: dict[str, Any], urn: str | None, path: AttrPath | None) -> None:
    if path is None:
        key = _key(src, urn or "")
        if key is not None:
            out[key] = src[key]
        return
    container, ext = _container(src, path)
    if container is None:
        return
    key = _key(container, path.attr)
    if key is None:
        return
    target = out
    if ext is not None:
        target = out.setdefault(ext, {})
    value = container[key]
    if path.sub is None:
        target[key] = value
    elif isinstance(value, dict):
        sub = _key(value, path.sub)
        if sub is not None:
            target.setdefault(key, {})[sub] = value[sub]
    elif isinstance(value, list):
        items = []
        for item in value:
            if isinstance(item, dict) and (sub := _key(item, path.sub)) is not None:
                items.append({sub: item[sub]})
        target[key] = items


def _remove(resource: dict[str, Any], urn: str | None, path: AttrPath | None) -> None:
    if path is None:
        key = _key(resource, urn or "")
        if key is not None and key not in ALWAYS_RETURNED:
            resource.pop(key)
        return
    if path.schema is None and path.sub is None and path.attr in ALWAYS_RETURNED:
        return  # returned "always" (RFC 7643 §7): excludedAttributes cannot remove it
    container, ext = _container(resource, path)
    if container is None:
        return
    key = _key(container, path.attr)
    if key is None:
        return
    if ext is not None:
        container = resource[ext] = dict(container)
    if path.sub is None:
        container.pop(key)
        return
    value = container[key]
    if isinstance(value, dict):
        container[key] = {k: v for k, v in value.items() if k.lower() != path.sub}
    elif isinstance(value, list):
        container[key] = [
            {k: v for k, v in item.items() if k.lower() != path.sub} if isinstance(item, dict) else item
            for item in value
        ]
