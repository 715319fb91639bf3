"""Every directory service leaves exactly one audit entry of the Actor it is handed, in its own transaction,
and none holds a secret (directories.services.auditing)."""

from __future__ import annotations

import json

import pytest

from adminapi.rendering import audit_data
from adminauth.models import AdminUser
from audit.actors import Actor
from audit.models import AuditEntry
from core.errors import ValidationFailed
from directories.models import Directory
from directories.services import (
    directory_create,
    directory_delete,
    directory_previous_scim_secret_revoke,
    directory_scim_oauth_secret_rotate,
    directory_scim_secret_rotate,
    directory_update,
    directory_webhook_secret_rotate,
)

pytestmark = pytest.mark.django_db

IP = "203.0.113.7"


@pytest.fixture
def admin() -> AdminUser:
    return AdminUser.objects.create_user("ops@example.com")


@pytest.fixture
def actor(admin: AdminUser) -> Actor:
    return Actor(name=admin.email, via="admin-api", admin=admin, client_ip=IP)


@pytest.fixture
def hooked(settings, actor: Actor) -> Directory:  # noqa: ANN001
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    return directory_create(
        actor=actor, data={"tenant": "acme", "product": "crm", "webhook_url": "https://hooks.example.com/x"}
    )


def _only_entry() -> dict:
    entries = list(AuditEntry.objects.all())
    assert len(entries) == 1, [e.action for e in entries]
    return audit_data(entries[0])


def _assert_no_secret(entry: dict, *secrets: str) -> None:
    text = json.dumps(entry)
    for secret in secrets:
        assert secret and secret not in text


def _about(directory: Directory) -> dict:
    """What every entry of a directory's change says of the actor and the directory."""
    return {
        "via": "admin-api",
        "actor": "ops@example.com",
        "name": directory.name,
        "tenant": directory.tenant,
        "product": directory.product,
    }


def test_create_leaves_one_entry_without_secrets(admin: AdminUser, hooked: Directory) -> None:
    entry = _only_entry()
    assert entry["action"] == "directory.created"
    assert entry["actor"] == {"id": str(admin.id), "email": "ops@example.com"}
    assert entry["target"] == {"type": "directory", "id": str(hooked.id)}
    assert entry["directoryId"] == str(hooked.id)
    assert entry["clientIp"] == IP
    assert entry["details"] == {**_about(hooked), "type": "generic-scim-v2", "webhook": True}
    _assert_no_secret(entry, hooked.scim_secret, hooked.webhook_secret)


def test_create_with_bad_data_records_nothing(actor: Actor) -> None:
    with pytest.raises(ValidationFailed):
        directory_create(actor=actor, data={"tenant": "a:b", "product": "crm"})
    assert AuditEntry.objects.count() == 0
    assert Directory.objects.count() == 0


def test_update_names_changed_fields_and_never_the_new_secret(actor: Actor, hooked: Directory) -> None:
    AuditEntry.objects.all().delete()
    new_secret = "a-brand-new-webhook-secret-value-1234567890"
    directory_update(actor=actor, directory=hooked, data={"name": "Renamed", "webhook_secret": new_secret})
    entry = _only_entry()
    assert entry["action"] == "directory.updated"
    assert sorted(entry["details"]["fields"]) == ["name", "webhook_secret"]
    assert entry["details"]["name"] == "Renamed"
    _assert_no_secret(entry, new_secret, hooked.scim_secret)
    hooked.refresh_from_db()
    assert hooked.webhook_secret == new_secret


def test_update_without_change_records_nothing(actor: Actor, hooked: Directory) -> None:
    AuditEntry.objects.all().delete()
    directory_update(actor=actor, directory=hooked, data={"name": hooked.name})
    assert AuditEntry.objects.count() == 0


def test_a_refused_update_records_nothing(actor: Actor, hooked: Directory) -> None:
    AuditEntry.objects.all().delete()
    with pytest.raises(ValidationFailed):
        directory_update(actor=actor, directory=hooked, data={"name": ""})
    assert AuditEntry.objects.count() == 0


