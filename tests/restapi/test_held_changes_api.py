"""The REST API of the deprovision guard (contract §4.2): `deprovision_guard` in a directory PATCH, `guard` on
the Directory, `GET …/held-changes`, `POST …/held-changes/approve` and `…/discard`, each audited."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEntry
from directories.models import Directory, DirectoryUser, HeldChange
from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.scim.conftest import Scim
from tests.scim.guardkit import guard_set, users_make

pytestmark = pytest.mark.django_db

PREFIXES = ["/api/v1/directory-sync", "/api/v1/dsync"]


def _patch(client: Client, directory: Directory, body: Any) -> Any:
    return client.patch(f"/api/v1/directory-sync/{directory.id}", json.dumps(body), content_type="application/json")


def _post(client: Client, path: str, body: Any = None) -> Any:
    raw = b"" if body is None else json.dumps(body).encode()
    return client.post(path, raw, content_type="application/json")


def _trip(directory: Directory, holds: int = 3) -> list[str]:
    """Ten users: the first deletion goes through (max_users 1), the next `holds` are held; their ids."""
    scim = Scim(guard_set(directory, max_users=1, max_percent=1))
    ids = users_make(scim, 10, prefix=f"{directory.tenant}-")
    for user_id in ids[: holds + 1]:
        assert scim.delete(f"/Users/{user_id}")[0] == 204
    directory.refresh_from_db()
    return ids[1 : holds + 1]


# --- the setting -----------------------------------------------------------------------------------


def test_a_new_directory_has_the_default_setting_and_an_armed_guard(api_client: Client) -> None:
    answer = _post(api_client, "/api/v1/directory-sync", {"tenant": "t", "product": "p"})
    data = answer.json()["data"]
    assert data["deprovision_guard"] == {"enabled": True, "max_users": 10, "max_percent": 20, "window_minutes": 60}
    assert data["guard"] == {"state": "armed", "held": 0, "tripped_at": None, "window_deprovisions": 0}


def test_a_partial_setting_is_merged_and_audited(api_client: Client, directory_a: Directory) -> None:
    answer = _patch(api_client, directory_a, {"deprovision_guard": {"max_percent": 100}})
    assert answer.status_code == 200
    assert answer.json()["data"]["deprovision_guard"] == {
        "enabled": True,
        "max_users": 10,
        "max_percent": 100,
        "window_minutes": 60,
    }
    answer = _patch(api_client, directory_a, {"deprovision_guard": {"enabled": False, "window_minutes": 10080}})
    data = answer.json()["data"]
    assert data["deprovision_guard"]["max_percent"] == 100 and data["deprovision_guard"]["enabled"] is False
    assert data["guard"]["state"] == "off"
    directory_a.refresh_from_db()
    assert directory_a.deprovision_guard["window_minutes"] == 10080
    entry = AuditEntry.objects.filter(action="directory.updated").latest("id")
    assert entry.details["fields"] == ["deprovision_guard"]


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (None, "deprovision_guard"),
        ([], "deprovision_guard"),
        ({"max_users": 0}, "deprovision_guard.max_users"),
        ({"max_users": True}, "deprovision_guard.max_users"),
        ({"max_users": 10.0}, "deprovision_guard.max_users"),
        ({"max_users": "10"}, "deprovision_guard.max_users"),
        ({"max_percent": 0}, "deprovision_guard.max_percent"),
        ({"max_percent": 101}, "deprovision_guard.max_percent"),
        ({"max_percent": False}, "deprovision_guard.max_percent"),
        ({"window_minutes": 0}, "deprovision_guard.window_minutes"),
        ({"window_minutes": 10081}, "deprovision_guard.window_minutes"),
        ({"enabled": 1}, "deprovision_guard.enabled"),
        ({"enabled": "true"}, "deprovision_guard.enabled"),
        ({"maxUsers": 5}, "deprovision_guard.maxUsers"),
    ],
)
def test_a_bad_setting_is_a_400_naming_the_field_and_nothing_changes(
    api_client: Client, directory_a: Directory, value: Any, field: str
) -> None:
    answer = _patch(api_client, directory_a, {"deprovision_guard": value, "name": "Renamed"})
    assert answer.status_code == 400
    assert answer.json() == {"data": None, "error": {"message": answer.json()["error"]["message"], "code": 400}}
    assert field in answer.json()["error"]["message"]
    directory_a.refresh_from_db()
    assert directory_a.name == "Acme Okta" and directory_a.deprovision_guard["max_users"] == 10


# --- the held changes --------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", PREFIXES)
def test_held_changes_are_listed_in_order_and_paged(api_client: Client, directory_a: Directory, prefix: str) -> None:
    held = _trip(directory_a)
    answer = api_client.get(f"{prefix}/{directory_a.id}/held-changes")
    assert answer.status_code == 200
    items = answer.json()["data"]
    assert [item["user_id"] for item in items] == held
    assert set(items[0]) == {"id", "held_at", "user_id", "user_name", "change", "scim_request_id"}
    assert items[0]["change"] == "delete" and items[0]["user_name"] == "acme-1@guard.example"
    assert items[0]["held_at"].endswith("Z") and items[0]["scim_request_id"]
    paged = api_client.get(f"{prefix}/{directory_a.id}/held-changes", {"pageOffset": 1, "pageLimit": 1})
    assert [item["user_id"] for item in paged.json()["data"]] == held[1:2]
    detail = api_client.get(f"{prefix}/{directory_a.id}").json()["data"]["guard"]
    assert detail["state"] == "tripped" and detail["held"] == 3


def test_approving_all_applies_them_and_audits_the_count(api_client: Client, directory_a: Directory) -> None:
    held = _trip(directory_a)
    answer = _post(api_client, f"/api/v1/directory-sync/{directory_a.id}/held-changes/approve", {})
    assert answer.status_code == 200 and answer.json() == {"data": {"approved": 3}, "error": None}
    assert not DirectoryUser.objects.filter(pk__in=held).exists()
    entry = AuditEntry.objects.get(action="directory.held_changes_approved")
    assert entry.details["count"] == 3 and entry.details["asked"] == "all" and entry.details["via"] == "rest-api"
    assert entry.details["actor"] == "API_KEYS" and entry.actor is None  # the env key: it has no name
    assert str(entry.directory_id) == str(directory_a.id)


def test_discarding_some_drops_those_and_keeps_the_rest(api_client: Client, directory_a: Directory) -> None:
    held = _trip(directory_a)
    first = HeldChange.objects.get(user_id=held[0])
    answer = _post(api_client, f"/api/v1/dsync/{directory_a.id}/held-changes/discard", {"ids": [str(first.id)]})
    assert answer.status_code == 200 and answer.json()["data"] == {"discarded": 1}
    assert DirectoryUser.objects.filter(pk__in=held).count() == 3
    assert list(HeldChange.objects.values_list("user_id", flat=True)) == [uuid.UUID(u) for u in held[1:]]
    assert AuditEntry.objects.get(action="directory.held_changes_discarded").details["count"] == 1


@pytest.mark.parametrize(
    "body",
    [
        {"ids": []},
        {"ids": "all"},
        {"ids": [1]},
        {"ids": ["not-a-uuid"]},
        {"ids": [str(uuid.uuid4())]},
        {"id": []},
        [],
    ],
)
def test_a_bad_resolution_is_a_400_and_nothing_is_done(api_client: Client, directory_a: Directory, body: Any) -> None:
    _trip(directory_a)
    answer = _post(api_client, f"/api/v1/directory-sync/{directory_a.id}/held-changes/approve", body)
    assert answer.status_code == 400 and answer.json()["data"] is None
    assert HeldChange.objects.count() == 3
    assert not AuditEntry.objects.filter(action__startswith="directory.held_changes").exists()


def test_another_directorys_held_change_is_refused(
    api_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    _trip(directory_a)
    theirs = _trip(directory_b, holds=1)
    foreign = HeldChange.objects.get(user_id=theirs[0])
    answer = _post(
        api_client, f"/api/v1/directory-sync/{directory_a.id}/held-changes/approve", {"ids": [str(foreign.id)]}
    )
    assert answer.status_code == 400
    listed = api_client.get(f"/api/v1/directory-sync/{directory_a.id}/held-changes").json()["data"]
    assert str(foreign.id) not in {item["id"] for item in listed}
    assert HeldChange.objects.count() == 4


@pytest.mark.parametrize("suffix", ["", "/approve", "/discard"])
def test_every_route_refuses_an_anonymous_or_wrong_key(directory_a: Directory, suffix: str) -> None:
    _trip(directory_a)
    path = f"/api/v1/directory-sync/{directory_a.id}/held-changes{suffix}"
    for client in (Client(), Client(HTTP_AUTHORIZATION="Bearer wrong-key")):
        answer = client.get(path) if not suffix else _post(client, path, {})
        assert answer.status_code == 401 and answer.json()["data"] is None
    assert HeldChange.objects.count() == 3


@pytest.mark.parametrize("suffix", ["", "/approve", "/discard"])
def test_an_unknown_directory_is_a_404(api_client: Client, suffix: str) -> None:
    for directory_id in (uuid.uuid4(), "not-an-id"):
        path = f"/api/v1/directory-sync/{directory_id}/held-changes{suffix}"
        answer = api_client.get(path) if not suffix else _post(api_client, path, {})
        assert answer.status_code == 404 and answer.json()["error"]["code"] == 404


def test_approving_with_nothing_held_answers_zero(api_client: Client) -> None:
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "calm", "product": "crm"})
    answer = _post(api_client, f"/api/v1/directory-sync/{directory.id}/held-changes/approve")
    assert answer.status_code == 200 and answer.json()["data"] == {"approved": 0}
    assert AuditEntry.objects.get(action="directory.held_changes_approved").details["count"] == 0
