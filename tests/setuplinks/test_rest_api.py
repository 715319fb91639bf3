"""REST routes of setup links (contract §3.1): create, list, revoke, on both prefixes, with their bounds."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from audit.models import AuditEntry
from core.crypto import secret_digest
from directories.models import Directory
from directories.services import api_key_create
from setuplinks.models import SetupLink
from tests.actors import TEST_ACTOR
from tests.setuplinks.conftest import expire, make_link

pytestmark = pytest.mark.django_db
PREFIXES = ["/api/v1/directory-sync", "/api/v1/dsync"]
TOKEN_URL = re.compile(r"http://testserver/setup/([A-Za-z0-9_-]{43})")


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.parametrize("prefix", PREFIXES)
def test_create_answers_201_with_the_url_once_and_stores_only_the_digest(
    api_client: Client, directory_a: Directory, prefix: str
) -> None:
    before = timezone.now()
    response = api_client.post(f"{prefix}/{directory_a.id}/setup-links", content_type="application/json")
    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert response.json()["error"] is None
    token = TOKEN_URL.fullmatch(data["url"]).group(1)
    assert data["status"] == "active" and data["allow_mapping"] is False and data["return_url"] is None
    expires = _time(data["expires_at"]) - _time(data["created_at"])
    assert expires == timedelta(seconds=259200)  # three days by default
    assert _time(data["created_at"]) >= before.replace(microsecond=before.microsecond // 1000 * 1000)
    link = SetupLink.objects.get(pk=data["id"])
    assert link.directory_id == directory_a.id
    assert link.token_hash == secret_digest(token) and token not in link.token_hash
    assert link.created_by == "API_KEYS"
    # The token is nowhere in the database but as its digest.
    assert not SetupLink.objects.filter(token_hash=token).exists()


def test_create_takes_expiry_return_url_and_mapping(api_client: Client, directory_a: Directory) -> None:
    body = {"expires_in": 300, "return_url": "https://app.example.com/settings/sso?tab=1", "allow_mapping": True}
    response = api_client.post(f"/api/v1/directory-sync/{directory_a.id}/setup-links", body, "application/json")
    assert response.status_code == 201, response.content
    data = response.json()["data"]
    assert _time(data["expires_at"]) - _time(data["created_at"]) == timedelta(seconds=300)
    assert data["return_url"] == body["return_url"] and data["allow_mapping"] is True
    link = SetupLink.objects.get(pk=data["id"])
    assert (link.return_url, link.allow_mapping) == (body["return_url"], True)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"expires_in": 299}, "expires_in"),
        ({"expires_in": 2592001}, "expires_in"),
        ({"expires_in": "3600"}, "expires_in"),
        ({"expires_in": 3600.0}, "expires_in"),
        ({"expires_in": True}, "expires_in"),
        ({"expires_in": None}, "expires_in"),
        ({"return_url": "http://app.example.com/done"}, "return_url"),
        ({"return_url": "javascript:alert(1)"}, "return_url"),
        ({"return_url": "https://user:pw@app.example.com/"}, "return_url"),
        ({"return_url": "https:///nohost"}, "return_url"),
        ({"return_url": "https://app.example.com/a b"}, "return_url"),
        ({"return_url": "https://app.example.com:99999/"}, "return_url"),
        ({"return_url": "https://app.example.com/" + "a" * 2048}, "return_url"),
        ({"return_url": 7}, "return_url"),
        ({"allow_mapping": "true"}, "allow_mapping"),
        ({"allow_mapping": 1}, "allow_mapping"),
        ({"expires": 3600}, "expires"),
        ({"allowMapping": True}, "allowMapping"),
    ],
)
def test_create_refuses_bad_input_with_a_400_naming_the_field(
    api_client: Client, directory_a: Directory, body: dict, field: str
) -> None:
    response = api_client.post(f"/api/v1/directory-sync/{directory_a.id}/setup-links", body, "application/json")
    assert response.status_code == 400, response.content
    assert response.json()["data"] is None
    assert field in response.json()["error"]["message"] and response.json()["error"]["code"] == 400
    assert not SetupLink.objects.exists()


@pytest.mark.parametrize("seconds", [300, 2592000])
def test_the_expiry_bounds_themselves_are_accepted(api_client: Client, directory_a: Directory, seconds: int) -> None:
    body = {"expires_in": seconds}
    response = api_client.post(f"/api/v1/directory-sync/{directory_a.id}/setup-links", body, "application/json")
    assert response.status_code == 201
    link = SetupLink.objects.get()
    assert link.expires_at - link.created_at == timedelta(seconds=seconds)


@pytest.mark.parametrize("body", [b"[]", b'"x"', b"{", b"null"])
def test_create_refuses_a_body_that_is_not_an_object(api_client: Client, directory_a: Directory, body: bytes) -> None:
    response = api_client.post(f"/api/v1/directory-sync/{directory_a.id}/setup-links", body, "application/json")
    assert response.status_code == 400
    assert not SetupLink.objects.exists()


def test_http_return_url_is_allowed_on_loopback_with_debug_only(
    api_client: Client, directory_a: Directory, settings
) -> None:  # noqa: ANN001
    url = f"/api/v1/directory-sync/{directory_a.id}/setup-links"
    for local in ("http://localhost:3000/done", "http://127.0.0.1/done", "http://[::1]:8080/"):
        assert api_client.post(url, {"return_url": local}, "application/json").status_code == 400
    settings.DEBUG = True
    for local in ("http://localhost:3000/done", "http://127.0.0.1/done", "http://[::1]:8080/"):
        assert api_client.post(url, {"return_url": local}, "application/json").status_code == 201, local
    assert api_client.post(url, {"return_url": "http://app.example.com/"}, "application/json").status_code == 400


def test_a_deactivated_directory_gets_no_link(api_client: Client, directory_a: Directory) -> None:
    directory_a.deactivated = True
    directory_a.save()
    response = api_client.post(f"/api/v1/directory-sync/{directory_a.id}/setup-links", {}, "application/json")
    assert response.status_code == 409
    assert "deactivated" in response.json()["error"]["message"]
    assert not SetupLink.objects.exists()


@pytest.mark.parametrize("method", ["get", "post"])
def test_an_unknown_or_malformed_directory_is_a_404(api_client: Client, db, method: str) -> None:  # noqa: ANN001
    for directory_id in ("6d1f3c1e-5f7b-4c39-9a57-2f1d2b0f8e11", "nope"):
        response = getattr(api_client, method)(f"/api/v1/directory-sync/{directory_id}/setup-links")
        assert response.status_code == 404
        assert response.json()["error"]["message"] == "Directory not found."


@pytest.mark.parametrize(
    ("method", "path"),
    [("get", "setup-links"), ("post", "setup-links"), ("delete", "setup-links/{link}")],
)
def test_every_route_refuses_an_anonymous_or_wrong_key(directory_a: Directory, method: str, path: str) -> None:
    link, _token = make_link(directory_a)
    url = f"/api/v1/directory-sync/{directory_a.id}/" + path.format(link=link.id)
    for client in (Client(), Client(HTTP_AUTHORIZATION="Bearer not-a-key")):
        response = getattr(client, method)(url)
        assert response.status_code == 401
        assert response.json()["data"] is None
    link.refresh_from_db()
    assert link.revoked_at is None and SetupLink.objects.count() == 1


def test_list_is_newest_first_with_status_and_never_a_token(api_client: Client, directory_a: Directory) -> None:
    first, first_token = make_link(directory_a)
    second, second_token = make_link(directory_a, allow_mapping=True)
    third, third_token = make_link(directory_a)
    expire(second)
    SetupLink.objects.filter(pk=third.pk).update(revoked_at=timezone.now())
    response = api_client.get(f"/api/v1/dsync/{directory_a.id}/setup-links")
    assert response.status_code == 200
    data = response.json()["data"]
    assert [d["id"] for d in data] == [str(third.id), str(second.id), str(first.id)]
    assert [d["status"] for d in data] == ["revoked", "expired", "active"]
    assert set(data[0]) == {
        "id",
        "status",
        "created_at",
        "expires_at",
        "created_by",
        "revoked_at",
        "last_opened_at",
        "opened_count",
        "return_url",
        "allow_mapping",
    }
    text = response.content.decode()
    for token in (first_token, second_token, third_token):
        assert token not in text
    assert "url" not in data[0] and "token_hash" not in text


def test_list_pages(api_client: Client, directory_a: Directory) -> None:
    links = [make_link(directory_a)[0] for _ in range(3)]
    page = api_client.get(f"/api/v1/directory-sync/{directory_a.id}/setup-links?pageOffset=1&pageLimit=1")
    assert [d["id"] for d in page.json()["data"]] == [str(links[1].id)]
    assert api_client.get(f"/api/v1/directory-sync/{directory_a.id}/setup-links?pageLimit=x").status_code == 400


def test_list_shows_only_this_directorys_links(
    api_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    make_link(directory_b)
    mine, _ = make_link(directory_a)
    data = api_client.get(f"/api/v1/directory-sync/{directory_a.id}/setup-links").json()["data"]
    assert [d["id"] for d in data] == [str(mine.id)]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_revoke_answers_204_and_takes_effect_at_once(api_client: Client, directory_a: Directory, prefix: str) -> None:
    link, token = make_link(directory_a)
    assert Client().get(f"/setup/{token}").status_code == 200
    response = api_client.delete(f"{prefix}/{directory_a.id}/setup-links/{link.id}")
    assert response.status_code == 204 and response.content == b""
    link.refresh_from_db()
    assert link.revoked_at is not None and link.revoked_by == "API_KEYS"
    assert Client().get(f"/setup/{token}").status_code == 404
    # Revoking again changes nothing and is no error; the trail has one entry.
    again = api_client.delete(f"{prefix}/{directory_a.id}/setup-links/{link.id}")
    assert again.status_code == 204
    assert AuditEntry.objects.filter(action="setup_link.revoked").count() == 1


def test_revoke_of_another_directorys_link_is_a_404_and_leaves_it(
    api_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    theirs, token = make_link(directory_b)
    for link_id in (theirs.id, "6d1f3c1e-5f7b-4c39-9a57-2f1d2b0f8e11", "nope"):
        response = api_client.delete(f"/api/v1/directory-sync/{directory_a.id}/setup-links/{link_id}")
        assert response.status_code == 404
        assert response.json()["error"]["message"] == "Setup link not found."
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    assert Client().get(f"/setup/{token}").status_code == 200


def test_rotating_the_scim_secret_over_the_api_does_not_revoke_links(
    api_client: Client, directory_a: Directory
) -> None:
    link, token = make_link(directory_a)
    assert (
        api_client.post(f"/api/v1/directory-sync/{directory_a.id}/scim-secret", {}, "application/json").status_code
        == 200
    )
    assert Client().get(f"/setup/{token}").status_code == 200


def test_create_and_revoke_are_audited_with_the_api_key(directory_a: Directory) -> None:
    _row, key = api_key_create(actor=TEST_ACTOR, name="crm backend")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    created = client.post(
        f"/api/v1/directory-sync/{directory_a.id}/setup-links", {"allow_mapping": True}, "application/json"
    )
    link_id = created.json()["data"]["id"]
    assert client.delete(f"/api/v1/directory-sync/{directory_a.id}/setup-links/{link_id}").status_code == 204
    entries = list(
        AuditEntry.objects.filter(directory_id=directory_a.id, action__startswith="setup_link.").order_by("id")
    )
    assert [e.action for e in entries] == ["setup_link.created", "setup_link.revoked"]
    for entry in entries:
        assert entry.actor is None and entry.target_type == "setup_link" and entry.target_id == link_id
        assert entry.details["via"] == "rest-api"
        assert entry.details["actor"] == f"api key crm backend ({key[:10]}…)"
        assert key not in str(entry.details)
    assert entries[0].details["allow_mapping"] is True
    assert SetupLink.objects.get(pk=link_id).created_by == f"api key crm backend ({key[:10]}…)"