def test_toggling_webhook_logging_is_its_own_action(actor: Actor, hooked: Directory) -> None:
    AuditEntry.objects.all().delete()
    directory_update(actor=actor, directory=hooked, data={"log_webhook_events": True})
    entry = _only_entry()
    assert entry["action"] == "directory.webhook_logging_toggled"
    assert entry["details"] == {**_about(hooked), "fields": ["log_webhook_events"], "log_webhook_events": True}


def test_deactivation_and_activation_are_named(actor: Actor, hooked: Directory) -> None:
    AuditEntry.objects.all().delete()
    directory_update(actor=actor, directory=hooked, data={"deactivated": True})
    directory_update(actor=actor, directory=hooked, data={"deactivated": False})
    newest_first = AuditEntry.objects.order_by("-created_at", "-id").values_list("action", flat=True)
    assert list(newest_first) == ["directory.activated", "directory.deactivated"]


def test_mixed_update_is_one_updated_entry_with_flag_values(actor: Actor, hooked: Directory) -> None:
    AuditEntry.objects.all().delete()
    directory_update(actor=actor, directory=hooked, data={"log_webhook_events": True, "name": "Other"})
    entry = _only_entry()
    assert entry["action"] == "directory.updated"
    assert entry["details"]["log_webhook_events"] is True


def test_scim_secret_rotation_records_one_entry_without_either_secret(actor: Actor, hooked: Directory) -> None:
    old = hooked.scim_secret
    AuditEntry.objects.all().delete()
    rotated = directory_scim_secret_rotate(actor=actor, directory=hooked, grace_seconds=600)
    assert rotated.scim_secret != old
    entry = _only_entry()
    assert entry["action"] == "directory.scim_secret_rotated"
    assert entry["details"] == {**_about(hooked), "grace_seconds": 600}
    _assert_no_secret(entry, old, rotated.scim_secret)


def test_stopping_the_previous_secret_is_recorded_only_when_there_was_one(actor: Actor, hooked: Directory) -> None:
    AuditEntry.objects.all().delete()
    assert directory_previous_scim_secret_revoke(actor=actor, directory=hooked)[1] is False
    assert AuditEntry.objects.count() == 0
    rotated = directory_scim_secret_rotate(actor=actor, directory=hooked, grace_seconds=600)
    AuditEntry.objects.all().delete()
    assert directory_previous_scim_secret_revoke(actor=actor, directory=rotated)[1] is True
    assert _only_entry()["action"] == "directory.previous_scim_secret_revoked"


def test_oauth_client_secret_rotation_says_whether_it_was_the_first(actor: Actor, hooked: Directory) -> None:
    AuditEntry.objects.all().delete()
    directory, secret, first = directory_scim_oauth_secret_rotate(actor=actor, directory=hooked)
    entry = _only_entry()
    assert first is True and entry["action"] == "directory.scim_oauth_secret_rotated"
    assert entry["details"] == {**_about(directory), "first": True}
    _assert_no_secret(entry, secret)


def test_webhook_secret_rotation_records_one_entry_without_either_secret(actor: Actor, hooked: Directory) -> None:
    old = hooked.webhook_secret
    AuditEntry.objects.all().delete()
    rotated = directory_webhook_secret_rotate(actor=actor, directory=hooked)
    assert rotated.webhook_secret != old
    entry = _only_entry()
    assert entry["action"] == "directory.webhook_secret_rotated"
    _assert_no_secret(entry, old, rotated.webhook_secret)


def test_delete_records_one_entry_that_outlives_the_directory(actor: Actor, hooked: Directory) -> None:
    directory_id = hooked.id
    about = _about(hooked)
    AuditEntry.objects.all().delete()
    directory_delete(actor=actor, directory=hooked)
    assert not Directory.objects.filter(pk=directory_id).exists()
    entry = _only_entry()
    assert entry["action"] == "directory.deleted"
    assert entry["directoryId"] == str(directory_id) and entry["target"]["id"] == str(directory_id)
    assert entry["details"] == about
