"""Auth, tenant isolation, and every bad-input case: RFC 7644 §3.12 body, right status, nothing changed."""

from __future__ import annotations

import orjson
import pytest
from django.test import Client

from directories.models import Directory, DirectoryUser
from directories.services import directory_update
from tests.actors import TEST_ACTOR
from tests.scim.conftest import ERROR_URN, SCIM_CT, Scim, user_body


def _assert_error(response, status: int) -> dict:  # noqa: ANN001
    assert response.status_code == status
    assert response["Content-Type"] == SCIM_CT
    body = orjson.loads(response.content)
    assert body["schemas"] == [ERROR_URN] and body["status"] == str(status) and body["detail"]
    return body


@pytest.mark.parametrize(
    "header",
    [None, "non-token", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer wrong-secret", "Token abc", "Bearer \x00"],
)
def test_every_auth_failure_is_the_same_401(directory_a: Directory, header: str | None) -> None:
    client = Client(HTTP_AUTHORIZATION=header) if header is not None else Client()
    response = client.get(f"/api/scim/v2.0/{directory_a.id}/Users")
    body = _assert_error(response, 401)
    assert response["WWW-Authenticate"].startswith("Bearer")
    reference = Client(HTTP_AUTHORIZATION="Bearer nope").get(f"/api/scim/v2.0/{directory_a.id}/Users")
    assert response.content == reference.content
    assert "scimType" not in body


def test_other_directory_secret_and_mismatched_url_are_identical_401(
    directory_a: Directory, directory_b: Directory
) -> None:
    client_b = Client(HTTP_AUTHORIZATION=f"Bearer {directory_b.scim_secret}")
    wrong_dir = client_b.get(f"/api/scim/v2.0/{directory_a.id}/Users")
    unknown_dir = client_b.get("/api/scim/v2.0/6d1f3c1e-5f7b-4c39-9a57-2f1d2b0f8e11/Users")
    not_uuid = client_b.get("/api/scim/v2.0/not-a-directory/Users")
    _assert_error(wrong_dir, 401)
    assert wrong_dir.content == unknown_dir.content == not_uuid.content
    assert (
        client_b.post(
            f"/api/scim/v2.0/{directory_a.id}/Users", orjson.dumps(user_body()), content_type=SCIM_CT
        ).status_code
        == 401
    )
    assert not DirectoryUser.objects.exists()


def test_api_key_is_not_a_scim_credential(directory_a: Directory, api_client: Client) -> None:
    _assert_error(api_client.get(f"/api/scim/v2.0/{directory_a.id}/Users"), 401)


def test_deactivated_directory_is_403_and_stores_nothing(scim_a: Scim) -> None:
    directory_update(actor=TEST_ACTOR, directory=scim_a.directory, data={"deactivated": True})
    status, body = scim_a.post("/Users", user_body())
    assert status == 403 and body["status"] == "403"
    assert scim_a.get("/Users")[0] == 403
    assert not DirectoryUser.objects.exists()


def test_rotated_secret_stops_working_at_once(scim_a: Scim) -> None:
    from directories.services import directory_scim_secret_rotate

    assert scim_a.get("/Users")[0] == 200
    directory_scim_secret_rotate(actor=TEST_ACTOR, directory=scim_a.directory)
    assert scim_a.get("/Users")[0] == 401


@pytest.mark.parametrize(
    "path",
    [
        "/Users/010101001010101011001010101011",
        "/Users/00919288221112222",
        "/Users/6d1f3c1e-5f7b-4c39-9a57-2f1d2b0f8e11",
        "/Groups/%27%3B%20DROP",
        "/Groups/a/b/c",
        "/Nope",
        "/",
        "/Users/%00",
    ],
)
def test_unknown_ids_and_routes_are_404(scim_a: Scim, path: str) -> None:
    response = scim_a.client.get(scim_a.base + path)
    _assert_error(response, 404)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("delete", "/Users"),
        ("put", "/Groups"),
        ("patch", "/Users"),
        ("post", "/ServiceProviderConfig"),
        ("delete", "/Schemas"),
    ],
)
def test_wrong_methods_are_405(scim_a: Scim, method: str, path: str) -> None:
    response = getattr(scim_a.client, method)(scim_a.base + path)
    _assert_error(response, 405)


def test_post_to_a_resource_id_is_405_with_allow(scim_a: Scim) -> None:
    _, user = scim_a.post("/Users", user_body())
    response = scim_a.client.post(f"{scim_a.base}/Users/{user['id']}", orjson.dumps(user_body()), content_type=SCIM_CT)
    _assert_error(response, 405)
    assert "PATCH" in response["Allow"]


def test_body_over_one_mebibyte_is_413(scim_a: Scim) -> None:
    big = orjson.dumps(user_body(title="x" * (1024 * 1024)))
    response = scim_a.client.post(f"{scim_a.base}/Users", big, content_type=SCIM_CT)
    _assert_error(response, 413)
    assert not DirectoryUser.objects.exists()


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_other_content_types_are_415(scim_a: Scim, content_type: str) -> None:
    response = scim_a.client.post(f"{scim_a.base}/Users", orjson.dumps(user_body()), content_type=content_type)
    _assert_error(response, 415)
    assert not DirectoryUser.objects.exists()


@pytest.mark.parametrize(
    "content_type",
    [
        "application/scim+json",
        "application/json",
        "application/json; charset=utf-8",
        "application/scim+json; charset=UTF-8",
    ],
)
def test_json_content_types_are_accepted(scim_a: Scim, content_type: str) -> None:
    status, _ = scim_a.post("/Users", user_body(), content_type=content_type)
    assert status == 201


@pytest.mark.parametrize(
    ("raw", "scim_type"),
    [
        (b"{not json", "invalidSyntax"),
        (b"", "invalidSyntax"),
        (b"[1, 2]", "invalidSyntax"),
        (b'"a string"', "invalidSyntax"),
        (b"null", "invalidSyntax"),
        (b"\xff\xfe{}", "invalidSyntax"),
        (b'{"userName": "a"' + b"}" * 2, "invalidSyntax"),
        (b'{"a":' * 100 + b"1" + b"}" * 100, "invalidSyntax"),
        (b'{"userName": "nul\\u0000byte"}', "invalidValue"),
        (b'{"userName": "ok", "x\\u0000": 1}', "invalidValue"),
    ],
)
def test_malformed_bodies_are_400(scim_a: Scim, raw: bytes, scim_type: str) -> None:
    response = scim_a.client.post(f"{scim_a.base}/Users", raw, content_type=SCIM_CT)
    body = _assert_error(response, 400)
    assert body["scimType"] == scim_type
    assert not DirectoryUser.objects.exists()


def test_malformed_put_and_patch_bodies_change_nothing(scim_a: Scim) -> None:
    _, user = scim_a.post("/Users", user_body())
    for method in ("put", "patch"):
        response = getattr(scim_a.client, method)(f"{scim_a.base}/Users/{user['id']}", b"{oops", content_type=SCIM_CT)
        _assert_error(response, 400)
    assert DirectoryUser.objects.get(pk=user["id"]).raw["userName"] == "jane@example.com"


def test_query_parameter_aad_flag_is_accepted(scim_a: Scim) -> None:
    status, body = scim_a.get("/Users?aadOptscim062020")
    assert status == 200 and body["totalResults"] == 0


def test_trailing_slash_is_accepted(scim_a: Scim) -> None:
    assert scim_a.get("/Users/")[0] == 200
