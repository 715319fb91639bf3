"""The deprovision guard trips (contract §4.2): what counts as a deprovision in every SCIM dialect, the sliding
window and both limits at their edges, and how a held change is answered to the identity provider.

On PostgreSQL these run with real commits, so deprovisions take the locked path from the single-statement
store, as every HTTP request does in production.
"""

from __future__ import annotations

from typing import Any

import pytest

from directories.models import Deprovision, Directory, DirectoryUser, HeldChange
from tests.scim.conftest import PATCH_URN, Scim, user_body
from tests.scim.guardkit import DEACTIVATE_OKTA, guard_set, held_kinds, rest_directory, rest_user, users_make


def _ops(*operations: dict[str, Any]) -> dict[str, Any]:
    return {"schemas": [PATCH_URN], "Operations": list(operations)}


# Every way Roster accepts of taking a user out: (name, method, body builder).
DEPROVISIONS = {
    "okta_pathless_replace": ("PATCH", lambda name: DEACTIVATE_OKTA),
    "entra_capitalised_string": ("PATCH", lambda name: _ops({"op": "Replace", "path": "active", "value": "False"})),
    "path_active_boolean": ("PATCH", lambda name: _ops({"op": "replace", "path": "active", "value": False})),
    "pathless_string": ("PATCH", lambda name: _ops({"op": "Replace", "value": {"active": "False"}})),
    "add_active_false": ("PATCH", lambda name: _ops({"op": "Add", "path": "active", "value": False})),
    "put_active_false": ("PUT", lambda name: user_body(name, active=False)),
    "delete": ("DELETE", lambda name: None),
}


def _deprovision(scim: Scim, user_id: str, kind: str, name: str) -> tuple[int, Any]:
    method, body = DEPROVISIONS[kind]
    return scim.call(method, f"/Users/{user_id}", body(name))


@pytest.mark.parametrize("kind", list(DEPROVISIONS))
def test_every_dialect_of_a_deprovision_counts_and_the_one_past_the_limits_is_held(
    scim_hooked: Scim, kind: str
) -> None:
    directory = guard_set(scim_hooked.directory, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 10)
    first_status, _ = _deprovision(scim_hooked, ids[0], kind, "user0@guard.example")
    status, body = _deprovision(scim_hooked, ids[1], kind, "user1@guard.example")

    # The first went through (1 is not more than max_users 1); the second is held, answered as if applied.
    assert first_status in (200, 204)
    if kind == "delete":
        assert status == 204 and body is None
        assert scim_hooked.get(f"/Users/{ids[1]}")[0] == 404
        assert held_kinds(directory) == [(ids[1], "delete")]
    else:
        assert status == 200 and body["active"] is False and body["id"] == ids[1]
        assert scim_hooked.last["ETag"] == body["meta"]["version"]
        assert scim_hooked.get(f"/Users/{ids[1]}")[1]["active"] is False
        assert held_kinds(directory) == [(ids[1], "deactivate")]
    # The application still has the user, active, as before.
    status, shown = rest_user(directory, ids[1])
    assert status == 200 and shown["active"] is True
    assert DirectoryUser.objects.get(pk=ids[1]).active is True
    guard = rest_directory(directory)["guard"]
    assert guard["state"] == "tripped" and guard["held"] == 1 and guard["window_deprovisions"] == 1
    assert guard["tripped_at"] is not None


def test_deleting_a_user_already_inactive_is_not_a_deprovision(scim_hooked: Scim) -> None:
    directory = guard_set(scim_hooked.directory, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 5)
    assert scim_hooked.patch(f"/Users/{ids[0]}", DEACTIVATE_OKTA)[0] == 200  # the one deprovision allowed
    # The usual clean-up after a deactivation goes through, and does not count.
    assert scim_hooked.delete(f"/Users/{ids[0]}")[0] == 204
    assert not DirectoryUser.objects.filter(pk=ids[0]).exists()
    assert Deprovision.objects.filter(directory=directory).count() == 1
    # A user created inactive is deleted at once too.
    status, created = scim_hooked.post("/Users", user_body("off@guard.example", active=False))
    assert status == 201 and scim_hooked.delete(f"/Users/{created['id']}")[0] == 204
    # The next real deprovision is past max_users: held.
    assert scim_hooked.delete(f"/Users/{ids[1]}")[0] == 204
    assert held_kinds(directory) == [(ids[1], "delete")]


def test_other_changes_are_not_deprovisions(scim_hooked: Scim) -> None:
    """Renames, re-activations and PATCHes that leave active as it is flow however many there are."""
    directory = guard_set(scim_hooked.directory, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 4)
    for user_id in ids:
        assert scim_hooked.ops(f"/Users/{user_id}", {"op": "replace", "path": "title", "value": "Eng"})[0] == 200
        assert scim_hooked.ops(f"/Users/{user_id}", {"op": "replace", "path": "active", "value": True})[0] == 200
    assert not HeldChange.objects.filter(directory=directory).exists()
    assert Deprovision.objects.filter(directory=directory).count() == 0


