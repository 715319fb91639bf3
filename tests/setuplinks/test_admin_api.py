"""Setup links on the admin API (contract §3.1, §6): the same as the REST routes, audited with the admin."""

from __future__ import annotations

import pytest
from django.test import Client

from audit.models import AuditEntry
from directories.models import Directory
from setuplinks.models import SetupLink
from tests.adminauth.conftest import AdminSession
from tests.setuplinks.conftest import make_link

pytestmark = pytest.mark.django_db
BASE = "/auditlog/admin/v1/directories"


def test_an_admin_creates_lists_and_revokes_a_link(admin_session: AdminSession, directory_a: Directory) -> None:
    client = admin_session.client()
    created = client.post(
        f"{BASE}/{directory_a.id}/setup-links", {"expires_in": 3600, "allow_mapping": True}, "application/json"
    )
    assert created.status_code == 201, created.content
    data = created.json()["data"]
    assert data["url"].startswith("http://testserver/setup/") and data["status"] == "active"
    token = data["url"].rsplit("/", 1)[1]
    assert Client().get(f"/setup/{token}").status_code == 200
    listed = client.get(f"{BASE}/{directory_a.id}/setup-links").json()["data"]
    assert [d["id"] for d in listed] == [data["id"]] and "url" not in listed[0]
    assert listed[0]["created_by"] == "ops@example.com" and listed[0]["opened_count"] == 1
    assert token not in str(listed)
    revoked = client.delete(f"{BASE}/{directory_a.id}/setup-links/{data['id']}")
    assert revoked.status_code == 204
    assert Client().get(f"/setup/{token}").status_code == 404
    entries = AuditEntry.objects.filter(action__in=["setup_link.created", "setup_link.revoked"]).order_by("id")
    assert [(e.action, e.actor_email, e.details["via"]) for e in entries] == [
        ("setup_link.created", "ops@example.com", "admin-api"),
        ("setup_link.revoked", "ops@example.com", "admin-api"),
    ]
    # The audit trail finds them by directory and by action, as every other entry.
    trail = client.get("/auditlog/admin/v1/audit", {"directory": str(directory_a.id), "action": "setup_link.revoked"})
    assert [e["target"]["id"] for e in trail.json()["data"]] == [data["id"]]


def test_the_admin_api_refuses_bad_input_like_the_rest_api(admin_client: Client, directory_a: Directory) -> None:
    for body in ({"expires_in": 60}, {"return_url": "ftp://x.example"}, {"nope": 1}):
        response = admin_client.post(f"{BASE}/{directory_a.id}/setup-links", body, "application/json")
        assert response.status_code == 400 and response.json()["data"] is None
    directory_a.deactivated = True
    directory_a.save()
    assert admin_client.post(f"{BASE}/{directory_a.id}/setup-links", {}, "application/json").status_code == 409
    assert not SetupLink.objects.exists()


@pytest.mark.parametrize(("method", "path"), [("get", ""), ("post", ""), ("delete", "/{link}")])
def test_every_admin_route_refuses_a_caller_without_admin_credentials(
    root: str, directory_a: Directory, method: str, path: str
) -> None:
    link, token = make_link(directory_a)
    url = f"{BASE}/{directory_a.id}/setup-links" + path.format(link=link.id)
    for client in (Client(), Client(HTTP_AUTHORIZATION="Bearer test-env-api-key")):
        response = getattr(client, method)(url)
        assert response.status_code == 401 and response.json()["data"] is None
    link.refresh_from_db()
    assert link.revoked_at is None and SetupLink.objects.count() == 1


def test_another_directorys_link_is_a_404_on_the_admin_api(
    admin_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    theirs, _token = make_link(directory_b)
    assert admin_client.delete(f"{BASE}/{directory_a.id}/setup-links/{theirs.id}").status_code == 404
    assert admin_client.get(f"{BASE}/{directory_a.id}/setup-links").json()["data"] == []
    assert admin_client.get(f"{BASE}/not-a-directory/setup-links").status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None


def test_the_audit_trail_finds_what_a_link_did_by_its_actor(admin_client: Client, directory_a: Directory) -> None:
    link, token = make_link(directory_a)
    other, other_token = make_link(directory_a)
    assert Client().get(f"/setup/{token}").status_code == 200
    assert Client().get(f"/setup/{other_token}").status_code == 200
    found = admin_client.get("/auditlog/admin/v1/audit", {"actor": f"setup-link:{link.id}"}).json()["data"]
    assert [(e["action"], e["details"]["actor"]) for e in found] == [("setup_link.opened", f"setup-link:{link.id}")]
    assert found[0]["actor"] == {"id": None, "email": None}
