"""The audit trail page."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from adminauth.models import AdminUser
from adminauth.services import admin_directory_update, audit_record
from directories.models import Directory

pytestmark = pytest.mark.django_db


def test_audit_lists_entries_newest_first_with_directory_names(
    portal_client: Client, admin_user: AdminUser, directory_a: Directory
) -> None:
    admin_directory_update(actor=admin_user, client_ip="192.0.2.1", directory=directory_a, data={"name": "Renamed"})
    audit_record(actor=None, action="directory.deleted", directory_id=uuid.UUID(int=1))
    response = portal_client.get("/portal/audit")
    html = response.content.decode()
    actions = [x["entry"].action for x in response.context["entries"]]
    assert actions == ["directory.deleted", "directory.updated"]
    assert "Renamed" in html and "192.0.2.1" in html and "ops@example.com" in html
    assert "(deleted)" in html and "(system)" in html


def test_audit_filters_by_action_admin_and_directory(
    portal_client: Client, admin_user: AdminUser, directory_a: Directory, directory_b: Directory
) -> None:
    other = AdminUser.objects.create_user("other@example.com", "pw")
    admin_directory_update(actor=admin_user, client_ip=None, directory=directory_a, data={"name": "A2"})
    admin_directory_update(actor=other, client_ip=None, directory=directory_b, data={"deactivated": True})

    def actions(**params: str) -> list[str]:
        return [x["entry"].action for x in portal_client.get("/portal/audit", params).context["entries"]]

    assert actions(action="directory.deactivated") == ["directory.deactivated"]
    assert actions(actor="OTHER@example.com") == ["directory.deactivated"]
    assert actions(directory=str(directory_a.id)) == ["directory.updated"]
    assert actions(directory="not-a-uuid") == []
    html = portal_client.get("/portal/audit", {"action": "nothing.like.this"}).content.decode()
    assert "No entry matches these filters." in html
    # The action filter offers the actions that exist.
    assert '<option value="directory.updated">' in portal_client.get("/portal/audit").content.decode()
