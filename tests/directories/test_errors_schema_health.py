"""Unknown paths per surface (handler404/handler500), the OpenAPI document, and /healthz."""

from __future__ import annotations

import json
import re

import pytest
from django.db import OperationalError
from django.test import Client, RequestFactory

from config import errorpages
from directories import health

pytestmark = pytest.mark.django_db

SCIM_ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/nothing-here",
        "/api/v1/directory-sync/",
        "/api/v1/directory-sync/x/y/z",
        "/api/v1/dsync/users/",
        "/api/v1",
        "/auditlog/admin/v1/no-such-route",
    ],
)
@pytest.mark.parametrize("debug", [False, True])
def test_unknown_api_paths_answer_an_enveloped_404_never_html(
    api_client: Client,
    settings,
    path: str,
    debug: bool,  # noqa: ANN001
) -> None:
    settings.DEBUG = debug
    response = api_client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"data": None, "error": {"message": "Not found.", "code": 404}}


@pytest.mark.parametrize("path", ["/api/scim/v2.0", "/api/scim/v1/Users", "/api/scim/nothing"])
@pytest.mark.parametrize("debug", [False, True])
def test_unknown_scim_paths_answer_a_scim_error(client: Client, settings, path: str, debug: bool) -> None:  # noqa: ANN001
    settings.DEBUG = debug
    response = client.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/scim+json"
    body = response.json()
    assert body["schemas"] == [SCIM_ERROR]
    assert body["status"] == "404" and body["detail"]


def test_other_unknown_paths_keep_djangos_page(client: Client) -> None:
    response = client.get("/no-such-page")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/api/v1/directory-sync", "application/json"),
        ("/auditlog/admin/v1/directories", "application/json"),
        ("/api/scim/v2.0/x/Users", "application/scim+json"),
        ("/portal/", "text/html"),
    ],
)
def test_server_errors_answer_in_the_format_of_their_surface(path: str, content_type: str) -> None:
    request = RequestFactory().get(path, HTTP_X_REQUEST_ID="req-42")
    response = errorpages.handler500(request)
    assert response.status_code == 500
    assert response["Content-Type"].startswith(content_type)
    if content_type == "application/json":
        assert json.loads(response.content) == {
            "data": None,
            "error": {"message": "Internal server error (request id req-42).", "code": 500},
        }
    elif content_type == "application/scim+json":
        assert json.loads(response.content)["status"] == "500"


def test_an_exception_in_an_api_view_becomes_an_enveloped_500(api_client: Client, monkeypatch) -> None:  # noqa: ANN001
    def explode(**_: object) -> None:
        raise RuntimeError("internal detail that must not leak")

    monkeypatch.setattr("restapi.apis.directory_list", explode)
    api_client.raise_request_exception = False
    response = api_client.get("/api/v1/directory-sync", {"tenant": "acme", "product": "crm"})
    assert response.status_code == 500
    request_id = response["X-Request-Id"]
    assert response.json() == {
        "data": None,
        "error": {"message": f"Internal server error (request id {request_id}).", "code": 500},
    }
    assert b"internal detail" not in response.content


# --- OpenAPI ----------------------------------------------------------------------------------------


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


# --- health -----------------------------------------------------------------------------------------


def test_healthz_answers_ok_when_the_database_answers(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_healthz_answers_503_when_the_database_does_not(client: Client, monkeypatch) -> None:  # noqa: ANN001
    class BrokenConnection:
        def cursor(self) -> None:
            raise OperationalError("connection refused to 10.0.0.5:5432 password=hunter2")

    monkeypatch.setattr(health, "connection", BrokenConnection())
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"
    assert b"10.0.0.5" not in response.content and b"hunter2" not in response.content


def test_healthz_refuses_writes(client: Client) -> None:
    assert client.post("/healthz").status_code == 405


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
    for prefix in ("/api/v1/directory-sync", "/api/v1/dsync"):
        for suffix in suffixes:
            assert prefix + suffix in doc["paths"], prefix + suffix
    assert "get" in doc["paths"]["/api/v1/schema"]
    ids = [op["operationId"] for item in doc["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids)) == 39
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
    assert set(events["responses"]) == {"200", "400", "401", "404", "406", "500", "503"}
    create = doc["paths"]["/api/v1/directory-sync"]["post"]
    assert set(create["responses"]) == {"201", "400", "401", "406", "413", "500", "503"}
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


@pytest.mark.parametrize("entry", ["django", "wsgi"])
def test_a_host_header_allowed_hosts_refuses_answers_in_the_surfaces_format(
    settings,  # noqa: ANN001
    directory_a,  # noqa: ANN001
    entry: str,
) -> None:
    """Django refuses the Host (DisallowedHost → handler400); SCIM paths still get a SCIM error and API
    paths the envelope, never Django's HTML 400 page. Both SCIM entries (the WSGI one falls back to
    Django's handler for a refused Host) answer alike."""
    settings.ALLOWED_HOSTS = ["roster.example.com"]
    if entry == "wsgi":
        from io import BytesIO

        from config.wsgi import application

        environ = {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": f"/api/scim/v2.0/{directory_a.id}/Users",
            "QUERY_STRING": "",
            "HTTP_HOST": "evil.example.net",
            "SERVER_NAME": "testserver",
            "SERVER_PORT": "80",
            "wsgi.input": BytesIO(b""),
            "wsgi.url_scheme": "http",
            "wsgi.errors": BytesIO(),
        }
        got: dict = {}

        def start_response(status: str, headers: list) -> None:
            got["status"], got["headers"] = status, dict(headers)

        body = b"".join(application(environ, start_response))
        assert got["status"].startswith("400")
        assert got["headers"]["Content-Type"] == "application/scim+json"
        assert json.loads(body)["schemas"] == [SCIM_ERROR]
        return
    client = Client(HTTP_HOST="evil.example.net")
    scim = client.get(f"/api/scim/v2.0/{directory_a.id}/Users")
    assert scim.status_code == 400 and scim["Content-Type"] == "application/scim+json"
    assert scim.json()["schemas"] == [SCIM_ERROR] and scim["X-Request-Id"]
    api = client.get("/api/v1/directory-sync")
    assert api.status_code == 400 and api.json() == {"data": None, "error": {"message": "Bad request.", "code": 400}}
