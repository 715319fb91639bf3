"""The admin API's side of several OAuth client secrets (contract §4.3): list, add, revoke, audited with the
admin."""

from __future__ import annotations

import pytest
from django.test import Client

from audit.models import AuditEntry
from directories.models import Directory
from tests.scim.conftest import OAuth
from tests.scim.test_oauth_secrets import ADMIN, add, fresh, listed, revoke, scim_status

pytestmark = pytest.mark.django_db


def test_the_admin_api_lists_adds_and_revokes(admin_client: Client, directory_a: Directory) -> None:
    made = add(admin_client, directory_a, {"expires_in_days": 90}, base=ADMIN)
    assert made.status_code == 201, made.content
    data = made.json()["data"]
    assert [e["id"] for e in listed(admin_client, directory_a, base=ADMIN).json()["data"]] == [data["id"]]
    token = OAuth(fresh(directory_a), data["client_secret"]).token()
    assert revoke(admin_client, directory_a, data["id"], base=ADMIN).status_code == 204
    assert scim_status(directory_a, token) == 401
    assert revoke(admin_client, directory_a, data["id"], base=ADMIN).status_code == 404
    entries = AuditEntry.objects.filter(action__startswith="directory.scim_oauth_secret_").order_by("id")
    assert [(e.action, e.details["via"], e.details["actor"]) for e in entries] == [
        ("directory.scim_oauth_secret_added", "admin-api", "ops@example.com"),
        ("directory.scim_oauth_secret_revoked", "admin-api", "ops@example.com"),
    ]
