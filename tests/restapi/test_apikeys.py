"""API keys on every /api/v1 route (contract §1): env keys, database keys, revoked keys, bad headers."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from directories.models import ApiKey, Directory
from directories.services import api_key_create, api_key_revoke
from tests.actors import TEST_ACTOR
from tests.restapi.conftest import make_group, make_user

pytestmark = pytest.mark.django_db

ROUTES = [
    ("get", "/api/v1/directory-sync?tenant=acme&product=crm"),
    ("post", "/api/v1/directory-sync"),
    ("get", "/api/v1/directory-sync/{directory}"),
    ("patch", "/api/v1/directory-sync/{directory}"),
    ("delete", "/api/v1/directory-sync/{directory}"),
    ("get", "/api/v1/directory-sync/users?tenant=acme&product=crm"),
    ("get", "/api/v1/directory-sync/users/{user}?tenant=acme&product=crm"),
    ("get", "/api/v1/directory-sync/groups?tenant=acme&product=crm"),
    ("get", "/api/v1/directory-sync/groups/{group}?tenant=acme&product=crm"),
    ("get", "/api/v1/directory-sync/{directory}/users"),
    ("get", "/api/v1/directory-sync/{directory}/groups"),
    ("get", "/api/v1/dsync?tenant=acme&product=crm"),
    ("post", "/api/v1/dsync"),
    ("get", "/api/v1/dsync/{directory}"),
    ("patch", "/api/v1/dsync/{directory}"),
    ("delete", "/api/v1/dsync/{directory}"),
    ("get", "/api/v1/dsync/users?tenant=acme&product=crm"),
    ("get", "/api/v1/dsync/users/{user}?tenant=acme&product=crm"),
    ("get", "/api/v1/dsync/groups?tenant=acme&product=crm"),
    ("get", "/api/v1/dsync/groups/{group}?tenant=acme&product=crm"),
    ("get", "/api/v1/dsync/{directory}/users"),
    ("get", "/api/v1/dsync/{directory}/groups"),
    ("get", "/api/v1/schema"),
]

BAD_HEADERS = [
    None,
    "non-token",
    "Bearer",
    "Bearer ",
    "Bearer wrong-key",
    "Bearer test-env-api-key-and-more",
    "Bearer test-env-api-ke",
    "Basic dGVzdC1lbnYtYXBpLWtleTo=",
    "Token test-env-api-key",
    "Bearer test-env-api-key extra",
    "test-env-api-key",
    "Bearer \u00e9\u00e9\u00e9",
]


@pytest.fixture
def targets(directory_a: Directory) -> dict[str, str]:
    user = make_user(directory_a, "ann")
    group = make_group(directory_a, "Eng", [user])
    return {"directory": str(directory_a.id), "user": str(user.id), "group": str(group.id)}


def call(client: Client, method: str, path: str, **extra: str):  # noqa: ANN201
    if method == "get":
        return client.get(path, **extra)
    body = '{"tenant": "acme", "product": "crm"}' if method == "post" else "{}"
    return getattr(client, method)(path, body, content_type="application/json", **extra)


def assert_nothing_changed(directory_a: Directory) -> None:
    assert Directory.objects.count() == 1
    fresh = Directory.objects.get(pk=directory_a.pk)
    assert fresh.name == "Acme Okta"


@pytest.mark.parametrize(("method", "route"), ROUTES)
@pytest.mark.parametrize("header", BAD_HEADERS)
def test_every_route_refuses_a_missing_malformed_or_wrong_key_with_an_enveloped_401(
    directory_a: Directory, targets: dict[str, str], method: str, route: str, header: str | None
) -> None:
    client = Client() if header is None else Client(HTTP_AUTHORIZATION=header)
    response = call(client, method, route.format(**targets))
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    body = response.json()
    assert body["data"] is None
    assert body["error"]["code"] == 401 and "API key" in body["error"]["message"]
    assert_nothing_changed(directory_a)


def _url_patterns() -> list[tuple[str, str]]:
    """Every route of restapi.urls and each method its view answers, the path's parameters filled with ids
    that exist nowhere."""
    from restapi.urls import urlpatterns

    routes = []
    for pattern in urlpatterns:
        path = re.sub(r"<str:\w+>", "00000000-0000-4000-8000-000000000000", str(pattern.pattern))
        view = pattern.callback.view_class
        routes += [
            (method, "/" + path) for method in ("get", "post", "patch", "put", "delete") if hasattr(view, method)
        ]
    return routes


@pytest.mark.parametrize(("method", "path"), _url_patterns())
def test_every_route_of_the_table_refuses_an_anonymous_caller_before_anything_else(
    directory_a: Directory, method: str, path: str
) -> None:
    # Before its directory is looked up: an unknown id is a 401 too, never a 404 a stranger could learn from.
    response = call(Client(), method, path)
    assert response.status_code == 401, (path, response.content)
    assert response.json()["error"]["code"] == 401
    assert_nothing_changed(directory_a)


def test_the_route_table_scan_finds_the_routes() -> None:
    paths = {path for _method, path in _url_patterns()}
    assert len(paths) >= 40 and "/api/v1/dsync/00000000-0000-4000-8000-000000000000/users" in paths


@pytest.mark.parametrize(("method", "route"), ROUTES)
def test_every_route_accepts_a_database_key(targets: dict[str, str], db_key: str, method: str, route: str) -> None:
    response = call(Client(HTTP_AUTHORIZATION=f"Bearer {db_key}"), method, route.format(**targets))
    assert response.status_code in (200, 201), response.content


@pytest.mark.parametrize(("method", "route"), ROUTES)
def test_every_route_accepts_an_env_key(api_client: Client, targets: dict[str, str], method: str, route: str) -> None:
    response = call(api_client, method, route.format(**targets))
    assert response.status_code in (200, 201), response.content


@pytest.mark.parametrize(("method", "route"), ROUTES)
def test_every_route_refuses_a_revoked_database_key(
    directory_a: Directory, targets: dict[str, str], method: str, route: str
) -> None:
    row, key = api_key_create(actor=TEST_ACTOR, name="old app")
    api_key_revoke(actor=TEST_ACTOR, api_key=row)
    response = call(Client(HTTP_AUTHORIZATION=f"Bearer {key}"), method, route.format(**targets))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == 401
    assert_nothing_changed(directory_a)


def test_the_bearer_scheme_is_case_insensitive(directory_a: Directory) -> None:
    # RFC 7235 §2.1: auth-scheme names are case-insensitive.
    response = Client(HTTP_AUTHORIZATION="bearer test-env-api-key").get(f"/api/v1/directory-sync/{directory_a.id}")
    assert response.status_code == 200


def test_a_key_stops_working_when_revoked(directory_a: Directory) -> None:
    row, key = api_key_create(actor=TEST_ACTOR, name="app")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.get(f"/api/v1/dsync/{directory_a.id}").status_code == 200
    api_key_revoke(actor=TEST_ACTOR, api_key=ApiKey.objects.get(pk=row.pk))
    assert client.get(f"/api/v1/dsync/{directory_a.id}").status_code == 401


def test_only_a_hash_of_a_database_key_is_stored(db_key: str) -> None:
    row = ApiKey.objects.get()
    assert db_key not in (row.key_hash, row.prefix, row.name)
    assert db_key.startswith(row.prefix)


def test_a_scim_secret_is_not_an_api_key(directory_a: Directory) -> None:
    # interop T5: each credential works only on its own surface.
    response = Client(HTTP_AUTHORIZATION=f"Bearer {directory_a.scim_secret}").get(f"/api/v1/dsync/{directory_a.id}")
    assert response.status_code == 401


def test_the_audit_entry_of_a_database_key_names_the_key_not_its_secret(db_key: str) -> None:
    from audit.models import AuditEntry

    response = Client(HTTP_AUTHORIZATION=f"Bearer {db_key}").post(
        "/api/v1/dsync", {"tenant": "t", "product": "p"}, content_type="application/json"
    )
    assert response.status_code == 201
    entry = AuditEntry.objects.get(action="directory.created")
    assert "test app" in entry.details["credential"]
    assert db_key not in str(entry.details)