def test_a_guard_switched_off_counts_and_holds_nothing(scim_hooked: Scim) -> None:
    directory = guard_set(scim_hooked.directory, enabled=False, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 5)
    for user_id in ids:
        assert scim_hooked.delete(f"/Users/{user_id}")[0] == 204
    assert not DirectoryUser.objects.filter(directory=directory).exists()
    assert rest_directory(directory)["guard"] == {
        "state": "off",
        "held": 0,
        "tripped_at": None,
        "window_deprovisions": 0,
    }


# --- the arithmetic at its edges -----------------------------------------------------------------------


def test_exactly_max_users_go_through_and_one_more_is_held(scim_hooked: Scim) -> None:
    directory = guard_set(scim_hooked.directory, max_users=3, max_percent=1)
    ids = users_make(scim_hooked, 10)
    for user_id in ids[:3]:
        assert scim_hooked.delete(f"/Users/{user_id}")[0] == 204
    assert DirectoryUser.objects.filter(directory=directory).count() == 7
    assert scim_hooked.delete(f"/Users/{ids[3]}")[0] == 204
    assert DirectoryUser.objects.filter(directory=directory).count() == 7
    assert held_kinds(directory) == [(ids[3], "delete")]


def test_the_percentage_is_of_the_users_active_at_the_window_start_without_rounding(scim_hooked: Scim) -> None:
    """47 active users, 20 %: 9.4 users. The 9th deprovision is within it, the 10th exceeds it. Users taken
    out during the window still count in the base (it stays 47 through the wave)."""
    directory = guard_set(scim_hooked.directory, max_users=1, max_percent=20)
    ids = users_make(scim_hooked, 47)
    for user_id in ids[:5]:
        assert scim_hooked.delete(f"/Users/{user_id}")[0] == 204
    for user_id in ids[5:9]:
        assert scim_hooked.patch(f"/Users/{user_id}", DEACTIVATE_OKTA)[0] == 200
    assert Deprovision.objects.filter(directory=directory).count() == 9
    assert not HeldChange.objects.exists()
    assert scim_hooked.patch(f"/Users/{ids[9]}", DEACTIVATE_OKTA)[0] == 200
    assert held_kinds(directory) == [(ids[9], "deactivate")]


def test_the_percentage_binds_only_when_max_users_is_also_exceeded(scim_hooked: Scim) -> None:
    directory = guard_set(scim_hooked.directory, max_users=4, max_percent=10)
    ids = users_make(scim_hooked, 10)
    for user_id in ids[:4]:  # 40 % of the directory, but not more than 4 users
        assert scim_hooked.delete(f"/Users/{user_id}")[0] == 204
    assert not HeldChange.objects.exists()
    assert scim_hooked.delete(f"/Users/{ids[4]}")[0] == 204
    assert held_kinds(directory) == [(ids[4], "delete")]


def test_a_max_percent_of_100_counts_every_deprovision_and_never_holds_one(scim_hooked: Scim) -> None:
    directory = guard_set(scim_hooked.directory, max_users=1, max_percent=100)
    ids = users_make(scim_hooked, 6)
    for user_id in ids[:3]:
        assert scim_hooked.patch(f"/Users/{user_id}", DEACTIVATE_OKTA)[0] == 200
    for user_id in ids:
        assert scim_hooked.delete(f"/Users/{user_id}")[0] == 204
    assert not DirectoryUser.objects.filter(directory=directory).exists()
    assert rest_directory(directory)["guard"]["window_deprovisions"] == 6
    assert rest_directory(directory)["guard"]["state"] == "armed"


def test_a_deprovision_leaves_the_window_exactly_window_minutes_later(scim_hooked: Scim, clock: Any) -> None:
    directory = guard_set(scim_hooked.directory, max_users=2, max_percent=1, window_minutes=60)
    ids = users_make(scim_hooked, 8)
    assert scim_hooked.delete(f"/Users/{ids[0]}")[0] == 204
    assert scim_hooked.delete(f"/Users/{ids[1]}")[0] == 204
    clock.advance(minutes=60)  # those two are exactly 60 minutes old: out of the window
    assert scim_hooked.delete(f"/Users/{ids[2]}")[0] == 204
    assert rest_directory(directory)["guard"]["window_deprovisions"] == 1
    clock.advance(seconds=1)
    assert scim_hooked.delete(f"/Users/{ids[3]}")[0] == 204
    assert not HeldChange.objects.exists()
    assert scim_hooked.delete(f"/Users/{ids[4]}")[0] == 204  # the third within 60 minutes
    assert held_kinds(directory) == [(ids[4], "delete")]


