"""Group documents: validating a POST/PUT body, and PATCH, whose member operations become a plan
(`MemberPlan`) that the services apply without loading the group's members."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from core.comparison import comparison_key
from scim.protocol.documents.fields import canonical_keys, check_string, key_of
from scim.protocol.documents.filterdoc import filter_document
from scim.protocol.documents.patch import DocumentPatcher
from scim.protocol.errors import invalid_path, invalid_value
from scim.protocol.filter import GROUP_SCHEMA, Compare, Node, Or, parse_patch_path
from scim.protocol.schemas import GROUP_INDEX


def group_finalize(doc: dict[str, Any], group_id: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Validate a group document (without members); returns (raw, columns)."""
    doc = canonical_keys(doc, GROUP_INDEX)
    for key in list(doc):
        if key.lower() in ("id", "meta", "members"):
            doc.pop(key)
    for key in [k for k, v in doc.items() if v is None]:
        doc.pop(key)
    check_string(doc.get("displayName"), "displayName", required=True)
    check_string(doc.get("externalId"), "externalId")
    schemas = doc.get("schemas")
    if not isinstance(schemas, list) or not all(isinstance(s, str) for s in schemas):
        schemas = [GROUP_SCHEMA]
    if GROUP_SCHEMA not in schemas:
        # Entra adds the Microsoft ADSCIM group URN (interop E12); kept, with the core URN added.
        schemas = [GROUP_SCHEMA, *schemas]
    raw = {"schemas": schemas, "id": str(group_id), **{k: v for k, v in doc.items() if k != "schemas"}}
    columns = {
        "display_name": doc["displayName"],
        "display_name_key": comparison_key(doc["displayName"]),
        "external_id": doc.get("externalId"),
        "filter_doc": filter_document(raw, resource_type="groups"),
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
        raw_id = item.get(key_of(item, "value") or "value") if isinstance(item, dict) else None
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
        ids.append(parsed)
    return list(dict.fromkeys(ids))  # without repeats, in order, in linear time (a body may list 20,000)


@dataclass
class MemberPlan:
    """The net effect of a request's member operations, computed without loading the group's members.

    `replace_with` set: the members become exactly that set. Otherwise `add` and `remove` are applied
    to whatever the group has (adds and removes of the same user cancel in request order).
    """

    replace_with: list[uuid.UUID] | None = None
    add: list[uuid.UUID] = field(default_factory=list)
    remove: list[uuid.UUID] = field(default_factory=list)

    # Sets for membership tests: a body may carry tens of thousands of ids, and a list scan per id is
    # quadratic (seconds of CPU for one request).

    def do_add(self, ids: list[uuid.UUID]) -> None:
        if self.replace_with is not None:
            self.replace_with = list(dict.fromkeys([*self.replace_with, *ids]))
            return
        added = set(ids)
        self.remove = [i for i in self.remove if i not in added]
        self.add = list(dict.fromkeys([*self.add, *ids]))

    def do_remove(self, ids: list[uuid.UUID]) -> None:
        removed = set(ids)
        if self.replace_with is not None:
            self.replace_with = [i for i in self.replace_with if i not in removed]
            return
        self.add = [i for i in self.add if i not in removed]
        self.remove = list(dict.fromkeys([*self.remove, *ids]))

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
            members_key = key_of(value, "members")
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
                # Entra's legacy form: {"op":"Remove","path":"members","value":[{"value":id}]} (interop E5);
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
