"""Discovery documents (RFC 7643 §5–§7, RFC 7644 §4) and the attribute knowledge PATCH relies on.

Everything here states what Roster really does: PATCH, filter (with `maxResults`), sort and etag yes;
bulk and changePassword no; bearer-token auth. The User schema lists the RFC 7643 §4.1 attributes
Roster stores and returns (every one of them is kept in `raw`), `groups` as the read-only attribute
computed from memberships, and `password` as writeOnly/returned never. Every attribute listed is
filterable and sortable (password aside), with the `caseExact` stated here (scim/protocol/attributes.py).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.conf import settings

from core.surfaces import scim_base_url
from scim.protocol.filter import ENTERPRISE_SCHEMA, GROUP_SCHEMA, USER_SCHEMA

SPC_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
RESOURCE_TYPE_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
SCHEMA_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Schema"
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


def _a(
    name: str,
    type_: str = "string",
    *,
    multi: bool = False,
    sub: list[dict[str, Any]] | None = None,
    required: bool = False,
    case_exact: bool = False,
    mutability: str = "readWrite",
    returned: str = "default",
    uniqueness: str = "none",
    canonical: list[str] | None = None,
    refs: list[str] | None = None,
    description: str = "",
) -> dict[str, Any]:
    attr: dict[str, Any] = {
        "name": name,
        "type": type_,
        "multiValued": multi,
        "description": description or name,
        "required": required,
        "mutability": mutability,
        "returned": returned,
    }
    if type_ in ("string", "reference", "binary"):
        attr["caseExact"] = case_exact
        attr["uniqueness"] = uniqueness
    if canonical:
        attr["canonicalValues"] = canonical
    if refs:
        attr["referenceTypes"] = refs
    if sub is not None:
        attr["subAttributes"] = sub
    return attr


def _multi(name: str, *, canonical: list[str] | None = None, value_type: str = "string") -> dict[str, Any]:
    """The value/display/type/primary shape of RFC 7643 §2.4 multi-valued attributes."""
    return _a(
        name,
        "complex",
        multi=True,
        sub=[
            _a("value", value_type),
            _a("display", "string"),
            _a("type", "string", canonical=canonical),
            _a("primary", "boolean"),
        ],
    )


USER_ATTRIBUTES: list[dict[str, Any]] = [
    _a("userName", required=True, uniqueness="server", description="Unique per directory, case-insensitive."),
    _a(
        "name",
        "complex",
        sub=[
            _a("formatted"),
            _a("familyName"),
            _a("givenName"),
            _a("middleName"),
            _a("honorificPrefix"),
            _a("honorificSuffix"),
        ],
    ),
    _a("displayName"),
    _a("nickName"),
    _a("profileUrl", "reference", refs=["external"]),
    _a("title"),
    _a("userType"),
    _a("preferredLanguage"),
    _a("locale"),
    _a("timezone"),
    _a("active", "boolean"),
    _a("password", mutability="writeOnly", returned="never", description="Accepted, never stored or returned."),
    _multi("emails", canonical=["work", "home", "other"]),
    _multi("phoneNumbers", canonical=["work", "home", "mobile", "fax", "pager", "other"]),
    _multi("ims"),
    _multi("photos", value_type="reference"),
    _a(
        "addresses",
        "complex",
        multi=True,
        sub=[
            _a("formatted"),
            _a("streetAddress"),
            _a("locality"),
            _a("region"),
            _a("postalCode"),
            _a("country"),
            _a("type", canonical=["work", "home", "other"]),
            _a("primary", "boolean"),
        ],
    ),
    _a(
        "groups",
        "complex",
        multi=True,
        mutability="readOnly",
        sub=[
            _a("value", mutability="readOnly"),
            _a("$ref", "reference", mutability="readOnly", refs=["Group"]),
            _a("display", mutability="readOnly"),
            _a("type", mutability="readOnly", canonical=["direct", "indirect"]),
        ],
        description="The groups the user is a member of (read-only, computed from memberships; always direct).",
    ),
    _multi("entitlements"),
    _multi("roles"),
    _a(
        "x509Certificates",
        "complex",
        multi=True,
        sub=[
            # RFC 7643 §8.7.1: a certificate's value is compared exactly.
            _a("value", "binary", case_exact=True),
            _a("display", "string"),
            _a("type", "string"),
            _a("primary", "boolean"),
        ],
    ),
]

ENTERPRISE_ATTRIBUTES: list[dict[str, Any]] = [
    _a("employeeNumber"),
    _a("costCenter"),
    _a("organization"),
    _a("division"),
    _a("department"),
    _a(
        "manager",
        "complex",
        sub=[
            _a("value"),
            _a("$ref", "reference", refs=["User"]),
            _a("displayName", mutability="readOnly"),
        ],
    ),
]

GROUP_ATTRIBUTES: list[dict[str, Any]] = [
    _a("displayName", required=True, uniqueness="server", description="Unique per directory, case-insensitive."),
    _a(
        "members",
        "complex",
        multi=True,
        sub=[
            _a("value", mutability="immutable"),
            _a("$ref", "reference", mutability="immutable", refs=["User"]),
            _a("type", mutability="immutable", canonical=["User"]),
        ],
        description="Users of the same directory.",
    ),
]


def _index(attributes: list[dict[str, Any]]) -> dict[str, tuple[str, bool, dict[str, str] | None]]:
    """lower-case name → (canonical name, multiValued, {lower sub name: canonical} or None)."""
    index = {}
    for attr in attributes:
        subs = {s["name"].lower(): s["name"] for s in attr.get("subAttributes", [])} or None
        index[attr["name"].lower()] = (attr["name"], attr["multiValued"], subs)
    return index


def _sub_types(attributes: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """lower-case name of a complex attribute → {canonical sub-attribute name: its SCIM type}."""
    return {
        attr["name"].lower(): {s["name"]: s["type"] for s in attr["subAttributes"]}
        for attr in attributes
        if attr.get("subAttributes")
    }


USER_INDEX = _index(USER_ATTRIBUTES) | {"externalid": ("externalId", False, None)}
ENTERPRISE_INDEX = _index(ENTERPRISE_ATTRIBUTES)
GROUP_INDEX = _index(GROUP_ATTRIBUTES) | {"externalid": ("externalId", False, None)}
USER_SUB_TYPES = _sub_types(USER_ATTRIBUTES)
ENTERPRISE_SUB_TYPES = _sub_types(ENTERPRISE_ATTRIBUTES)


def _meta(resource_type: str, location: str) -> dict[str, str]:
    return {"resourceType": resource_type, "location": location}


def service_provider_config(directory_id: str) -> dict[str, Any]:
    return {
        "schemas": [SPC_SCHEMA],
        "documentationUri": "https://datatracker.ietf.org/doc/html/rfc7644",
        "patch": {"supported": True},
        "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": True, "maxResults": settings.SCIM_MAX_RESULTS},
        "changePassword": {"supported": False},
        "sort": {"supported": True},
        "etag": {"supported": True},
        "authenticationSchemes": [
            {
                "type": "oauthbearertoken",
                "name": "Bearer token",
                "description": (
                    "Authorization: Bearer <the directory's SCIM secret, or an access token from its OAuth token "
                    "endpoint, <base>/oauth/token: RFC 6749 client credentials>"
                ),
                "specUri": "https://datatracker.ietf.org/doc/html/rfc6750",
                "primary": True,
            }
        ],
        "meta": _meta("ServiceProviderConfig", f"{scim_base_url(directory_id)}/ServiceProviderConfig"),
    }


def resource_types(directory_id: str) -> list[dict[str, Any]]:
    base = scim_base_url(directory_id)
    return [
        {
            "schemas": [RESOURCE_TYPE_SCHEMA],
            "id": "User",
            "name": "User",
            "endpoint": "/Users",
            "description": "User account",
            "schema": USER_SCHEMA,
            "schemaExtensions": [{"schema": ENTERPRISE_SCHEMA, "required": False}],
            "meta": _meta("ResourceType", f"{base}/ResourceTypes/User"),
        },
        {
            "schemas": [RESOURCE_TYPE_SCHEMA],
            "id": "Group",
            "name": "Group",
            "endpoint": "/Groups",
            "description": "Group",
            "schema": GROUP_SCHEMA,
            "schemaExtensions": [],
            "meta": _meta("ResourceType", f"{base}/ResourceTypes/Group"),
        },
    ]


# What /Schemas says about filters, since RFC 7643 has no per-attribute "filterable" flag.
_FILTERABLE = (
    "Every attribute is filterable and sortable (password excepted), comparing strings as caseExact says; "
    "attributes of any other extension schema the identity provider sends are filterable as received."
)


@lru_cache(maxsize=1)
def _schema_bodies() -> tuple[tuple[str, str, str, list[dict[str, Any]]], ...]:
    return (
        (USER_SCHEMA, "User", f"User account. {_FILTERABLE}", USER_ATTRIBUTES),
        (ENTERPRISE_SCHEMA, "EnterpriseUser", f"Enterprise user extension. {_FILTERABLE}", ENTERPRISE_ATTRIBUTES),
        (GROUP_SCHEMA, "Group", f"Group. {_FILTERABLE}", GROUP_ATTRIBUTES),
    )


def schemas(directory_id: str) -> list[dict[str, Any]]:
    base = scim_base_url(directory_id)
    return [
        {
            "schemas": [SCHEMA_SCHEMA],
            "id": urn,
            "name": name,
            "description": description,
            "attributes": attributes,
            "meta": _meta("Schema", f"{base}/Schemas/{urn}"),
        }
        for urn, name, description, attributes in _schema_bodies()
    ]


def list_response(total: int, start: int, resources: list[dict[str, Any]]) -> dict[str, Any]:
    """A ListResponse (RFC 7644 §3.4.2): one page of `total` results, from result number `start`."""
    return {
        "schemas": [LIST_SCHEMA],
        "totalResults": total,
        "itemsPerPage": len(resources),
        "startIndex": start,
        "Resources": resources,
    }