def test_a_deprovision_one_microsecond_inside_the_window_still_counts(scim_hooked: Scim, clock: Any) -> None:
    directory = guard_set(scim_hooked.directory, max_users=2, max_percent=1, window_minutes=1)
    ids = users_make(scim_hooked, 5)
    assert scim_hooked.delete(f"/Users/{ids[0]}")[0] == 204
    assert scim_hooked.delete(f"/Users/{ids[1]}")[0] == 204
    clock.advance(minutes=1, microseconds=-1)
    assert scim_hooked.delete(f"/Users/{ids[2]}")[0] == 204
    assert held_kinds(directory) == [(ids[2], "delete")]


def test_while_tripped_every_deprovision_is_held_even_after_the_window(scim_hooked: Scim, clock: Any) -> None:
    directory = guard_set(scim_hooked.directory, max_users=1, max_percent=1, window_minutes=5)
    ids = users_make(scim_hooked, 4)
    assert scim_hooked.delete(f"/Users/{ids[0]}")[0] == 204
    assert scim_hooked.delete(f"/Users/{ids[1]}")[0] == 204  # trips
    clock.advance(hours=2)
    assert scim_hooked.patch(f"/Users/{ids[2]}", DEACTIVATE_OKTA)[0] == 200
    assert held_kinds(directory) == [(ids[1], "delete"), (ids[2], "deactivate")]


# --- what flows while the guard is tripped ---------------------------------------------------------------


def test_creations_and_other_updates_flow_while_tripped(scim_hooked: Scim) -> None:
    directory = guard_set(scim_hooked.directory, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 4)
    scim_hooked.delete(f"/Users/{ids[0]}")
    scim_hooked.delete(f"/Users/{ids[1]}")  # held: tripped
    status, created = scim_hooked.post("/Users", user_body("new@guard.example"))
    assert status == 201
    status, body = scim_hooked.ops(f"/Users/{ids[2]}", {"op": "replace", "path": "title", "value": "CTO"})
    assert status == 200 and body["title"] == "CTO"
    assert DirectoryUser.objects.get(pk=ids[2]).raw["title"] == "CTO"
    assert rest_user(directory, created["id"])[0] == 200
    assert len(held_kinds(directory)) == 1


def test_an_if_match_is_checked_against_the_held_version(scim_hooked: Scim) -> None:
    directory = guard_set(scim_hooked.directory, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 3)
    scim_hooked.delete(f"/Users/{ids[0]}")
    row_version = scim_hooked.get(f"/Users/{ids[1]}")[1]["meta"]["version"]
    status, held = scim_hooked.patch(f"/Users/{ids[1]}", DEACTIVATE_OKTA)
    assert status == 200 and held["meta"]["version"] != row_version
    # The identity provider's version is the held one: the row's is stale for it.
    rename = _ops({"op": "replace", "path": "displayName", "value": "Renamed"})
    assert scim_hooked.patch(f"/Users/{ids[1]}", rename, HTTP_IF_MATCH=row_version)[0] == 412
    status, body = scim_hooked.patch(f"/Users/{ids[1]}", rename, HTTP_IF_MATCH=held["meta"]["version"])
    assert status == 200 and body["displayName"] == "Renamed" and body["active"] is False
    assert scim_hooked.get(f"/Users/{ids[1]}", HTTP_IF_NONE_MATCH=body["meta"]["version"])[0] == 304
    assert [kind for _user, kind in held_kinds(directory)] == ["deactivate", "update"]


def test_a_held_deactivation_tripping_the_guard_answers_the_full_resource(scim_hooked: Scim) -> None:
    guard_set(scim_hooked.directory, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 3)
    scim_hooked.patch(f"/Users/{ids[0]}", DEACTIVATE_OKTA)
    before = scim_hooked.get(f"/Users/{ids[1]}")[1]
    status, body = scim_hooked.patch(f"/Users/{ids[1]}", DEACTIVATE_OKTA)
    assert status == 200
    assert {k: v for k, v in body.items() if k not in ("active", "meta")} == {
        k: v for k, v in before.items() if k not in ("active", "meta")
    }
    assert body["active"] is False
    assert body["meta"]["created"] == before["meta"]["created"]
    assert body["meta"]["lastModified"] >= before["meta"]["lastModified"]


def test_a_held_change_that_renames_onto_another_users_name_is_a_conflict(scim_hooked: Scim) -> None:
    directory = guard_set(scim_hooked.directory, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 3)
    scim_hooked.delete(f"/Users/{ids[0]}")
    status, body = scim_hooked.put(f"/Users/{ids[1]}", user_body("user2@guard.example", active=False))
    assert status == 409 and body["scimType"] == "uniqueness"
    assert not HeldChange.objects.filter(directory=directory).exists()


def test_directory_data_shows_the_setting_whole(scim_hooked: Scim) -> None:
    directory: Directory = guard_set(scim_hooked.directory, max_users=7)
    assert rest_directory(directory)["deprovision_guard"] == {
        "enabled": True,
        "max_users": 7,
        "max_percent": 20,
        "window_minutes": 60,
    }
