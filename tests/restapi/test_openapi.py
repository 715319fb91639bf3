"""The OpenAPI document of the REST API (restapi/openapi.py, served at /api/v1/schema)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_schema_describes_the_rest_api(api_client: Client) -> None:
    response = api_client.get("/api/v1/schema")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi+json")
    doc = response.json()
    assert doc["openapi"].startswith("3.")
    paths = doc["paths"]
    for path in (
        "/api/v1/directory-sync",
        "/api/v1/directory-sync/{directory_id}",
        "/api/v1/directory-sync/users",
        "/api/v1/directory-sync/users/{user_id}",
        "/api/v1/directory-sync/groups",
        "/api/v1/directory-sync/groups/{group_id}",
    ):
        assert path in paths, path
    assert set(paths["/api/v1/directory-sync"]) == {"get", "post"}
    assert set(paths["/api/v1/directory-sync/{directory_id}"]) == {"get", "patch", "delete"}
    create = paths["/api/v1/directory-sync"]["post"]
    body_schema = create["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert set(doc["components"]["schemas"][body_schema]["required"]) == {"tenant", "product"}
    users = {p["name"] for p in paths["/api/v1/directory-sync/users"]["get"]["parameters"]}
    assert users == {"tenant", "product", "directoryId", "pageOffset", "pageLimit", "active", "email", "group"} | {
        "updatedAfter"
    }
    groups = {p["name"] for p in paths["/api/v1/directory-sync/groups"]["get"]["parameters"]}
    assert groups == {"tenant", "product", "directoryId", "pageOffset", "pageLimit", "name"}
    user_groups = paths["/api/v1/directory-sync/users/{user_id}/groups"]["get"]
    assert {p["name"] for p in user_groups["parameters"]} == {"user_id", "tenant", "product", "pageOffset", "pageLimit"}
    patch = paths["/api/v1/directory-sync/{directory_id}"]["patch"]
    patch_schema = patch["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    attribute_map = doc["components"]["schemas"][patch_schema]["properties"]["attribute_map"]
    assert attribute_map["maxProperties"] == 100 and attribute_map["propertyNames"]["maxLength"] == 64
    assert doc["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    assert not any(p.startswith(("/api/scim", "/auditlog")) for p in paths)


# What a reader of the document must never meet: a private function (`_name`; not a route such as
# /user/_login, after a slash, nor a literal the reader types, in backquotes), a source file (manage.py,
# a command the reader runs, is fine), or a dotted name inside one of Roster's packages (one answer field
# path, scim.previous_secret_expires_at, starts like a package name and is the reader's own vocabulary).
_CODE_NAMES = re.compile(
    r"(?<![\w./`])_[a-z][a-z0-9_]*\b"
    r"|\b(?!manage\.py\b)\w+\.py\b"
    r"|\b(?:adminapi|adminauth|config|core|directories|operations|portal|restapi|scim|server|setuplinks|webhooks)"
    r"\.(?!previous_secret_expires_at\b)[a-z_]+\b"
)


def _prose(node: object, where: str = "") -> list[tuple[str, str]]:
    """Every description, summary and title in the document, with where it sits."""
    found: list[tuple[str, str]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "summary", "title") and isinstance(value, str):
                found.append((f"{where}/{key}", value))
            found += _prose(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _prose(value, f"{where}[{index}]")
    return found


def test_schema_prose_names_no_code(api_client: Client) -> None:
    """Docstrings become descriptions: a view without its own inherits its base class's, and a comment
    written for maintainers in a serializer's docstring is published. The document is for API users."""
    doc = api_client.get("/api/v1/schema").json()
    prose = _prose(doc)
    assert len(prose) > 50  # the walk reached the operations and the schemas
    leaks = [(where, match.group(0)) for where, text in prose for match in _CODE_NAMES.finditer(text)]
    assert leaks == []
    # The pattern itself finds what it is for.
    for sample in ("see _tighten", "errors through core.envelope", "in requestlimits.py"):
        assert _CODE_NAMES.search(sample), sample
    legitimate = (
        "POST /user/_login: root token",
        "the suffix `_dsync`",
        "`manage.py apikey create`",
        "scim.previous_secret_expires_at",
    )
    for sample in legitimate:
        assert not _CODE_NAMES.search(sample), sample


