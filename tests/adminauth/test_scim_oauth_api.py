"""The admin API's side of OAuth client credentials for SCIM (contract §4.3, §6): `POST
/directories/<id>/scim-oauth-secret` and the static secret's switch in PATCH, each audited with the admin."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEntry
from core.crypto import secret_digest
from directories.models import Directory
from tests.adminauth.conftest import ROOT, AdminSession
from tests.scim.conftest import OAuth

pytestmark = pytest.mark.django_db

BASE = "/auditlog/admin/v1"


def call(client: Client, method: str, path: str, body: Any = None) -> Any:
    """One admin API request; no `body`: an empty one."""
    data = b"" if body is None else json.dumps(body)
    return getattr(client, method)(BASE + path, data=data, content_type="application/json")


def test_an_admin_creates_then_rotates_the_client_secret_each_audited_without_it(
    admin_client: Client, directory_a: Directory
) -> None:
    response = call(admin_client, "post", f"/directories/{directory_a.id}/scim-oauth-secret")
    assert response.status_code == 200, response.content
    oauth = response.json()["data"]["scim"]["oauth"]
    first = oauth["client_secret"]
    assert oauth["enabled"] and oauth["client_id"] == str(directory_a.id)
    assert Directory.objects.get(pk=directory_a.pk).scim_oauth_secrets[0]["hash"] == secret_digest(first)
    second = call(admin_client, "post", f"/directories/{directory_a.id}/scim-oauth-secret", {}).json()["data"]
    assert second["scim"]["oauth"]["client_secret"] != first
    row = Directory.objects.get(pk=directory_a.pk)
    assert OAuth(row, second["scim"]["oauth"]["client_secret"]).token()
    entries = list(AuditEntry.objects.filter(action="directory.scim_oauth_secret_rotated").order_by("id"))
    about = {"via": "admin-api", "actor": "ops@example.com", "name": "Acme Okta", "tenant": "acme", "product": "crm"}
    assert [e.details for e in entries] == [{**about, "first": True}, {**about, "first": False}]
    assert all(e.actor.email == "ops@example.com" and e.directory_id == directory_a.id for e in entries)
    # The answer of a read never shows it.
    read = call(admin_client, "get", f"/directories/{directory_a.id}").json()["data"]
    assert "client_secret" not in read["scim"]["oauth"]


def test_the_rotation_needs_an_admin_credential(
    admin_session: AdminSession, directory_a: Directory, directory_b: Directory
) -> None:
    for header in (None, f"Bearer {directory_a.scim_secret}", f"token={ROOT}", "Bearer test-env-api-key"):
        client = Client(HTTP_AUTHORIZATION=header) if header else Client()
        response = call(client, "post", f"/directories/{directory_a.id}/scim-oauth-secret")
        assert response.status_code == 401 and response.json()["data"] is None
    assert not Directory.objects.exclude(scim_oauth_secrets=[]).exists()
    assert not AuditEntry.objects.filter(action="directory.scim_oauth_secret_rotated").exists()
    # An admin's rotation of one directory leaves every other one as it was.
    assert call(admin_session.client(), "post", f"/directories/{directory_b.id}/scim-oauth-secret").status_code == 200
    assert Directory.objects.get(pk=directory_b.pk).scim_oauth_enabled
    assert not Directory.objects.get(pk=directory_a.pk).scim_oauth_enabled


def test_the_rotation_of_an_unknown_directory_or_with_a_body_is_refused(
    admin_client: Client, directory_a: Directory
) -> None:
    for missing in (uuid.uuid4(), "nope"):
        assert call(admin_client, "post", f"/directories/{missing}/scim-oauth-secret").status_code == 404
    response = call(admin_client, "post", f"/directories/{directory_a.id}/scim-oauth-secret", {"secret": "mine"})
    assert response.status_code == 400 and "secret" in response.json()["error"]["message"]
    assert not Directory.objects.get(pk=directory_a.pk).scim_oauth_enabled


def test_an_admin_switches_the_static_secret_with_an_audit_entry_and_a_409_before_oauth(
    admin_client: Client, directory_a: Directory
) -> None:
    off = {"scim": {"static_secret_enabled": False}}
    response = call(admin_client, "patch", f"/directories/{directory_a.id}", off)
    assert response.status_code == 409 and "OAuth" in response.json()["error"]["message"]
    call(admin_client, "post", f"/directories/{directory_a.id}/scim-oauth-secret")
    data = call(admin_client, "patch", f"/directories/{directory_a.id}", off).json()["data"]
    assert data["scim"]["static_secret_enabled"] is False
    [entry] = AuditEntry.objects.filter(action="directory.scim_static_secret_toggled")
    about = {"via": "admin-api", "actor": "ops@example.com", "name": "Acme Okta", "tenant": "acme", "product": "crm"}
    assert entry.details == {**about, "fields": ["scim_static_secret_enabled"], "scim_static_secret_enabled": False}
    assert entry.actor.email == "ops@example.com"
    assert (
        Client(HTTP_AUTHORIZATION=f"Bearer {directory_a.scim_secret}")
        .get(f"/api/scim/v2.0/{directory_a.id}/Users")
        .status_code
        == 401
    )
