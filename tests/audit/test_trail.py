"""The audit trail itself: what `audit_record` keeps of an Actor and of the details it is handed, and how
`audit_list` finds entries (the admin API's and the portal's filters)."""

from __future__ import annotations

import uuid

import pytest

from adminauth.models import AdminUser
from audit.actors import Actor, command_actor
from audit.models import AuditEntry
from audit.selectors import audit_actions, audit_list
from audit.services import audit_record

pytestmark = pytest.mark.django_db

DIRECTORY = uuid.UUID(int=7)


@pytest.fixture
def admin() -> AdminUser:
    return AdminUser.objects.create_user("ops@example.com")


def _admin_actor(admin: AdminUser) -> Actor:
    return Actor(name=admin.email, via="portal", admin=admin, client_ip="203.0.113.7")


def test_an_admin_is_the_entry_s_actor_and_its_surface_and_name_are_in_the_details(admin: AdminUser) -> None:
    entry = audit_record(actor=_admin_actor(admin), action="x", details={"fields": ["a"]})
    assert (entry.actor, entry.actor_email, entry.client_ip) == (admin, "ops@example.com", "203.0.113.7")
    assert entry.details == {"via": "portal", "actor": "ops@example.com", "fields": ["a"]}


def test_an_actor_without_an_admin_is_named_in_the_details_with_what_it_says_of_itself() -> None:
    actor = Actor(name="api key crm (rk_abc…)", via="rest-api", details={"credential": "api key crm (rk_abc…)"})
    entry = audit_record(actor=actor, action="x")
    assert entry.actor is None and entry.actor_email == "" and entry.client_ip is None
    assert entry.details == {"via": "rest-api", "actor": "api key crm (rk_abc…)", "credential": "api key crm (rk_abc…)"}


def test_secret_looking_details_are_dropped_but_switches_are_kept(admin: AdminUser) -> None:
    details = {
        "webhook_secret": "s3cr3t",
        "apiKey": "k",
        "password": "p",
        "fields": ["a"],
        "static_secret_enabled": False,
    }
    entry = audit_record(actor=_admin_actor(admin), action="x", details=details)
    assert entry.details == {
        "via": "portal",
        "actor": "ops@example.com",
        "fields": ["a"],
        "static_secret_enabled": False,
    }


def test_the_command_actor_names_the_operating_system_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("getpass.getuser", lambda: "deploy")
    assert command_actor() == Actor(name="manage.py (deploy)", via="manage.py")


def test_audit_list_filters_by_actor_action_and_directory(admin: AdminUser) -> None:
    other = AdminUser.objects.create_user("second@example.com")
    audit_record(actor=_admin_actor(admin), action="directory.created", directory_id=DIRECTORY)
    audit_record(actor=_admin_actor(other), action="directory.scim_secret_rotated", directory_id=DIRECTORY)
    audit_record(actor=Actor(name="setup-link:1", via="setup-link"), action="setup_link.opened")
    assert audit_list(actor=other).count() == 1
    assert audit_list(actor=str(admin.id)).count() == 1
    assert audit_list(actor="OPS@example.com").count() == 1
    assert audit_list(actor="setup-link:1").get().action == "setup_link.opened"
    assert audit_list(action="directory.scim_secret_rotated").get().actor_id == other.id
    assert audit_list(directory_id=DIRECTORY).count() == 2
    assert audit_list(directory_id="not-a-uuid").count() == 0
    newest_first = [e.action for e in audit_list()]
    assert newest_first == ["setup_link.opened", "directory.scim_secret_rotated", "directory.created"]
    assert audit_actions() == ["directory.created", "directory.scim_secret_rotated", "setup_link.opened"]
    assert AuditEntry.objects.count() == 3
