"""The portal's side of OAuth client credentials for SCIM (contract §4.3): the directory page shows which
ways in are on, a button creates or rotates the client secret after a confirmation page and shows it once,
and a switch turns the SCIM secret off (never before OAuth has a secret) and on again."""

from __future__ import annotations

import re
import uuid

import pytest
from django.test import Client

from adminauth.models import AdminUser
from audit.models import AuditEntry
from core.crypto import secret_digest
from directories.models import Directory
from tests.scim.conftest import OAuth

pytestmark = pytest.mark.django_db

SHOWN = re.compile(r'<code id="oauth-client-secret" class="value">([^<]+)</code>')


def page(client: Client, directory: Directory) -> str:
    response = client.get(f"/portal/directories/{directory.id}")
    assert response.status_code == 200
    return response.content.decode()


def test_the_directory_page_shows_the_oauth_client_and_that_it_is_off(
    portal_client: Client, directory_a: Directory
) -> None:
    html = page(portal_client, directory_a)
    assert '<span class="badge" id="oauth-state">Off</span>' in html
    assert '<span class="badge badge-ok" id="static-secret-state">On</span>' in html
    assert f"/api/scim/v2.0/{directory_a.id}/oauth/token</code>" in html
    assert f'<code id="oauth-client-id" class="value">{directory_a.id}</code>' in html
    assert "Create client secret…" in html and 'id="static-secret-needs-oauth"' in html
    assert 'id="static-secret-toggle"' not in html  # no way to turn the only way in off


def test_the_button_asks_first_then_shows_the_secret_once(portal_client: Client, directory_a: Directory) -> None:
    url = f"/portal/directories/{directory_a.id}/scim-oauth-secret"
    confirm = portal_client.get(url)
    assert confirm.status_code == 200 and b"Create the OAuth client secret?" in confirm.content
    assert not Directory.objects.get(pk=directory_a.pk).scim_oauth_enabled  # looking changes nothing
    shown = portal_client.post(url)
    assert shown.status_code == 200 and shown["Cache-Control"].startswith("max-age=0")
    secret = SHOWN.search(shown.content.decode()).group(1)
    row = Directory.objects.get(pk=directory_a.pk)
    assert row.scim_oauth_secrets[0]["hash"] == secret_digest(secret)
    assert OAuth(row, secret).token()
    html = page(portal_client, row)
    assert secret not in html and '<span class="badge badge-ok" id="oauth-state">On</span>' in html
    assert "Rotate client secret…" in html
    # A rotation asks with its consequence, then shows another secret; the first no longer works.
    assert b"every access token issued with it" in portal_client.get(url).content
    again = SHOWN.search(portal_client.post(url).content.decode()).group(1)
    assert again != secret and OAuth(row, secret).post(authorization=OAuth(row, secret).basic())[0] == 401
    entries = AuditEntry.objects.filter(action="directory.scim_oauth_secret_rotated", directory_id=directory_a.id)
    assert [e.details["first"] for e in entries.order_by("id")] == [True, False]
    assert all(e.actor.email == "ops@example.com" and secret not in str(e.details) for e in entries)


def test_the_static_secret_switch_is_refused_before_oauth_then_works_both_ways(
    portal_client: Client, directory_a: Directory
) -> None:
    url = f"/portal/directories/{directory_a.id}/scim-static-secret"
    refused = portal_client.post(url, {"value": "off"}, follow=True)
    assert "OAuth has no client secret" in refused.content.decode()
    assert Directory.objects.get(pk=directory_a.pk).scim_static_secret_enabled
    portal_client.post(f"/portal/directories/{directory_a.id}/scim-oauth-secret")
    off = portal_client.post(url, {"value": "off"})
    assert off.status_code == 302
    html = page(portal_client, directory_a)
    assert '<span class="badge badge-warn" id="static-secret-state">Off</span>' in html
    assert (
        Client(HTTP_AUTHORIZATION=f"Bearer {directory_a.scim_secret}")
        .get(f"/api/scim/v2.0/{directory_a.id}/Users")
        .status_code
        == 401
    )
    portal_client.post(url, {"value": "on"})
    assert Directory.objects.get(pk=directory_a.pk).scim_static_secret_enabled
    toggles = AuditEntry.objects.filter(action="directory.scim_static_secret_toggled").order_by("id")
    assert [e.details["scim_static_secret_enabled"] for e in toggles] == [False, True]
    assert b"Choose on or off." in portal_client.post(url, {"value": "flip"}, follow=True).content


