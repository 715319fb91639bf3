"""Discovery endpoints say what Roster really supports (RFC 7643 §5-§7)."""

from __future__ import annotations

from scim2_models import ResourceType, Schema, ServiceProviderConfig

from tests.scim.conftest import Scim


def test_service_provider_config_is_truthful(scim_a: Scim) -> None:
    status, spc = scim_a.get("/ServiceProviderConfig")
    assert status == 200
    assert spc["patch"]["supported"] is True
    assert spc["bulk"]["supported"] is False and spc["sort"]["supported"] is True
    assert spc["etag"]["supported"] is True and spc["changePassword"]["supported"] is False
    assert spc["filter"] == {"supported": True, "maxResults": 1000}
    assert spc["authenticationSchemes"][0]["type"] == "oauthbearertoken"
    ServiceProviderConfig.model_validate(spc)


def test_resource_types_and_schemas_parse_and_can_be_fetched_by_id(scim_a: Scim) -> None:
    _, types = scim_a.get("/ResourceTypes")
    assert {t["id"] for t in types["Resources"]} == {"User", "Group"}
    for item in types["Resources"]:
        ResourceType.model_validate(item)
    _, schemas = scim_a.get("/Schemas")
    ids = {s["id"] for s in schemas["Resources"]}
    assert "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User" in ids
    for item in schemas["Resources"]:
        Schema.model_validate(item)
    status, user_schema = scim_a.get("/Schemas/urn:ietf:params:scim:schemas:core:2.0:User")
    assert status == 200
    password = next(a for a in user_schema["attributes"] if a["name"] == "password")
    assert password["returned"] == "never"
    assert scim_a.get("/ResourceTypes/Group")[1]["endpoint"] == "/Groups"
    groups = next(a for a in user_schema["attributes"] if a["name"] == "groups")
    assert groups["mutability"] == "readOnly" and groups["multiValued"] is True
    assert {s["name"] for s in groups["subAttributes"]} == {"value", "$ref", "display", "type"}
    certificates = next(a for a in user_schema["attributes"] if a["name"] == "x509Certificates")
    assert next(s for s in certificates["subAttributes"] if s["name"] == "value")["caseExact"] is True
    assert "filterable" in user_schema["description"]
    assert scim_a.get("/Schemas/urn:nope")[0] == 404


def test_discovery_needs_the_directory_secret(scim_a: Scim) -> None:
    assert scim_a.client.get(scim_a.base + "/ServiceProviderConfig", HTTP_AUTHORIZATION="Bearer x").status_code == 401
