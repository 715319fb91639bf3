"""SCIM documents in memory: validating POST/PUT bodies and applying PATCH operations (RFC 7644 §3.5.2).

No database access here: services load a row, call these functions on its `raw` document, and write
back the result. That keeps a PATCH atomic (everything is applied to a copy, the copy is validated,
and only then is anything written) and keeps the rules testable without HTTP.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import Any

from directories.models import comparison_key
from scim.errors import ScimError, invalid_path, invalid_syntax, invalid_value, mutability, no_target
from scim.filter import (
    ENTERPRISE_SCHEMA,
    GROUP_SCHEMA,
    USER_SCHEMA,
    And,
    Compare,
    Node,
    Or,
    PatchPath,
    matches,
    parse_patch_path,
)
from scim.filter_query import emails_index
from scim.schemas import ENTERPRISE_INDEX, GROUP_INDEX, PATCH_SCHEMA, USER_INDEX

MAX_STRING = 512  # the width of the indexed columns (userName, externalId, names, email, displayName)
READ_ONLY = frozenset({"id", "meta", "groups"})
Index = dict[str, tuple[str, bool, dict[str, str] | None]]


def _key(obj: dict[str, Any], name: str) -> str | None:
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


def _canonical_keys(doc: dict[str, Any], index: Index) -> dict[str, Any]:
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
                value = _canonical_keys(value, ENTERPRISE_INDEX)
        out[key] = value
    return out


def _check_string(value: Any, name: str, *, required: bool = False, limit: int | None = MAX_STRING) -> None:
    if value is None and not required:
        return
    if not isinstance(value, str) or (required and not value.strip()):
        raise invalid_value(f"{name} must be a {'non-empty ' if required else ''}string.")
    if limit is not None and len(value) > limit:
        raise invalid_value(f"{name} must be at most {limit} characters.")


def _check_known_types(doc: dict[str, Any], index: Index, prefix: str = "") -> None:
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


# --------------------------------------------------------------------------------------------- users


@dataclass
class UserColumns:
    user_name: str
    user_name_key: str
    external_id: str | None
    first_name: str
    last_name: str
    email: str
    active: bool
    emails_index: str

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def user_finalize(
    doc: dict[str, Any], user_id: Any, *, default_active: bool | None = None
) -> tuple[dict[str, Any], UserColumns]:
    """Validate a complete user document and derive the indexed columns; returns (raw, columns).

    A document without `active` keeps it out of `raw` (a PATCH may remove it) while the column says
    true (SPEC §3 default); `default_active` writes a value into the document instead (POST, PUT).
    """
    doc = _canonical_keys(doc, USER_INDEX)
    for key in list(doc):
        if key.lower() in READ_ONLY or key.lower() == "password":
            # id/meta/groups are readOnly (ignored on input, O11); password is returned:never and never stored.
            doc.pop(key)
    for key in [k for k, v in doc.items() if v is None]:
        doc.pop(key)  # null means "no value" (RFC 7644 §3.3.1 treats it as unassigned)
    _check_string(doc.get("userName"), "userName", required=True)
    _check_string(doc.get("externalId"), "externalId")
    _check_known_types(doc, USER_INDEX)
    ext = doc.get(ENTERPRISE_SCHEMA)
    if ext is not None and not isinstance(ext, dict):
        raise invalid_value(f"{ENTERPRISE_SCHEMA} must be an object.")
    if "active" not in doc and default_active is not None:
        doc["active"] = default_active
    active = coerce_active(doc["active"]) if "active" in doc else True
    if "active" in doc:
        doc["active"] = active
    name = doc.get("name") or {}
    first_name, last_name = name.get("givenName") or "", name.get("familyName") or ""
    _check_string(first_name, "name.givenName")
    _check_string(last_name, "name.familyName")
    emails = doc.get("emails") or []
    email = ""
    for item in emails:
        if item.get("primary") in (True, "true", "True") and isinstance(item.get("value"), str):
            email = item["value"]
            break
    if not email:
        email = next((item["value"] for item in emails if isinstance(item.get("value"), str) and item["value"]), "")
    email = email or doc["userName"]
    _check_string(email, "emails.value")
    schemas = doc.get("schemas")
    if not isinstance(schemas, list) or not all(isinstance(s, str) for s in schemas):
        schemas = [USER_SCHEMA]
    if USER_SCHEMA not in schemas:
        schemas = [USER_SCHEMA, *schemas]
    if ext and ENTERPRISE_SCHEMA not in schemas:
        schemas = [*schemas, ENTERPRISE_SCHEMA]
    raw = {"schemas": schemas, "id": str(user_id), **{k: v for k, v in doc.items() if k != "schemas"}}
    columns = UserColumns(
        user_name=doc["userName"],
        user_name_key=comparison_key(doc["userName"]),
        external_id=doc.get("externalId"),
        first_name=first_name,
        last_name=last_name,
        email=email,
        active=active,
        emails_index=emails_index(emails),
    )
    return raw, columns


# --------------------------------------------------------------------------------------------- PATCH


def patch_operations(body: Any) -> list[tuple[str, Any, Any, bool]]:
    """Validate a PatchOp body; returns [(op, path or None, value, has_value)]."""
    if not isinstance(body, dict):
        raise invalid_syntax("The PATCH body must be a JSON object.")
    schemas = body.get("schemas")
    if schemas is not None and (not isinstance(schemas, list) or PATCH_SCHEMA not in schemas):
        raise invalid_syntax(f"schemas must contain {PATCH_SCHEMA}.")
    ops = body.get(_key(body, "Operations") or "Operations")
    if not isinstance(ops, list) or not ops:
        raise invalid_syntax("Operations must be a non-empty array.")
    result = []
    for item in ops:
        if not isinstance(item, dict):
            raise invalid_syntax("Each operation must be an object.")
        op = item.get(_key(item, "op") or "op")
        # Entra sends "Add"/"Replace"/"Remove" (RFC 7644 §3.5.2: op is case-insensitive).
        if not isinstance(op, str) or op.lower() not in ("add", "replace", "remove"):
            raise invalid_syntax("op must be add, replace or remove.")
        path_key, value_key = _key(item, "path"), _key(item, "value")
        path = item.get(path_key) if path_key else None
        if path is not None and not isinstance(path, str):
            raise invalid_path("path must be a string.")
        if path is not None and not path.strip():
            path = None
        has_value = value_key is not None
        value = item.get(value_key) if value_key else None
        op = op.lower()
        if op != "remove" and not has_value:
            raise invalid_value(f"A {op} operation needs a value.")
        if op == "remove" and path is None:
            raise no_target("remove needs a path (RFC 7644 §3.5.2.2).")
        result.append((op, path, value, has_value))
    return result


class DocumentPatcher:
    """Applies add/replace/remove to a copy of a user or group document (not group members)."""

    def __init__(self, doc: dict[str, Any], *, index: Index, extensions: dict[str, Index]) -> None:
        self.doc = copy.deepcopy(doc)
        self.index = index
        self.extensions = extensions

    def apply_pathless(self, op: str, value: Any, *, skip: tuple[str, ...] = ()) -> None:
        if not isinstance(value, dict):
            raise invalid_value(f"A {op} without path needs an object value.")
        for key, item in value.items():
            lowered = key.lower()
            if lowered in ("id", "meta", "schemas") or lowered in skip:
                continue  # Okta sends {"id": …, "displayName": …}; id and meta are readOnly (INTEROP O13)
            if lowered in self.extensions or (
                lowered.startswith("urn:") and isinstance(item, dict) and _is_schema_urn(lowered)
            ):
                if not isinstance(item, dict):
                    raise invalid_value(f"{key} must be an object.")
                for sub_key, sub_value in item.items():
                    if sub_key.lower() == "schemas":
                        continue
                    self.apply(op, parse_patch_path(f"{key}:{sub_key}"), sub_value, True, lenient=True)
                continue
            # Entra's path-less replace carries dotted keys such as "name.givenName" (INTEROP E3).
            self.apply(op, parse_patch_path(key), item, True, lenient=True)

    def _container(self, ppath: PatchPath, *, create: bool) -> tuple[dict[str, Any] | None, Index | None]:
        schema = ppath.attr.schema
        if schema is None:
            return self.doc, self.index
        ext_index = self.extensions.get(schema)
        key = _key(self.doc, schema)
        if key is None:
            if not create:
                return None, ext_index
            key = ENTERPRISE_SCHEMA if schema == ENTERPRISE_SCHEMA.lower() else ppath.attr.text[: len(schema)]
            self.doc[key] = {}
            schemas = self.doc.get("schemas")
            if isinstance(schemas, list) and key not in schemas:
                self.doc["schemas"] = [*schemas, key]
        container = self.doc[key]
        if not isinstance(container, dict):
            raise invalid_value(f"{key} must be an object.")
        return container, ext_index

    def apply_text(self, op: str, path: str, value: Any, has_value: bool) -> None:
        """Apply one operation whose path is a string (the whole extension URN is a path too)."""
        lowered = path.strip().lower()
        if lowered in self.extensions:
            self._apply_extension(op, lowered, value)
        else:
            self.apply(op, parse_patch_path(path), value, has_value)

    def _apply_extension(self, op: str, urn: str, value: Any) -> None:
        key = _key(self.doc, urn)
        if op == "remove":
            if key is not None:
                self.doc.pop(key)
            schemas = self.doc.get("schemas")
            if isinstance(schemas, list):
                self.doc["schemas"] = [s for s in schemas if not (isinstance(s, str) and s.lower() == urn)]
            return
        if not isinstance(value, dict):
            raise invalid_value(f"The value for {urn} must be an object.")
        value = {k: v for k, v in value.items() if k.lower() != "schemas"}
        if op == "replace" or key is None:
            for sub_key in list(self.doc.get(key, {}) if key else {}):
                self.doc[key].pop(sub_key)
        for sub_key, sub_value in value.items():
            self.apply(op, parse_patch_path(f"{urn}:{sub_key}"), sub_value, True, lenient=True)

    def apply(self, op: str, ppath: PatchPath, value: Any, has_value: bool, *, lenient: bool = False) -> None:
        """lenient: keys of a path-less value may name attributes outside the schema (kept in raw)."""
        attr = ppath.attr.attr
        if ppath.attr.schema is None and attr in READ_ONLY:
            raise mutability(f"{attr} is read-only.")
        if ppath.attr.schema is None and attr == "password":
            return  # accepted and dropped: password is never stored (RFC 7643 §4.1.1)
        if ppath.attr.schema is None and attr == "schemas":
            raise invalid_path("schemas cannot be patched.")
        container, index = self._container(ppath, create=op != "remove")
        if container is None:
            return  # removing from an extension the resource does not have: nothing to do
        existing = _key(container, attr)
        info = index.get(attr) if index is not None else None
        if info is None and index is not None and existing is None and ppath.attr.schema is None and not lenient:
            raise invalid_path(f"Unknown attribute {ppath.attr.text!r}.")
        if info is not None:
            name, multi, subs = info
        else:
            name, multi, subs = existing or ppath.attr.text.rpartition(":")[2].split(".")[0], None, None
        key = existing or name
        if multi is None:
            multi = isinstance(container.get(key), list)
        dotted = ppath.attr.sub
        sub_name = self._sub_name(subs, dotted or ppath.sub, ppath)
        if ppath.element_filter is not None:
            self._apply_filtered(op, container, key, ppath.element_filter, sub_name, value, multi)
        elif dotted:
            self._apply_sub(op, container, key, sub_name or dotted, value)
        else:
            self._apply_whole(op, container, key, value, has_value, multi=multi, complex_=bool(subs))

    @staticmethod
    def _sub_name(subs: dict[str, str] | None, sub: str | None, ppath: PatchPath) -> str | None:
        if sub is None:
            return None
        if subs is None:
            return sub
        if sub not in subs:
            raise invalid_path(f"Unknown sub-attribute in {ppath.attr.text!r}.")
        return subs[sub]

    def _apply_whole(
        self, op: str, container: dict[str, Any], key: str, value: Any, has_value: bool, *, multi: bool, complex_: bool
    ) -> None:
        current = container.get(key)
        if op == "remove":
            if has_value and multi and isinstance(current, list) and isinstance(value, list):
                container[key] = [item for item in current if not any(_same(item, v) for v in value)]
            else:
                container.pop(key, None)
            return
        if key == "manager" and isinstance(value, str):
            value = {"value": value}  # Entra sends the manager as a bare id string
        if multi:
            items = value if isinstance(value, list) else [value]
            if op == "add" and isinstance(current, list):
                merged = list(current)
                for item in items:
                    if not any(_same(item, existing) for existing in merged):
                        merged.append(item)
                items = merged
            primaries = [i for i, item in enumerate(items) if isinstance(item, dict) and item.get("primary") is True]
            if len(primaries) > 1:
                # RFC 7643 §2.4: at most one element may be primary; the one added last wins.
                items = [{**item, "primary": False} if i in primaries[:-1] else item for i, item in enumerate(items)]
            container[key] = items
        elif complex_ and isinstance(value, dict) and isinstance(current, dict):
            # RFC 7644 §3.5.2.1/§3.5.2.3: sub-attributes not given are left unchanged.
            container[key] = {**current, **value}
        else:
            container[key] = value

    @staticmethod
    def _apply_sub(op: str, container: dict[str, Any], key: str, sub: str, value: Any) -> None:
        current = container.get(key)
        if isinstance(current, list):
            for item in current:
                if isinstance(item, dict):
                    _set_or_pop(item, sub, value, remove=op == "remove")
            return
        if op == "remove":
            if isinstance(current, dict):
                _set_or_pop(current, sub, None, remove=True)
            return
        if not isinstance(current, dict):
            current = container[key] = {}
        _set_or_pop(current, sub, value, remove=False)

    def _apply_filtered(
        self, op: str, container: dict[str, Any], key: str, flt: Node, sub: str | None, value: Any, multi: bool
    ) -> None:
        current = container.get(key)
        if current is not None and not isinstance(current, list):
            raise invalid_path(f"{key} is not multi-valued; value filters apply to multi-valued attributes.")
        items = list(current or [])
        hits = [i for i, item in enumerate(items) if matches(flt, item)]
        if op == "remove":
            if sub:
                for i in hits:
                    if isinstance(items[i], dict):
                        items[i] = {k: v for k, v in items[i].items() if k.lower() != sub.lower()}
            else:
                items = [item for i, item in enumerate(items) if i not in hits]
            container[key] = items
            return
        if not hits:
            # Decision E4: `replace emails[type eq "work"].value` with no work email adds one. Entra sends this
            # for a user whose work email was never set and does not fall back to `add`; RFC 7644 §3.5.2.3 would
            # answer 400 noTarget, which Entra reports as a failed export. Only equality filters describe an
            # element we can build; anything else is still noTarget.
            template = _element_from_filter(flt)
            if template is None:
                raise no_target(f"No {key} element matches the filter.")
            if sub:
                template[sub] = value
            elif isinstance(value, dict):
                template.update(value)
            else:
                raise invalid_value(f"The value for a {key}[…] path without sub-attribute must be an object.")
            items.append(template)
            container[key] = items
            return
        for i in hits:
            item = dict(items[i]) if isinstance(items[i], dict) else {"value": items[i]}
            if sub:
                item[_key(item, sub) or sub] = value
            elif isinstance(value, dict):
                item.update(value)
            else:
                raise invalid_value(f"The value for a {key}[…] path without sub-attribute must be an object.")
            items[i] = item
        container[key] = items


def _is_schema_urn(lowered: str) -> bool:
    """An extension URN as a key of a path-less value (e.g. a custom `urn:…:User` object)."""
    return lowered.rsplit(":", 1)[-1] in ("user", "group") or lowered.count(":") >= 4


def _set_or_pop(obj: dict[str, Any], sub: str, value: Any, *, remove: bool) -> None:
    existing = _key(obj, sub)
    if remove:
        if existing is not None:
            obj.pop(existing)
    else:
        obj[existing or sub] = value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        va, vb = a.get("value"), b.get("value")
        if va is not None and vb is not None:
            same_value = (
                comparison_key(va) == comparison_key(vb) if isinstance(va, str) and isinstance(vb, str) else va == vb
            )
            return same_value and (a.get("type") == b.get("type") or not a.get("type") or not b.get("type"))
    return a == b


def _element_from_filter(node: Node) -> dict[str, Any] | None:
    if isinstance(node, Compare) and node.op == "eq" and node.path.sub is None and node.path.schema is None:
        return {node.path.text: node.value}
    if isinstance(node, And):
        left, right = _element_from_filter(node.left), _element_from_filter(node.right)
        if left is not None and right is not None:
            return {**left, **right}
    return None


def user_patch(raw: dict[str, Any], operations: list[tuple[str, Any, Any, bool]]) -> dict[str, Any]:
    """Apply validated PATCH operations to a copy of a user's raw document; returns the new document."""
    patcher = DocumentPatcher(raw, index=USER_INDEX, extensions={ENTERPRISE_SCHEMA.lower(): ENTERPRISE_INDEX})
    for op, path, value, has_value in operations:
        if path is None:
            patcher.apply_pathless(op, value)
        else:
            if op != "remove" and path.strip().lower() == "active":
                value = coerce_active(value)
            patcher.apply_text(op, path, value, has_value)
    return patcher.doc


