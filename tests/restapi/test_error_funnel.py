"""One error funnel for the REST and admin APIs: nothing leaves as HTML or a bare 500, bad input is a
400 that names what was wrong and changes nothing, a lost database is a 503 with Retry-After."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pytest
from django.db import InterfaceError, OperationalError
from django.test import Client, RequestFactory

from audit.models import AuditEntry
from config import errorpages
from directories.models import Directory
from tests.actors import TEST_ACTOR

pytestmark = pytest.mark.django_db

REST = "/api/v1/directory-sync"
ADMIN = "/auditlog/admin/v1"
ACME = {"tenant": "acme", "product": "crm"}


def _state() -> tuple[list[tuple[Any, ...]], int]:
    """What a refused request must leave untouched: every directory as stored, and the audit trail."""
    return list(Directory.objects.order_by("id").values_list()), AuditEntry.objects.count()


def _envelope_error(response: Any, status: int, *fragments: str) -> str:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert set(body) == {"data", "error"} and body["data"] is None
    assert body["error"]["code"] == status
    for fragment in fragments:
        assert fragment in body["error"]["message"], body["error"]["message"]
    return body["error"]["message"]


def _errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.fixture
def admin_client(db) -> Client:  # noqa: ANN001
    from adminauth.services import admin_login_record

    _, _, _, jwt_token = admin_login_record(email="ops@example.com", actor=TEST_ACTOR)
    return Client(HTTP_AUTHORIZATION=f"Bearer {jwt_token}")


def _explode(exc: Exception):  # noqa: ANN202
    def raiser(**_: object) -> None:
        raise exc

    return raiser


# --- unexpected exceptions -------------------------------------------------------------------------


def test_an_unexpected_exception_names_its_request_id_in_body_header_and_one_log_line(
    api_client: Client, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("restapi.apis.directory_list", _explode(KeyError("secret internal detail")))
    api_client.raise_request_exception = False
    caplog.clear()
    response = api_client.get(REST, ACME, HTTP_X_REQUEST_ID="client-chosen.id_1")

    assert response["X-Request-Id"] == "client-chosen.id_1"
    assert _envelope_error(response, 500) == "Internal server error (request id client-chosen.id_1)."
    assert b"secret internal detail" not in response.content
    errors = _errors(caplog)
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert "client-chosen.id_1" in errors[0].getMessage() and "KeyError" in errors[0].getMessage()
    assert errors[0].exc_info is not None  # the traceback is in that one line's record


def test_a_view_exception_is_enveloped_with_debug_on_too(
    api_client: Client, monkeypatch: pytest.MonkeyPatch, settings
) -> None:  # noqa: ANN001
    settings.DEBUG = True  # Django would answer its HTML technical page
    monkeypatch.setattr("restapi.users_groups.tenant_users_page", _explode(RuntimeError("boom")))
    api_client.raise_request_exception = False
    _envelope_error(api_client.get(f"{REST}/users", ACME), 500, "request id")


@pytest.mark.parametrize("incoming", ["x" * 129, "has space", "new\nline", ""])
def test_an_unusable_incoming_request_id_is_replaced_by_a_new_one(
    api_client: Client, monkeypatch: pytest.MonkeyPatch, incoming: str
) -> None:
    monkeypatch.setattr("restapi.apis.directory_list", _explode(RuntimeError("boom")))
    api_client.raise_request_exception = False
    response = api_client.get(REST, ACME, HTTP_X_REQUEST_ID=incoming)
    request_id = response["X-Request-Id"]
    assert request_id != incoming and len(request_id) == 32
    _envelope_error(response, 500, f"request id {request_id}")


def test_an_unexpected_exception_in_the_admin_api_is_an_enveloped_500(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("adminapi.directories.directory_list_with_counts", _explode(RuntimeError("boom")))
    admin_client.raise_request_exception = False
    response = admin_client.get(f"{ADMIN}/directories")
    _envelope_error(response, 500, "Internal server error (request id ", response["X-Request-Id"])


@pytest.mark.parametrize("debug", [False, True])
def test_an_exception_outside_any_view_still_leaves_through_the_funnel(debug: bool, settings) -> None:  # noqa: ANN001
    settings.DEBUG = debug
    request = RequestFactory().get(f"{REST}/users", HTTP_X_REQUEST_ID="mw-1")
    try:
        raise ValueError("raised by a middleware")
    except ValueError:
        response = errorpages.handler500(request)
    assert response["X-Request-Id"] == "mw-1"
    _envelope_error(response, 500, "request id mw-1")


def test_every_api_answer_carries_a_request_id(api_client: Client) -> None:
    assert len(api_client.get(REST, ACME)["X-Request-Id"]) == 32
    assert api_client.get(REST, ACME, HTTP_X_REQUEST_ID="abc")["X-Request-Id"] == "abc"
    assert Client().get(REST, ACME)["X-Request-Id"]  # a 401 too


# --- the database unavailable ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "exc", [OperationalError("connection to 10.0.0.5 failed: password=x"), InterfaceError("closed")]
)
def test_a_lost_database_is_a_503_with_retry_after_and_one_line_without_traceback(
    api_client: Client, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, exc: Exception
) -> None:
    monkeypatch.setattr("restapi.apis.directory_list", _explode(exc))
    api_client.raise_request_exception = False
    caplog.clear()
    response = api_client.get(REST, ACME)

    _envelope_error(response, 503, "database is unavailable")
    assert response["Retry-After"] == "5"
    assert b"10.0.0.5" not in response.content
    errors = _errors(caplog)
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert type(exc).__name__ in errors[0].getMessage()
    assert errors[0].exc_info is None and "10.0.0.5" not in errors[0].getMessage()


def test_a_lost_database_in_the_admin_api_is_a_503(admin_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("adminapi.base.directory_get", _explode(OperationalError("gone")))
    admin_client.raise_request_exception = False
    response = admin_client.get(f"{ADMIN}/directories/7b0c4f5e-2d0a-4a51-9d7e-1c2b3a4d5e6f")
    _envelope_error(response, 503, "database is unavailable")
    assert response["Retry-After"] == "5"


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        (f"{REST}/users", "application/json"),
        ("/api/scim/v2.0/x/Users", "application/scim+json"),
        ("/portal/", "text/html"),
    ],
)
def test_a_lost_database_outside_a_view_is_a_503_page_in_the_surface_format(path: str, content_type: str) -> None:
    try:
        raise OperationalError("server closed the connection unexpectedly")
    except OperationalError:
        response = errorpages.handler500(RequestFactory().get(path))
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response["Content-Type"].startswith(content_type)


# --- routing and methods ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("put", REST),
        ("delete", REST),
        ("post", f"{REST}/users"),
        ("options", REST),
        ("post", "/api/v1/schema"),
        ("put", f"{REST}/7b0c4f5e-2d0a-4a51-9d7e-1c2b3a4d5e6f/events"),
    ],
)
def test_a_method_a_route_lacks_is_an_enveloped_405_with_allow(api_client: Client, method: str, path: str) -> None:
    before = _state()
    response = getattr(api_client, method)(path)
    _envelope_error(response, 405)
    assert response["Allow"]
    assert method.upper() not in response["Allow"]
    assert _state() == before


def test_a_foreign_host_is_an_enveloped_400_on_api_paths(api_client: Client, settings) -> None:  # noqa: ANN001
    settings.ALLOWED_HOSTS = ["roster.example.com"]
    _envelope_error(api_client.get(REST, ACME), 400)


def test_an_accept_header_without_json_is_an_enveloped_406(api_client: Client) -> None:
    _envelope_error(api_client.get(REST, ACME, HTTP_ACCEPT="text/html"), 406)


# --- bodies ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "fragments"),
    [
        (b'{"tenant": "acme", "product": "crm"', ["not valid JSON"]),
        (b"\xff\xfe", ["not valid JSON"]),
        (b'{"tenant": "ac\\ud800me", "product": "crm"}', ["not valid JSON"]),
        (b'{"tenant": "acme", "product": "c\\u0000rm"}', ["'product'", "NUL"]),
        (b'{"tenant": "acme", "product": "crm", "x": 18446744073709551615}', ["'x'", "64-bit"]),
        (b'{"tenant": "acme", "product": "crm", "x": ' + b"[" * 40 + b"]" * 40 + b"}", ["nested deeper"]),
        (b'["tenant", "acme"]', ["JSON object"]),
    ],
)
def test_rest_bodies_that_cannot_be_stored_are_a_400_and_create_nothing(
    api_client: Client, raw: bytes, fragments: list[str]
) -> None:
    before = _state()
    response = api_client.post(REST, raw, content_type="application/json")
    _envelope_error(response, 400, *fragments)
    assert _state() == before


@pytest.mark.parametrize(
    "raw",
    [b"{", b'{"name": "a\\u0000b"}', b'{"name": 18446744073709551615}', b'"just a string"'],
)
def test_admin_bodies_that_cannot_be_stored_are_a_400_and_change_nothing(
    admin_client: Client, directory_a: Directory, raw: bytes
) -> None:
    before = _state()
    response = admin_client.patch(f"{ADMIN}/directories/{directory_a.id}", raw, content_type="application/json")
    _envelope_error(response, 400)
    assert _state() == before


def test_admin_bodies_over_the_size_limit_are_a_413_and_create_nothing(admin_client: Client, settings) -> None:  # noqa: ANN001
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    before = _state()
    body = b'{"tenant": "acme", "product": "crm", "name": "' + b"x" * 2000 + b'"}'
    response = admin_client.post(f"{ADMIN}/directories", body, content_type="application/json")
    _envelope_error(response, 413, "too large")
    assert _state() == before


def test_a_rest_field_longer_than_documented_is_refused_even_when_padded_with_spaces(api_client: Client) -> None:
    before = _state()
    response = api_client.post(REST, {**ACME, "name": " " * 150 + "x" * 60}, content_type="application/json")
    _envelope_error(response, 400, "name", "at most 200")
    assert _state() == before


# --- query values ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "query", "name"),
    [
        (REST, {"tenant": "ac\x00me", "product": "crm"}, "tenant"),
        (f"{REST}/users", {**ACME, "directoryId": "\x00"}, "directoryId"),
        (f"{REST}/groups", {**ACME, "pageLimit": "1\x00"}, "pageLimit"),
        ("/api/v1/dsync/users", {**ACME, "anything": "\x00"}, "anything"),
        ("/api/v1/schema", {"format": "json\x00"}, "format"),
    ],
)
def test_a_nul_in_any_rest_query_value_is_a_400_naming_the_parameter(
    api_client: Client, path: str, query: dict[str, str], name: str
) -> None:
    _envelope_error(api_client.get(path, query), 400, name, "NUL")


def test_a_nul_in_a_query_parameter_name_is_a_400(api_client: Client) -> None:
    _envelope_error(api_client.get(f"{REST}?tenant=acme&product=crm&a%00b=1"), 400, "parameter name", "NUL")


def test_a_nul_in_an_admin_query_value_is_a_400(admin_client: Client) -> None:
    _envelope_error(admin_client.get(f"{ADMIN}/audit", {"actor": "a\x00"}), 400, "actor", "NUL")


@pytest.mark.parametrize("name", ["pageOffset", "pageLimit"])
@pytest.mark.parametrize("value", ["9223372036854775808", "1" * 40, "9" * 5000])
def test_page_numbers_beyond_64_bits_are_a_400_on_every_list(
    api_client: Client, admin_client: Client, directory_a: Directory, name: str, value: str
) -> None:
    for path in (REST, f"{REST}/users", f"{REST}/groups", "/api/v1/dsync/groups"):
        _envelope_error(api_client.get(path, {**ACME, name: value}), 400, name, "at most 9223372036854775807")
    _envelope_error(api_client.get(f"{REST}/{directory_a.id}/events", {name: value}), 400, name)
    _envelope_error(admin_client.get(f"{ADMIN}/directories", {name: value}), 400, name)


def test_the_largest_64_bit_page_numbers_are_an_empty_page_and_a_capped_one(
    api_client: Client, directory_a: Directory
) -> None:
    largest = "9223372036854775807"
    assert api_client.get(REST, {**ACME, "pageOffset": largest}).json() == {"data": [], "error": None}
    assert len(api_client.get(REST, {**ACME, "pageLimit": largest}).json()["data"]) == 1


@pytest.mark.parametrize(
    ("query", "name"),
    [({"failed": "TRUE"}, "failed"), ({"failed": ""}, "failed"), ({"status": "Failed"}, "status")],
)
def test_delivery_log_filters_take_exactly_the_documented_values(
    api_client: Client, directory_a: Directory, query: dict[str, str], name: str
) -> None:
    _envelope_error(api_client.get(f"{REST}/{directory_a.id}/events", query), 400, name)


def test_a_default_name_built_from_long_tenant_and_product_fits_its_column(api_client: Client) -> None:
    # PostgreSQL refused the built name (a 500) before it was cut to the column's 200 characters.
    response = api_client.post(REST, {"tenant": "t" * 200, "product": "p" * 200}, content_type="application/json")
    assert response.status_code == 201, response.content
    stored = Directory.objects.get(pk=response.json()["data"]["id"])
    assert stored.name == ("t" * 200 + " " + "p" * 200)[:200]


@pytest.mark.parametrize("length", ["abc", "1e3", "0x10", "-1", " 12"])
@pytest.mark.parametrize("target", ["rest", "admin"])
def test_a_content_length_that_is_not_a_number_is_an_enveloped_400(
    length: str, target: str, api_client: Client, admin_client: Client, directory_a: Directory
) -> None:
    # Django's request.body converts Content-Length with a bare int(): this was a 500.
    client, path = (
        (api_client, f"{REST}/{directory_a.id}") if target == "rest" else (admin_client, f"{ADMIN}/directories")
    )
    method = client.patch if target == "rest" else client.post
    before = _state()
    response = method(path, b'{"name": "renamed"}', content_type="application/json", CONTENT_LENGTH=length)
    _envelope_error(response, 400, "Content-Length")
    assert _state() == before


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
@pytest.mark.parametrize("path", [f"{REST}/", "/api/v1/nothing/here", f"{ADMIN}/directories/", "/auditlog"])
def test_an_unsafe_method_on_an_unknown_api_path_is_an_enveloped_404_not_a_csrf_page(
    api_client: Client, method: str, path: str
) -> None:
    client = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION="Bearer test-env-api-key")
    _envelope_error(getattr(client, method)(path), 404)


def test_a_csrf_refusal_on_an_api_path_is_an_enveloped_403(rf: RequestFactory) -> None:
    response = errorpages.csrf_failure(rf.post("/api/v1/directory-sync/x"), reason="CSRF cookie not set.")
    _envelope_error(response, 403)
    assert response[errorpages.HEADER]


@pytest.mark.parametrize("path", [REST, f"{ADMIN}/audit"])
def test_too_many_query_fields_is_an_enveloped_400_logged_in_one_line_without_traceback(
    path: str, api_client: Client, admin_client: Client
) -> None:
    # Django logged this client refusal as an ERROR with a full traceback.
    [console] = [h for h in logging.getLogger().handlers if isinstance(h, logging.StreamHandler) and h.filters]
    client = api_client if path == REST else admin_client
    query = "&".join(f"a={i}" for i in range(1100))  # past DATA_UPLOAD_MAX_NUMBER_FIELDS (1000)
    stream = io.StringIO()
    previous = console.setStream(stream)
    try:
        response = client.get(f"{path}?{query}")
    finally:
        console.setStream(previous)
    _envelope_error(response, 400)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and " WARNING django.security.TooManyFieldsSent " in lines[0], lines
