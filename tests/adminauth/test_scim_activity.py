"""The admin API's side of SCIM activity (contract §4.1, §6): rotation with grace_seconds, revoking the
previous secret, and a directory's SCIM request log."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from audit.models import AuditEntry
from directories.models import Directory, ScimLogEntry
from tests.adminauth.conftest import AdminSession

pytestmark = pytest.mark.django_db

BASE = "/auditlog/admin/v1/directories"


def post_json(client: Client, path: str, body: object) -> object:
    return client.post(path, json.dumps(body), content_type="application/json")


def scim_status(directory: Directory, secret: str) -> int:
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}").get(f"/api/scim/v2.0/{directory.id}/Users").status_code


def test_rotation_with_grace_keeps_the_old_secret_and_is_audited(
    admin_client: Client, admin_session: AdminSession, directory_a: Directory
) -> None:
    old = directory_a.scim_secret
    response = post_json(admin_client, f"{BASE}/{directory_a.id}/scim-secret", {"grace_seconds": 3600})
    assert response.status_code == 200
    data = response.json()["data"]
    assert data["scim"]["previous_secret_expires_at"] is not None and data["health"]["state"] == "never_connected"
    assert scim_status(directory_a, old) == scim_status(directory_a, data["scim"]["secret"]) == 200
    entry = AuditEntry.objects.get(action="directory.scim_secret_rotated")
    about = {"via": "admin-api", "actor": "ops@example.com", "name": "Acme Okta", "tenant": "acme", "product": "crm"}
    assert entry.details == {**about, "grace_seconds": 3600} and str(entry.actor_id) == admin_session.user_id


@pytest.mark.parametrize("body", [{"grace_seconds": -5}, {"grace_seconds": "3600"}, {"grace_seconds": False}, {"x": 1}])
def test_bad_grace_seconds_is_an_enveloped_400_and_nothing_changes(
    admin_client: Client, directory_a: Directory, body: object
) -> None:
    old = directory_a.scim_secret
    response = post_json(admin_client, f"{BASE}/{directory_a.id}/scim-secret", body)
    assert response.status_code == 400 and response.json()["data"] is None
    assert next(iter(body)) in response.json()["error"]["message"]
    assert Directory.objects.get(pk=directory_a.pk).scim_secret == old
    assert not AuditEntry.objects.filter(action="directory.scim_secret_rotated").exists()


def test_revoking_the_previous_secret_stops_it_now(admin_client: Client, directory_a: Directory) -> None:
    old = directory_a.scim_secret
    post_json(admin_client, f"{BASE}/{directory_a.id}/scim-secret", {"grace_seconds": 600})
    response = admin_client.delete(f"{BASE}/{directory_a.id}/scim-secret/previous")
    assert response.status_code == 200 and response.json()["data"]["scim"]["previous_secret_expires_at"] is None
    assert scim_status(directory_a, old) == 401
    assert AuditEntry.objects.filter(action="directory.previous_scim_secret_revoked").count() == 1


def test_the_scim_request_log_is_newest_first_with_its_filters(
    admin_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    for seconds, status in ((30, 201), (20, 409), (10, 401)):
        ScimLogEntry.objects.create(
            directory=directory_a,
            at=timezone.now() - timedelta(seconds=seconds),
            method="POST",
            path="/Users",
            status=status,
            latency_ms=1,
            request_id=f"r{status}",
        )
    ScimLogEntry.objects.create(
        directory=directory_b, at=timezone.now(), method="GET", path="/Users", status=500, latency_ms=1, request_id="b"
    )
    url = f"{BASE}/{directory_a.id}/scim-requests"
    assert [e["status"] for e in admin_client.get(url).json()["data"]] == [401, 409, 201]
    assert [e["status"] for e in admin_client.get(url + "?failed=true").json()["data"]] == [401, 409]
    assert [e["request_id"] for e in admin_client.get(url + "?status=201").json()["data"]] == ["r201"]
    assert [e["status"] for e in admin_client.get(url + "?pageOffset=2").json()["data"]] == [201]
    for junk in ("status=abc", "status=1000", "failed=maybe", "pageLimit=x"):
        response = admin_client.get(f"{url}?{junk}")
        assert response.status_code == 400 and response.json()["error"]["code"] == 400


@pytest.mark.parametrize(
    ("method", "suffix"), [("post", "scim-secret"), ("delete", "scim-secret/previous"), ("get", "scim-requests")]
)
def test_the_routes_need_an_admin_and_a_directory(
    admin_client: Client, root: str, directory_a: Directory, method: str, suffix: str
) -> None:
    old = directory_a.scim_secret
    for client, directory_id, expected in (
        (Client(), directory_a.id, 401),
        (Client(HTTP_AUTHORIZATION="Bearer test-env-api-key"), directory_a.id, 401),  # another surface's key
        (admin_client, uuid.uuid4(), 404),
    ):
        response = getattr(client, method)(f"{BASE}/{directory_id}/{suffix}")
        assert response.status_code == expected and response.json()["error"]["code"] == expected
    assert Directory.objects.get(pk=directory_a.pk).scim_secret == old
