"""User documents: validating a POST/PUT body into the stored document and its indexed columns,
and applying PATCH operations to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.comparison import comparison_key
from scim.protocol.documents.fields import READ_ONLY, canonical_keys, check_known_types, check_string, coerce_active
from scim.protocol.documents.filterdoc import filter_document
from scim.protocol.documents.patch import DocumentPatcher
from scim.protocol.errors import invalid_value
from scim.protocol.filter import ENTERPRISE_SCHEMA, USER_SCHEMA
from scim.protocol.schemas import ENTERPRISE_INDEX, ENTERPRISE_SUB_TYPES, USER_INDEX, USER_SUB_TYPES


@dataclass
class UserColumns:
    user_name: str
    user_name_key: str
    external_id: str | None
    first_name: str
    last_name: str
    email: str
    email_key: str
    active: bool
    filter_doc: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def user_finalize(
    doc: dict[str, Any], user_id: Any, *, default_active: bool | None = None
) -> tuple[dict[str, Any], UserColumns]:
    """Validate a complete user document and derive the indexed columns; returns (raw, columns).

    A document without `active` keeps it out of `raw` (a PATCH may remove it) while the column says
    true (contract §3 default); `default_active` writes a value into the document instead (POST, PUT).
    """
    doc = canonical_keys(doc, USER_INDEX)
    for key in list(doc):
        if key.lower() in READ_ONLY or key.lower() == "password":
            # id/meta/groups are readOnly (ignored on input, O11); password is returned:never and never stored.
            doc.pop(key)
    for key in [k for k, v in doc.items() if v is None]:
        doc.pop(key)  # null means "no value" (RFC 7644 §3.3.1 treats it as unassigned)
    check_string(doc.get("userName"), "userName", required=True)
    check_string(doc.get("externalId"), "externalId")
    check_known_types(doc, USER_INDEX, USER_SUB_TYPES)
    ext = doc.get(ENTERPRISE_SCHEMA)
    if ext is not None and not isinstance(ext, dict):
        raise invalid_value(f"{ENTERPRISE_SCHEMA} must be an object.")
    if ext:
        if isinstance(ext.get("manager"), str):
            # Entra writes the manager as a bare id; PATCH already stores it as the schema's object.
            ext = doc[ENTERPRISE_SCHEMA] = {**ext, "manager": {"value": ext["manager"]}}
        check_known_types(ext, ENTERPRISE_INDEX, ENTERPRISE_SUB_TYPES, prefix=f"{ENTERPRISE_SCHEMA}:")
    if "active" not in doc and default_active is not None:
        doc["active"] = default_active
    active = coerce_active(doc["active"]) if "active" in doc else True
    if "active" in doc:
        doc["active"] = active
    name = doc.get("name") or {}
    first_name, last_name = name.get("givenName") or "", name.get("familyName") or ""
    check_string(first_name, "name.givenName")
    check_string(last_name, "name.familyName")
    emails = doc.get("emails") or []
    email = ""
    for item in emails:
        if item.get("primary") in (True, "true", "True") and isinstance(item.get("value"), str):
            email = item["value"]
            break
    if not email:
        email = next((item["value"] for item in emails if isinstance(item.get("value"), str) and item["value"]), "")
    email = email or doc["userName"]
    check_string(email, "emails.value")
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
        email_key=comparison_key(email),
        active=active,
        filter_doc=filter_document(raw, resource_type="users"),
    )
    return raw, columns


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