def test_schema_in_yaml_on_request(api_client: Client) -> None:
    response = api_client.get("/api/v1/schema", {"format": "yaml"})
    assert response.status_code == 200
    assert response.content.startswith(b"openapi: 3.")


def test_schema_needs_an_api_key(client: Client) -> None:
    response = client.get("/api/v1/schema")
    assert response.status_code == 401
    assert b'"code":401' in response.content.replace(b" ", b"")


# --- OpenAPI: media types, errors, and what the document states ----------------------------------------


def test_schema_answers_plain_json_when_the_client_accepts_only_json(api_client: Client) -> None:
    response = api_client.get("/api/v1/schema", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["openapi"].startswith("3.")


def test_schema_answers_yaml_for_an_accept_header_asking_for_it(api_client: Client) -> None:
    response = api_client.get("/api/v1/schema", HTTP_ACCEPT="application/yaml")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    assert response.content.startswith(b"openapi: 3.")


@pytest.mark.parametrize(
    ("query", "accept"),
    [({}, "application/vnd.oai.openapi+json"), ({"format": "yaml"}, "*/*"), ({}, "application/yaml")],
)
def test_schema_401_is_the_json_envelope_whatever_was_asked_for(client: Client, query: dict, accept: str) -> None:
    response = client.get("/api/v1/schema", query, HTTP_ACCEPT=accept)
    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"
    assert response["WWW-Authenticate"] == 'Bearer realm="roster"'
    assert response.json()["data"] is None and response.json()["error"]["code"] == 401


@pytest.mark.parametrize("value", ["xml", "", "JSON"])
def test_schema_refuses_a_format_it_does_not_have_with_a_400(api_client: Client, value: str) -> None:
    response = api_client.get("/api/v1/schema", {"format": value})
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"] == {"message": "format must be json or yaml.", "code": 400}


def test_schema_406_for_an_accept_header_it_cannot_serve_is_the_json_envelope(api_client: Client) -> None:
    response = api_client.get("/api/v1/schema", HTTP_ACCEPT="text/html")
    assert response.status_code == 406
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == 406


def _document(api_client: Client) -> dict:
    return api_client.get("/api/v1/schema").json()


def test_schema_lists_every_route_with_its_alias_and_unique_operation_ids(api_client: Client) -> None:
    doc = _document(api_client)
    suffixes = ["", "/{directory_id}", "/{directory_id}/events", "/users", "/users/{user_id}", "/groups"]
    suffixes += ["/groups/{group_id}", "/users/{user_id}/groups"]
    suffixes += ["/{directory_id}/scim-secret", "/{directory_id}/scim-secret/previous", "/{directory_id}/scim-requests"]
    suffixes += ["/{directory_id}/changes", "/{directory_id}/changes/resend"]
    suffixes += ["/{directory_id}/setup-links", "/{directory_id}/setup-links/{link_id}"]
    suffixes += ["/{directory_id}/scim-oauth-secret", "/{directory_id}/scim-oauth-secrets"]
    suffixes += ["/{directory_id}/scim-oauth-secrets/{secret_id}"]
    suffixes += ["/{directory_id}/held-changes", "/{directory_id}/held-changes/approve"]
    suffixes += ["/{directory_id}/held-changes/discard"]
    suffixes += ["/{directory_id}/users", "/{directory_id}/groups"]
    suffixes += ["/{directory_id}/history/users", "/{directory_id}/history/groups", "/{directory_id}/diff"]
    suffixes += ["/{directory_id}/history/groups/{group_id}/members"]
    for prefix in ("/api/v1/directory-sync", "/api/v1/dsync"):
        for suffix in suffixes:
            assert prefix + suffix in doc["paths"], prefix + suffix
    assert "get" in doc["paths"]["/api/v1/schema"]
    ids = [op["operationId"] for item in doc["paths"].values() for op in item.values()]
    # Webhook endpoints (contract §5.2) have no dsync alias: eight operations on five paths.
    for path in ("", "/{endpoint_id}", "/{endpoint_id}/secret", "/{endpoint_id}/test", "/{endpoint_id}/deliveries"):
        assert "/api/v1/webhook-endpoints" + path in doc["paths"], path
    assert len(ids) == len(set(ids)) == 65 + 8
    assert doc["paths"]["/api/v1/dsync/users"]["get"]["operationId"] == "users_list_dsync"


def test_schema_states_the_bounds_of_every_query_parameter(api_client: Client) -> None:
    doc = _document(api_client)
    users = {p["name"]: p for p in doc["paths"]["/api/v1/directory-sync/users"]["get"]["parameters"]}
    assert users["tenant"]["schema"] == {"type": "string", "minLength": 1} and users["tenant"]["required"]
    assert users["product"]["schema"] == {"type": "string", "minLength": 1}
    for name in ("pageOffset", "pageLimit"):
        assert users[name]["schema"] == {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}
    events = {p["name"]: p for p in doc["paths"]["/api/v1/directory-sync/{directory_id}/events"]["get"]["parameters"]}
    assert set(events) == {"directory_id", "pageOffset", "pageLimit", "failed", "status"}
    assert events["failed"]["schema"] == {"type": "boolean"}
    assert events["status"]["schema"]["enum"] == ["delivered", "failed"]
    directories = {p["name"] for p in doc["paths"]["/api/v1/directory-sync"]["get"]["parameters"]}
    assert directories == {"tenant", "product", "pageOffset", "pageLimit"}


def test_schema_documents_every_error_in_the_envelope_with_its_headers(api_client: Client) -> None:
    doc = _document(api_client)
    events = doc["paths"]["/api/v1/directory-sync/{directory_id}/events"]["get"]
    assert set(events["responses"]) == {"200", "400", "401", "404", "406", "429", "500", "503"}
    create = doc["paths"]["/api/v1/directory-sync"]["post"]
    assert set(create["responses"]) == {"201", "400", "401", "406", "413", "429", "500", "503"}
    for operation in (events, create):
        for status, response in operation["responses"].items():
            assert response["headers"]["X-Request-Id"]["required"] is True
            if status.startswith(("4", "5")):
                ref = response["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ErrorEnvelope")
        assert "Retry-After" in operation["responses"]["503"]["headers"]
    envelope = doc["components"]["schemas"]["ErrorEnvelope"]
    assert set(envelope["required"]) == {"data", "error"}
    patch = doc["paths"]["/api/v1/directory-sync/{directory_id}"]["patch"]
    body_ref = patch["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert doc["components"]["schemas"][body_ref]["additionalProperties"] is False


def test_the_views_notes_are_applied_once_and_the_document_is_the_same_each_time() -> None:
    # restapi.openapi_marks: the views' extend_schema arguments wait until a document is built.
    from restapi import openapi_marks
    from restapi.openapi import rest_document

    first = rest_document()
    assert openapi_marks._noted == []  # noqa: SLF001 - every note handed over
    assert rest_document() == first
    assert first["paths"]["/api/v1/directory-sync"]["get"]["operationId"] == "directories_list"
    assert first["paths"]["/api/v1/schema"]["get"]["operationId"] == "schema_get"


def test_a_note_taken_after_a_document_is_applied_by_the_next() -> None:
    from restapi import openapi_marks

    def method() -> None:
        pass

    assert openapi_marks.extend_schema(operation_id="later")(method) is method
    assert not hasattr(method, "kwargs")
    openapi_marks.apply()
    from drf_spectacular.openapi import AutoSchema

    schema = method.kwargs["schema"]  # type: ignore[attr-defined] - drf-spectacular's mark on a method
    assert issubclass(schema, AutoSchema) and schema is not AutoSchema
