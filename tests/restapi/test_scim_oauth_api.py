"""The REST API's side of OAuth client credentials for SCIM (contract §4.3): the Directory's `scim.oauth` and
`scim.static_secret_enabled`, `POST …/scim-oauth-secret`, the static secret's switch in PATCH, and their
audit entries."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEntry
from core.crypto import secret_digest
from directories.models import Directory
from directories.services import directory_scim_oauth_secret_rotate
from tests.actors import TEST_ACTOR
from tests.scim.conftest import OAuth, outbox_kept  # noqa: F401 - a fixture, used by name

pytestmark = pytest.mark.django_db

PREFIXES = ["/api/v1/directory-sync", "/api/v1/dsync"]


def rotate(client: Client, directory: Directory, body: Any = None, prefix: str = PREFIXES[0]) -> Any:
    raw = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(f"{prefix}/{directory.id}/scim-oauth-secret", raw, content_type="application/json")


def patch(client: Client, directory: Directory, body: Any) -> Any:
    return client.patch(f"{PREFIXES[0]}/{directory.id}", json.dumps(body), content_type="application/json")


def scim_status(directory: Directory, credential: str) -> int:
    return Client(HTTP_AUTHORIZATION=f"Bearer {credential}").get(f"/api/scim/v2.0/{directory.id}/Users").status_code


def test_a_directory_shows_its_oauth_client_off_until_it_has_a_secret(
    api_client: Client, directory_a: Directory
) -> None:
    scim = api_client.get(f"{PREFIXES[0]}/{directory_a.id}").json()["data"]["scim"]
    assert scim["static_secret_enabled"] is True
    assert scim["oauth"] == {
        "client_id": str(directory_a.id),
        "token_endpoint": f"http://testserver/api/scim/v2.0/{directory_a.id}/oauth/token",
        "enabled": False,
        "client_secret_created_at": None,
    }


@pytest.mark.parametrize("prefix", PREFIXES)
def test_the_first_secret_turns_oauth_on_and_is_shown_once_stored_as_a_digest(
    api_client: Client, directory_a: Directory, settings: Any, prefix: str
) -> None:
    settings.EXTERNAL_URL = "https://roster.example.com"
    response = rotate(api_client, directory_a, prefix=prefix)
    assert response.status_code == 200, response.content
    oauth = response.json()["data"]["scim"]["oauth"]
    secret = oauth.pop("client_secret")
    assert oauth["enabled"] is True and oauth["client_secret_created_at"].endswith("Z")
    assert oauth["token_endpoint"] == f"https://roster.example.com/api/scim/v2.0/{directory_a.id}/oauth/token"
    assert len(secret) >= 43
    row = Directory.objects.get(pk=directory_a.pk)
    assert row.scim_oauth_secrets[0]["hash"] == secret_digest(secret)
    assert secret not in json.dumps(list(Directory.objects.filter(pk=row.pk).values()), default=str)
    # Never shown again.
    again = api_client.get(f"{prefix}/{directory_a.id}").json()["data"]["scim"]["oauth"]
    assert "client_secret" not in again and again["enabled"] is True
    # It gets a token, and the token works.
    assert scim_status(row, OAuth(row, secret).token()) == 200


def test_a_rotation_ends_the_previous_secret_and_its_tokens_and_is_audited_without_it(
    api_client: Client, directory_a: Directory
) -> None:
    first = rotate(api_client, directory_a).json()["data"]["scim"]["oauth"]["client_secret"]
    row = Directory.objects.get(pk=directory_a.pk)
    token = OAuth(row, first).token()
    second = rotate(api_client, directory_a, {}).json()["data"]["scim"]["oauth"]["client_secret"]
    assert second != first
    row = Directory.objects.get(pk=directory_a.pk)
    assert scim_status(row, token) == 401
    assert OAuth(row, first).post(authorization=OAuth(row, first).basic())[0] == 401
    entries = list(AuditEntry.objects.filter(action="directory.scim_oauth_secret_rotated").order_by("id"))
    assert [e.details["first"] for e in entries] == [True, False]
    assert all(e.details["via"] == "rest-api" and e.directory_id == directory_a.id for e in entries)
    assert all(first not in json.dumps(e.details) and second not in json.dumps(e.details) for e in entries)


def test_the_rotation_touches_only_the_directory_named(
    api_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    assert rotate(api_client, directory_b).status_code == 200
    assert not Directory.objects.get(pk=directory_a.pk).scim_oauth_enabled
    assert Directory.objects.get(pk=directory_b.pk).scim_oauth_enabled


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"grace_seconds": 60}, 400),
        ({"client_secret": "mine"}, 400),
        ([], 400),
        (b"not json", 400),
        (b'"text"', 400),
    ],
)
def test_a_rotation_takes_no_body_but_an_empty_one(
    api_client: Client, directory_a: Directory, body: Any, status: int
) -> None:
    response = rotate(api_client, directory_a, body)
    assert response.status_code == status and response.json()["error"]["message"]
    assert not Directory.objects.get(pk=directory_a.pk).scim_oauth_enabled


def test_the_rotation_needs_an_api_key_and_a_directory_that_exists(anon_client: Client, api_client: Client) -> None:
    directory = Directory.objects.create(name="x", tenant="t", product="p", scim_secret="s" * 43)
    for credential in (None, "Bearer wrong", f"Bearer {directory.scim_secret}"):
        client = Client(HTTP_AUTHORIZATION=credential) if credential else anon_client
        response = rotate(client, directory)
        assert response.status_code == 401 and response.json()["data"] is None
    assert not Directory.objects.get(pk=directory.pk).scim_oauth_enabled
    for missing in (uuid.uuid4(), "not-a-uuid"):
        response = api_client.post(f"{PREFIXES[0]}/{missing}/scim-oauth-secret", b"", content_type="application/json")
        assert response.status_code == 404 and response.json()["error"]["code"] == 404


@pytest.mark.parametrize("method", ["get", "put", "patch", "delete"])
def test_the_rotation_route_takes_post_only(api_client: Client, directory_a: Directory, method: str) -> None:
    response = getattr(api_client, method)(f"{PREFIXES[0]}/{directory_a.id}/scim-oauth-secret")
    assert response.status_code == 405 and response.json()["error"]["code"] == 405


# --- the static secret's switch -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "off",
    [{"scim": {"static_secret_enabled": False}}, {"static_secret_enabled": False}],
)
def test_the_static_secret_goes_off_and_on_with_an_audit_entry_each_time(
    api_client: Client, directory_a: Directory, off: dict[str, Any]
) -> None:
    directory_scim_oauth_secret_rotate(actor=TEST_ACTOR, directory=directory_a)
    secret = directory_a.scim_secret
    response = patch(api_client, directory_a, off)
    assert response.status_code == 200 and response.json()["data"]["scim"]["static_secret_enabled"] is False
    assert scim_status(directory_a, secret) == 401
    response = patch(api_client, directory_a, {"scim": {"static_secret_enabled": True}})
    assert response.json()["data"]["scim"]["static_secret_enabled"] is True
    assert scim_status(directory_a, secret) == 200
    entries = AuditEntry.objects.filter(action="directory.scim_static_secret_toggled").order_by("id")
    assert [e.details["scim_static_secret_enabled"] for e in entries] == [False, True]
    assert all(e.details["fields"] == ["scim_static_secret_enabled"] for e in entries)
    # Saying what already holds changes nothing and leaves no entry.
    assert patch(api_client, directory_a, {"scim": {"static_secret_enabled": True}}).status_code == 200
    assert entries.count() == 2


def test_the_static_secret_cannot_go_off_before_oauth_has_a_secret(api_client: Client, directory_a: Directory) -> None:
    response = patch(api_client, directory_a, {"scim": {"static_secret_enabled": False}, "name": "New name"})
    assert response.status_code == 409
    assert "OAuth" in response.json()["error"]["message"] and response.json()["data"] is None
    row = Directory.objects.get(pk=directory_a.pk)
    assert row.scim_static_secret_enabled and row.name == "Acme Okta"
    assert not AuditEntry.objects.filter(directory_id=directory_a.id).exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scim": {"static_secret_enabled": "false"}}, "scim.static_secret_enabled"),
        ({"scim": {"static_secret_enabled": 0}}, "scim.static_secret_enabled"),
        ({"static_secret_enabled": "no"}, "static_secret_enabled"),
        ({"scim": {"secret": "mine"}}, "secret"),
        ({"scim": {"oauth": {"enabled": True}}}, "oauth"),
        ({"scim": "off"}, "scim"),
        ({"scim": [False]}, "scim"),
        ({"scim": {"static_secret_enabled": True}, "static_secret_enabled": False}, "static_secret_enabled"),
    ],
)
def test_a_bad_switch_is_a_400_naming_it_and_nothing_changes(
    api_client: Client, directory_a: Directory, body: dict[str, Any], field: str
) -> None:
    directory_scim_oauth_secret_rotate(actor=TEST_ACTOR, directory=directory_a)
    response = patch(api_client, directory_a, body)
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["message"]
    assert Directory.objects.get(pk=directory_a.pk).scim_static_secret_enabled


def test_null_switches_are_not_given(api_client: Client, directory_a: Directory) -> None:
    response = patch(api_client, directory_a, {"scim": None, "static_secret_enabled": None})
    assert response.status_code == 200 and response.json()["data"]["scim"]["static_secret_enabled"] is True
    response = patch(api_client, directory_a, {"scim": {"static_secret_enabled": None}})
    assert response.status_code == 200


@pytest.mark.usefixtures("outbox_kept")
def test_directory_events_carry_the_oauth_client_but_no_secret(api_client: Client, settings: Any) -> None:
    from webhooks.models import WebhookEvent

    settings.WEBHOOK_URL = "https://hooks.example.com/roster-ops"
    created = api_client.post(
        PREFIXES[0], json.dumps({"tenant": "acme", "product": "crm"}), content_type="application/json"
    ).json()["data"]
    directory = Directory.objects.get(pk=created["id"])
    secret = rotate(api_client, directory).json()["data"]["scim"]["oauth"]["client_secret"]
    patch(api_client, directory, {"deactivated": True})
    bodies = [json.loads(row.body) for row in WebhookEvent.objects.filter(directory_id=directory.id)]
    assert {b["event"] for b in bodies} == {"dsync.created", "dsync.deactivated", "dsync.health_changed"}
    for body in bodies:
        assert secret not in json.dumps(body) and "client_secret" not in body["data"]["scim"]["oauth"]
    deactivated = next(b for b in bodies if b["event"] == "dsync.deactivated")
    assert deactivated["data"]["scim"]["oauth"]["enabled"] is True
