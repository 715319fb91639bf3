"""The deprovision guard's held changes on the admin side (contract §4.2): the admin API's routes, the
`deprovision_guard` setting through an admin PATCH, and `manage.py directories held`, each resolution audited
with its count (directories.guard.services.held_changes_resolve)."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from audit.models import AuditEntry
from directories.models import Directory, DirectoryUser, HeldChange
from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.adminauth.conftest import AdminSession
from tests.scim.conftest import Scim
from tests.scim.guardkit import guard_set, users_make

pytestmark = pytest.mark.django_db

BASE = "/auditlog/admin/v1"


def _post(client: Client, path: str, body: Any = None) -> Any:
    return client.post(BASE + path, json.dumps(body if body is not None else {}), content_type="application/json")


@pytest.fixture
def tripped() -> tuple[Directory, list[str]]:
    """A directory whose guard holds three deletions (max_users 1: the first one went through)."""
    directory = guard_set(
        directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"}), max_users=1, max_percent=1
    )
    scim = Scim(directory)
    ids = users_make(scim, 6)
    for user_id in ids[:4]:
        assert scim.delete(f"/Users/{user_id}")[0] == 204
    directory.refresh_from_db()
    return directory, ids[1:4]


# --- the admin API -----------------------------------------------------------------------------------


def test_the_admin_api_lists_the_held_changes(admin_client: Client, tripped: tuple[Directory, list[str]]) -> None:
    directory, held = tripped
    answer = admin_client.get(f"{BASE}/directories/{directory.id}/held-changes?pageLimit=2")
    assert answer.status_code == 200
    assert [item["user_id"] for item in answer.json()["data"]] == held[:2]
    detail = admin_client.get(f"{BASE}/directories/{directory.id}").json()["data"]
    assert detail["guard"]["state"] == "tripped" and detail["guard"]["held"] == 3


def test_the_admin_api_approves_and_audits_with_the_admin(
    admin_client: Client, admin_session: AdminSession, tripped: tuple[Directory, list[str]]
) -> None:
    directory, held = tripped
    change = HeldChange.objects.get(user_id=held[1])
    answer = _post(admin_client, f"/directories/{directory.id}/held-changes/approve", {"ids": [str(change.id)]})
    assert answer.status_code == 200 and answer.json() == {"data": {"approved": 1}, "error": None}
    assert not DirectoryUser.objects.filter(pk=held[1]).exists()
    entry = AuditEntry.objects.get(action="directory.held_changes_approved")
    assert str(entry.actor_id) == admin_session.user_id and entry.details["via"] == "admin-api"
    assert entry.details["count"] == 1 and entry.details["asked"] == [str(change.id)]


def test_the_admin_api_discards_all(admin_client: Client, tripped: tuple[Directory, list[str]]) -> None:
    directory, held = tripped
    answer = _post(admin_client, f"/directories/{directory.id}/held-changes/discard")
    assert answer.status_code == 200 and answer.json()["data"] == {"discarded": 3}
    assert DirectoryUser.objects.filter(pk__in=held).count() == 3
    directory.refresh_from_db()
    assert directory.guard_tripped_at is None and directory.guard_armed_at is not None


def test_the_admin_api_refuses_another_directorys_change(
    admin_client: Client, tripped: tuple[Directory, list[str]]
) -> None:
    directory, _held = tripped
    other = guard_set(
        directory_create(actor=TEST_ACTOR, data={"tenant": "globex", "product": "crm"}), max_users=1, max_percent=1
    )
    scim = Scim(other)
    ids = users_make(scim, 3, prefix="g")
    scim.delete(f"/Users/{ids[0]}")
    scim.delete(f"/Users/{ids[1]}")
    foreign = HeldChange.objects.get(directory=other)
    answer = _post(admin_client, f"/directories/{directory.id}/held-changes/discard", {"ids": [str(foreign.id)]})
    assert answer.status_code == 400 and answer.json()["data"] is None
    assert HeldChange.objects.count() == 4


def test_the_admin_api_patches_the_setting(admin_client: Client, tripped: tuple[Directory, list[str]]) -> None:
    directory, _held = tripped
    answer = admin_client.patch(
        f"{BASE}/directories/{directory.id}",
        json.dumps({"deprovision_guard": {"max_users": 50}}),
        content_type="application/json",
    )
    assert answer.status_code == 200 and answer.json()["data"]["deprovision_guard"]["max_users"] == 50
    entry = AuditEntry.objects.get(action="directory.updated")
    assert entry.details["deprovision_guard"]["max_users"] == 50
    refused = admin_client.patch(
        f"{BASE}/directories/{directory.id}",
        json.dumps({"deprovision_guard": {"max_percent": True}}),
        content_type="application/json",
    )
    assert refused.status_code == 400 and "deprovision_guard.max_percent" in refused.json()["error"]["message"]


@pytest.mark.parametrize("suffix", ["", "/approve", "/discard"])
def test_the_admin_routes_refuse_anonymous_callers(
    root: str, tripped: tuple[Directory, list[str]], suffix: str
) -> None:
    directory, _held = tripped
    path = f"/directories/{directory.id}/held-changes{suffix}"
    answer = Client().get(BASE + path) if not suffix else _post(Client(), path)
    assert answer.status_code == 401 and answer.json()["data"] is None
    assert HeldChange.objects.count() == 3


@pytest.mark.parametrize("suffix", ["", "/approve", "/discard"])
def test_the_admin_routes_answer_404_for_an_unknown_directory(admin_client: Client, suffix: str) -> None:
    path = f"/directories/{uuid.uuid4()}/held-changes{suffix}"
    answer = admin_client.get(BASE + path) if not suffix else _post(admin_client, path)
    assert answer.status_code == 404


# --- manage.py directories held ------------------------------------------------------------------------


def _command(*args: str) -> str:
    out = io.StringIO()
    call_command("directories", "held", *args, stdout=out)
    return out.getvalue()


def test_the_command_lists_the_held_changes(tripped: tuple[Directory, list[str]]) -> None:
    directory, held = tripped
    out = _command(str(directory.id))
    assert "Deprovision guard: tripped" in out
    lines = out.splitlines()
    assert lines[1].split()[:4] == ["ID", "HELD", "AT", "USER"]
    assert [line.split()[2] for line in lines[2:]] == [f"user{i}@guard.example" for i in (1, 2, 3)]
    assert all(str(HeldChange.objects.get(user_id=u).id) in out for u in held)


def test_the_command_approves_some_and_audits_the_os_user(tripped: tuple[Directory, list[str]]) -> None:
    directory, held = tripped
    change = HeldChange.objects.get(user_id=held[0])
    out = _command(str(directory.id), "--approve", "--ids", str(change.id))
    assert "Approved 1 held change; the guard is tripped." in out
    assert not DirectoryUser.objects.filter(pk=held[0]).exists()
    entry = AuditEntry.objects.get(action="directory.held_changes_approved")
    assert entry.details["via"] == "manage.py" and entry.details["actor"].startswith("manage.py (")


def test_the_command_discards_all_and_the_guard_re_arms(tripped: tuple[Directory, list[str]]) -> None:
    directory, _held = tripped
    assert "Discarded 3 held changes; the guard is armed." in _command(str(directory.id), "--discard")
    assert "No held changes." in _command(str(directory.id))


def test_the_command_refuses_bad_input_without_doing_anything(tripped: tuple[Directory, list[str]]) -> None:
    directory, _held = tripped
    with pytest.raises(CommandError, match="Not a held change of this directory"):
        _command(str(directory.id), "--approve", "--ids", str(uuid.uuid4()))
    with pytest.raises(CommandError, match="a UUID"):
        _command(str(directory.id), "--discard", "--ids", "nope")
    with pytest.raises(CommandError, match="--ids goes with"):
        _command(str(directory.id), "--ids", str(uuid.uuid4()))
    with pytest.raises(CommandError, match="No directory has the id"):
        _command(str(uuid.uuid4()))
    assert HeldChange.objects.count() == 3
    assert not AuditEntry.objects.filter(action__startswith="directory.held_changes").exists()


def test_directories_show_tells_the_guards_state(tripped: tuple[Directory, list[str]]) -> None:
    directory, _held = tripped
    out = io.StringIO()
    call_command("directories", "show", str(directory.id), stdout=out)
    line = next(text for text in out.getvalue().splitlines() if text.startswith("guard"))
    assert "deprovision guard tripped (limits: 1 users and 1 % in 60 min); 3 held" in line