# --------------------------------------------------------------------------------------------- groups


def group_finalize(doc: dict[str, Any], group_id: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Validate a group document (without members); returns (raw, columns)."""
    doc = _canonical_keys(doc, GROUP_INDEX)
    for key in list(doc):
        if key.lower() in ("id", "meta", "members"):
            doc.pop(key)
    for key in [k for k, v in doc.items() if v is None]:
        doc.pop(key)
    _check_string(doc.get("displayName"), "displayName", required=True)
    _check_string(doc.get("externalId"), "externalId")
    schemas = doc.get("schemas")
    if not isinstance(schemas, list) or not all(isinstance(s, str) for s in schemas):
        schemas = [GROUP_SCHEMA]
    if GROUP_SCHEMA not in schemas:
        # Entra adds the Microsoft ADSCIM group URN (INTEROP E12); kept, with the core URN added.
        schemas = [GROUP_SCHEMA, *schemas]
    raw = {"schemas": schemas, "id": str(group_id), **{k: v for k, v in doc.items() if k != "schemas"}}
    columns = {
        "display_name": doc["displayName"],
        "display_name_key": comparison_key(doc["displayName"]),
        "external_id": doc.get("externalId"),
    }
    return raw, columns


def member_ids(value: Any, *, strict: bool) -> list[uuid.UUID]:
    """User ids from a `members` value ([{"value": id}, …] or one such object).

    strict (add/replace): a malformed id is a 400. Not strict (remove): an id that cannot name a user
    cannot be a member either, so it is skipped.
    """
    items = value if isinstance(value, list) else [value]
    ids: list[uuid.UUID] = []
    for item in items:
        raw_id = item.get(_key(item, "value") or "value") if isinstance(item, dict) else None
        if not isinstance(raw_id, str):
            if strict:
                raise invalid_value('Each member must be an object with a string "value" (the user id).')
            continue
        try:
            parsed = uuid.UUID(raw_id)
        except ValueError:
            if strict:
                raise invalid_value(f"Member {raw_id[:64]!r} is not a user of this directory.") from None
            continue
        if parsed not in ids:
            ids.append(parsed)
    return ids


@dataclass
class MemberPlan:
    """The net effect of a request's member operations, computed without loading the group's members.

    `replace_with` set: the members become exactly that set. Otherwise `add` and `remove` are applied
    to whatever the group has (adds and removes of the same user cancel in request order).
    """

    replace_with: list[uuid.UUID] | None = None
    add: list[uuid.UUID] = field(default_factory=list)
    remove: list[uuid.UUID] = field(default_factory=list)

    def do_add(self, ids: list[uuid.UUID]) -> None:
        if self.replace_with is not None:
            self.replace_with += [i for i in ids if i not in self.replace_with]
            return
        self.remove = [i for i in self.remove if i not in ids]
        self.add += [i for i in ids if i not in self.add]

    def do_remove(self, ids: list[uuid.UUID]) -> None:
        if self.replace_with is not None:
            self.replace_with = [i for i in self.replace_with if i not in ids]
            return
        self.add = [i for i in self.add if i not in ids]
        self.remove += [i for i in ids if i not in self.remove]

    def do_replace(self, ids: list[uuid.UUID]) -> None:
        self.replace_with, self.add, self.remove = list(ids), [], []

    @property
    def empty(self) -> bool:
        return self.replace_with is None and not self.add and not self.remove

    def referenced(self) -> list[uuid.UUID]:
        """Ids that must be users of the directory (those being added)."""
        return list(self.replace_with) if self.replace_with is not None else list(self.add)


def _member_filter_ids(node: Node) -> list[uuid.UUID]:
    if isinstance(node, Or):
        return _member_filter_ids(node.left) + _member_filter_ids(node.right)
    if (
        isinstance(node, Compare)
        and node.path.attr == "value"
        and node.path.sub is None
        and node.op == "eq"
        and isinstance(node.value, str)
    ):
        try:
            return [uuid.UUID(node.value)]
        except ValueError:
            return []
    raise invalid_path('Member paths support members[value eq "<user id>"] (optionally joined with or).')


def group_patch(raw: dict[str, Any], operations: list[tuple[str, Any, Any, bool]]) -> tuple[dict[str, Any], MemberPlan]:
    """Apply PATCH operations to a group: returns the new raw document and the member plan."""
    patcher = DocumentPatcher(raw, index=GROUP_INDEX, extensions={})
    plan = MemberPlan()
    for op, path, value, has_value in operations:
        if path is None:
            if not isinstance(value, dict):
                raise invalid_value(f"A {op} without path needs an object value.")
            members_key = _key(value, "members")
            if members_key is not None:
                ids = member_ids(value[members_key], strict=True)
                plan.do_replace(ids) if op == "replace" else plan.do_add(ids)
            patcher.apply_pathless(op, value, skip=("members",))
            continue
        ppath = parse_patch_path(path)
        if ppath.attr.schema is None and ppath.attr.attr == "members":
            if ppath.attr.sub or ppath.sub:
                raise invalid_path("Member sub-attributes cannot be patched.")
            if ppath.element_filter is not None:
                if op != "remove":
                    raise invalid_path(f'{op} with a members[…] filter is not supported; use path "members".')
                plan.do_remove(_member_filter_ids(ppath.element_filter))
            elif op == "remove":
                # Entra's legacy form: {"op":"Remove","path":"members","value":[{"value":id}]} (INTEROP E5);
                # without a value, remove every member (RFC 7644 §3.5.2.2).
                if has_value and value not in (None, []):
                    plan.do_remove(member_ids(value, strict=False))
                else:
                    plan.do_replace([])
            elif op == "add":
                plan.do_add(member_ids(value, strict=True))
            else:
                plan.do_replace(member_ids(value, strict=True) if value is not None else [])
            continue
        patcher.apply_text(op, path, value, has_value)
    return patcher.doc, plan


def require_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise invalid_syntax("The request body must be a JSON object.")
    return body


__all__ = [
    "MemberPlan",
    "ScimError",
    "UserColumns",
    "coerce_active",
    "group_finalize",
    "group_patch",
    "member_ids",
    "patch_operations",
    "require_object",
    "user_finalize",
    "user_patch",
]
