"""The error answers Django is configured with (config/errorpages.py): unknown paths and server errors in
the format of their surface (handler404/handler500), an exception in a view, a refused Host header."""

from __future__ import annotations

import json

import pytest
from django.test import Client, RequestFactory

from config import errorpages

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
