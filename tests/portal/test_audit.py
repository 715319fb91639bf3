"""The audit trail page."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from adminauth.models import AdminUser
from audit.actors import Actor
from audit.models import AuditEntry
from directories.models import Directory
from directories.services import directory_update

pytestmark = pytest.mark.django_db


def _portal(admin: AdminUser, client_ip: str | None = None) -> Actor:
    return Actor(name=admin.email, via="portal", admin=admin, client_ip=client_ip)


def test_audit_lists_entries_newest_first_with_directory_names(
    portal_client: Client, admin_user: AdminUser, directory_a: Directory
) -> None:
    directory_update(directory=directory_a, data={"name": "Renamed"}, actor=_portal(admin_user, "192.0.2.1"))
    # An entry of no one, as the trail kept before every entry named its actor: shown as the system's.
    AuditEntry.objects.create(action="directory.deleted", directory_id=uuid.UUID(int=1))
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
    directory_update(directory=directory_a, data={"name": "A2"}, actor=_portal(admin_user))
    directory_update(directory=directory_b, data={"deactivated": True}, actor=_portal(other))

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
