"""Every audited admin action leaves exactly one audit entry, and none holds a secret."""

from __future__ import annotations

import json

import pytest

from adminapi.rendering import audit_data
from adminauth.models import AdminUser, AuditEntry
from adminauth.selectors import audit_list
from adminauth.services import (
    admin_directory_create,
    admin_directory_delete,
    admin_directory_scim_secret_rotate,
    admin_directory_update,
    admin_directory_webhook_secret_rotate,
    audit_record,
)
from core.errors import ValidationFailed
from directories.models import Directory

pytestmark = pytest.mark.django_db

IP = "203.0.113.7"


@pytest.fixture
def admin() -> AdminUser:
    return AdminUser.objects.create_user("ops@example.com")


@pytest.fixture
def hooked(settings, admin) -> Directory:  # noqa: ANN001
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    return admin_directory_create(
        actor=admin,
        client_ip=IP,
        data={"tenant": "acme", "product": "crm", "webhook_url": "https://hooks.example.com/x"},
    )


def _only_entry() -> dict:
    entries = list(AuditEntry.objects.all())
    assert len(entries) == 1, [e.action for e in entries]
    return audit_data(entries[0])


def _assert_no_secret(entry: dict, *secrets: str) -> None:
    text = json.dumps(entry)
    for secret in secrets:
        assert secret and secret not in text


def test_create_leaves_one_entry_without_secrets(admin: AdminUser, hooked: Directory) -> None:
    entry = _only_entry()
    assert entry["action"] == "directory.created"
    assert entry["actor"] == {"id": str(admin.id), "email": "ops@example.com"}
    assert entry["target"] == {"type": "directory", "id": str(hooked.id)}
    assert entry["directoryId"] == str(hooked.id)
    assert entry["clientIp"] == IP
    _assert_no_secret(entry, hooked.scim_secret, hooked.webhook_secret)


def test_create_with_bad_data_records_nothing(admin: AdminUser) -> None:
    with pytest.raises(ValidationFailed):
        admin_directory_create(actor=admin, client_ip=IP, data={"tenant": "a:b", "product": "crm"})
    assert AuditEntry.objects.count() == 0
    assert Directory.objects.count() == 0


def test_update_names_changed_fields_and_never_the_new_secret(admin: AdminUser, hooked: Directory) -> None:
    AuditEntry.objects.all().delete()
    new_secret = "a-brand-new-webhook-secret-value-1234567890"
    admin_directory_update(
        actor=admin, client_ip=IP, directory=hooked, data={"name": "Renamed", "webhook_secret": new_secret}
    )
    entry = _only_entry()
    assert entry["action"] == "directory.updated"
    assert sorted(entry["details"]["fields"]) == ["name", "webhook_secret"]
    _assert_no_secret(entry, new_secret, hooked.scim_secret)
    hooked.refresh_from_db()
    assert hooked.webhook_secret == new_secret


def test_update_without_change_records_nothing(admin: AdminUser, hooked: Directory) -> None:
    AuditEntry.objects.all().delete()
    admin_directory_update(actor=admin, client_ip=IP, directory=hooked, data={"name": hooked.name})
    assert AuditEntry.objects.count() == 0


def test_toggling_webhook_logging_is_its_own_action(admin: AdminUser, hooked: Directory) -> None:
    AuditEntry.objects.all().delete()
    admin_directory_update(actor=admin, client_ip=IP, directory=hooked, data={"log_webhook_events": True})
    entry = _only_entry()
    assert entry["action"] == "directory.webhook_logging_toggled"
    assert entry["details"] == {"fields": ["log_webhook_events"], "log_webhook_events": True}


def test_deactivation_and_activation_are_named(admin: AdminUser, hooked: Directory) -> None:
    AuditEntry.objects.all().delete()
    admin_directory_update(actor=admin, client_ip=IP, directory=hooked, data={"deactivated": True})
    admin_directory_update(actor=admin, client_ip=IP, directory=hooked, data={"deactivated": False})
    assert [e.action for e in audit_list()] == ["directory.activated", "directory.deactivated"]


def test_mixed_update_is_one_updated_entry_with_flag_values(admin: AdminUser, hooked: Directory) -> None:
    AuditEntry.objects.all().delete()
    admin_directory_update(
        actor=admin, client_ip=IP, directory=hooked, data={"log_webhook_events": True, "name": "Other"}
    )
    entry = _only_entry()
    assert entry["action"] == "directory.updated"
    assert entry["details"]["log_webhook_events"] is True


def test_scim_secret_rotation_records_one_entry_without_either_secret(admin: AdminUser, hooked: Directory) -> None:
    old = hooked.scim_secret
    AuditEntry.objects.all().delete()
    rotated = admin_directory_scim_secret_rotate(actor=admin, client_ip=IP, directory=hooked)
    assert rotated.scim_secret != old
    entry = _only_entry()
    assert entry["action"] == "directory.scim_secret_rotated"
    _assert_no_secret(entry, old, rotated.scim_secret)


def test_webhook_secret_rotation_records_one_entry_without_either_secret(admin: AdminUser, hooked: Directory) -> None:
    old = hooked.webhook_secret
    AuditEntry.objects.all().delete()
    rotated = admin_directory_webhook_secret_rotate(actor=admin, client_ip=IP, directory=hooked)
    assert rotated.webhook_secret != old
    entry = _only_entry()
    assert entry["action"] == "directory.webhook_secret_rotated"
    _assert_no_secret(entry, old, rotated.webhook_secret)


def test_delete_records_one_entry_that_outlives_the_directory(admin: AdminUser, hooked: Directory) -> None:
    directory_id = hooked.id
    AuditEntry.objects.all().delete()
    admin_directory_delete(actor=admin, client_ip=IP, directory=hooked)
    assert not Directory.objects.filter(pk=directory_id).exists()
    entry = _only_entry()
    assert entry["action"] == "directory.deleted"
    assert entry["directoryId"] == str(directory_id)


def test_audit_record_drops_secret_looking_details(admin: AdminUser) -> None:
    audit_record(actor=admin, action="x", details={"webhook_secret": "s3cr3t", "apiKey": "k", "fields": ["a"]})
    assert _only_entry()["details"] == {"fields": ["a"]}


def test_audit_list_filters_by_actor_action_and_directory(admin: AdminUser, hooked: Directory) -> None:
    other = AdminUser.objects.create_user("second@example.com")
    admin_directory_scim_secret_rotate(actor=other, client_ip=None, directory=hooked)
    assert audit_list(actor=other).count() == 1
    assert audit_list(actor=str(admin.id)).count() == 1
    assert audit_list(actor="OPS@example.com").count() == 1
    assert audit_list(action="directory.scim_secret_rotated").get().actor_id == other.id
    assert audit_list(directory_id=hooked.id).count() == 2
    assert audit_list(directory_id="not-a-uuid").count() == 0
    newest_first = [e.action for e in audit_list()]
    assert newest_first == ["directory.scim_secret_rotated", "directory.created"]
