"""A directory's SCIM rate limit through the admin API and the portal (contract §4.5): set, shown, refused
out of bounds (nothing saved), audited with its new value."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from audit.models import AuditEntry
from directories.models import Directory
from tests.portal.conftest import ADMIN_EMAIL, ADMIN_PASSWORD

pytestmark = pytest.mark.django_db

BASE = "/auditlog/admin/v1"


def patch(client: Client, directory: Directory, body: object) -> tuple[int, dict]:
    response = client.patch(f"{BASE}/directories/{directory.id}", json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def test_the_admin_api_sets_shows_and_audits_the_limit(admin_client: Client, directory_a: Directory) -> None:
    status, body = patch(admin_client, directory_a, {"scim_rate_limit": 12000})
    assert status == 200 and body["data"]["scim_rate_limit"] == 12000
    entry = AuditEntry.objects.filter(action="directory.updated").latest("id")
    assert entry.details["fields"] == ["scim_rate_limit"] and entry.details["scim_rate_limit"] == 12000
    assert admin_client.get(f"{BASE}/directories/{directory_a.id}").json()["data"]["scim_rate_limit"] == 12000
    status, body = patch(admin_client, directory_a, {"scim_rate_limit": None})
    assert status == 200 and body["data"]["scim_rate_limit"] is None


@pytest.mark.parametrize("value", [1000, 700_000, "2000", False, 2000.5])
def test_the_admin_api_refuses_a_limit_out_of_bounds(admin_client: Client, directory_a: Directory, value) -> None:  # noqa: ANN001
    status, body = patch(admin_client, directory_a, {"scim_rate_limit": value})
    assert status == 400 and "scim_rate_limit" in body["error"]["message"]
    directory_a.refresh_from_db()
    assert directory_a.scim_rate_limit is None


def test_the_portal_sets_the_limit_and_empty_means_the_default(directory_a: Directory, settings) -> None:  # noqa: ANN001
    from adminauth.models import AdminUser

    settings.SCIM_RATE_LIMIT = 4500
    admin = AdminUser.objects.create_user(ADMIN_EMAIL, ADMIN_PASSWORD)
    client = Client()
    client.force_login(admin)
    url = f"/portal/directories/{directory_a.id}/edit"
    page = client.get(url).content.decode()
    assert 'name="scim_rate_limit"' in page and "4500 per minute" in page
    form = {"name": directory_a.name, "webhook_url": "", "scim_rate_limit": "30000"}
    assert client.post(url, form).status_code == 302
    directory_a.refresh_from_db()
    assert directory_a.scim_rate_limit == 30000
    refused = client.post(url, {**form, "scim_rate_limit": "10"})
    assert refused.status_code == 400 and "1500 to 600000" in refused.content.decode()
    assert client.post(url, {**form, "scim_rate_limit": ""}).status_code == 302
    directory_a.refresh_from_db()
    assert directory_a.scim_rate_limit is None