def test_the_actions_need_csrf_post_and_a_known_directory(admin_user: AdminUser, directory_a: Directory) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin_user)
    assert strict.post(f"/portal/directories/{directory_a.id}/scim-oauth-secret").status_code == 403
    assert strict.post(f"/portal/directories/{directory_a.id}/scim-static-secret", {"value": "on"}).status_code == 403
    signed_in = Client()
    signed_in.force_login(admin_user)
    assert signed_in.get(f"/portal/directories/{directory_a.id}/scim-static-secret").status_code == 405
    for missing in (uuid.uuid4(), "nope"):
        assert signed_in.post(f"/portal/directories/{missing}/scim-oauth-secret").status_code == 404
        assert signed_in.post(f"/portal/directories/{missing}/scim-static-secret", {"value": "on"}).status_code == 404
    assert not Directory.objects.get(pk=directory_a.pk).scim_oauth_enabled
    assert not AuditEntry.objects.exists()


def test_only_the_directory_named_changes(
    portal_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    portal_client.post(f"/portal/directories/{directory_b.id}/scim-oauth-secret")
    assert Directory.objects.get(pk=directory_b.pk).scim_oauth_enabled
    assert not Directory.objects.get(pk=directory_a.pk).scim_oauth_enabled


def test_secrets_are_added_with_an_expiry_listed_and_revoked_one_by_one(
    portal_client: Client, directory_a: Directory
) -> None:
    url = f"/portal/directories/{directory_a.id}/scim-oauth-secrets"
    shown = portal_client.post(url, {"expires_in_days": "30"})
    assert shown.status_code == 200 and shown["Cache-Control"].startswith("max-age=0")
    first = SHOWN.search(shown.content.decode()).group(1)
    assert 'id="oauth-secret-expires"' in shown.content.decode()
    second = SHOWN.search(portal_client.post(url, {"expires_in_days": "365"}).content.decode()).group(1)
    row = Directory.objects.get(pk=directory_a.pk)
    token_first, token_second = OAuth(row, first).token(), OAuth(row, second).token()
    html = page(portal_client, row)
    assert first not in html and second not in html
    assert f"…{first[-4:]}" in html and f"…{second[-4:]}" in html
    entries = row.scim_oauth_secrets
    revoked = portal_client.post(f"{url}/{entries[1]['id']}/revoke", follow=True)
    assert "its access tokens no longer work" in revoked.content.decode()
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token_first}"}
    assert Client(**bearer).get(f"/api/scim/v2.0/{row.id}/Users").status_code == 401
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token_second}"}
    assert Client(**bearer).get(f"/api/scim/v2.0/{row.id}/Users").status_code == 200
    assert f"…{first[-4:]}" not in page(portal_client, row)
    actions = AuditEntry.objects.filter(directory_id=row.id, details__via="portal").values_list("action", flat=True)
    assert sorted(actions) == [
        "directory.scim_oauth_secret_added",
        "directory.scim_oauth_secret_added",
        "directory.scim_oauth_secret_revoked",
    ]


@pytest.mark.parametrize("days", ["0", "1096", "ten", "-3"])
def test_an_expiry_out_of_bounds_is_refused_and_adds_nothing(
    portal_client: Client, directory_a: Directory, days: str
) -> None:
    url = f"/portal/directories/{directory_a.id}/scim-oauth-secrets"
    refused = portal_client.post(url, {"expires_in_days": days}, follow=True)
    assert "expires_in_days must be an integer from 1 to 1095" in refused.content.decode()
    assert Directory.objects.get(pk=directory_a.pk).scim_oauth_secrets == []


def test_a_sixth_unexpired_secret_is_refused(portal_client: Client, directory_a: Directory) -> None:
    url = f"/portal/directories/{directory_a.id}/scim-oauth-secrets"
    for _ in range(5):
        assert portal_client.post(url, {"expires_in_days": "10"}).status_code == 200
    refused = portal_client.post(url, {"expires_in_days": "10"}, follow=True)
    assert "already has 5 unexpired OAuth client secrets" in refused.content.decode()
    assert len(Directory.objects.get(pk=directory_a.pk).scim_oauth_secrets) == 5
