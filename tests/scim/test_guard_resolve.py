"""Resolving held changes (contract §4.2): approving applies them in order with their normal events, numbered
at approval and carrying `held_since`; discarding drops them and gives the identity provider the application's
view back; when nothing is held any more the guard re-arms with an empty window. The service is called here;
each surface's routes are tested with it (tests/restapi, tests/adminauth, tests/portal, the command)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from core.errors import Conflict, ValidationFailed
from core.timefmt import iso_utc
from directories.guard.services import held_changes_resolve
from directories.models import DirectoryUser, HeldChange
from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.scim.conftest import Scim, group_body, user_body
from tests.scim.guardkit import DEACTIVATE_OKTA, events, guard_set, held_kinds, rest_directory, rest_user, users_make


@pytest.fixture
def held(scim_hooked: Scim) -> tuple[Scim, list[str]]:
    """Six users; user 0 deleted (went through), then held: user 1's deletion, user 2's deactivation and
    rename (two changes), user 3's deactivation."""
    guard_set(scim_hooked.directory, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 6)
    assert scim_hooked.delete(f"/Users/{ids[0]}")[0] == 204
    assert scim_hooked.delete(f"/Users/{ids[1]}")[0] == 204
    assert scim_hooked.patch(f"/Users/{ids[2]}", DEACTIVATE_OKTA)[0] == 200
    assert scim_hooked.ops(f"/Users/{ids[2]}", {"op": "replace", "path": "title", "value": "Gone"})[0] == 200
    assert scim_hooked.patch(f"/Users/{ids[3]}", DEACTIVATE_OKTA)[0] == 200
    assert [k for _u, k in held_kinds(scim_hooked.directory)] == ["delete", "deactivate", "update", "deactivate"]
    return scim_hooked, ids


def _held_ids(directory: Any) -> list[uuid.UUID]:
    return list(HeldChange.objects.filter(directory=directory).values_list("id", flat=True))


def test_approving_all_applies_them_in_order_with_numbered_events_carrying_held_since(
    held: tuple[Scim, list[str]],
) -> None:
    scim, ids = held
    directory = scim.directory
    changes = list(HeldChange.objects.filter(directory=directory))
    last = rest_directory(directory)["events"]["last_sequence"]
    result = held_changes_resolve(actor=TEST_ACTOR, directory=directory, ids=None, approve=True)
    assert result.count == 4 and result.rearmed
    recorded = [e for e in events(directory) if e["sequence"] > last]
    assert [(e["event"], e["data"]["id"], e["sequence"]) for e in recorded] == [
        ("user.deleted", ids[1], last + 1),
        ("user.updated", ids[2], last + 2),
        ("user.updated", ids[2], last + 3),
        ("user.updated", ids[3], last + 4),
    ]
    assert [e["held_since"] for e in recorded] == [iso_utc(c.held_at) for c in changes]
    assert recorded[1]["previous_attributes"]["active"] is True and recorded[1]["data"]["active"] is False
    assert recorded[2]["previous_attributes"]["raw"] == {"title": None}
    # The application now sees them; the identity provider sees the same.
    assert rest_user(directory, ids[1])[0] == 404
    for user_id in (ids[2], ids[3]):
        status, shown = rest_user(directory, user_id)
        assert status == 200 and shown["active"] is False
        assert scim.get(f"/Users/{user_id}")[1]["active"] is False
    assert DirectoryUser.objects.get(pk=ids[2]).raw["title"] == "Gone"
    assert not DirectoryUser.objects.filter(directory=directory, held=True).exists()
    assert rest_directory(directory)["guard"] == {
        "state": "armed",
        "held": 0,
        "tripped_at": None,
        "window_deprovisions": 0,
    }


def test_the_guard_re_arms_with_an_empty_window(held: tuple[Scim, list[str]]) -> None:
    """The approved deprovisions, and the one counted before the trip, do not count any more: the next one
    is the first of a new window (max_users 1 lets one through), the one after it trips again."""
    scim, ids = held
    held_changes_resolve(actor=TEST_ACTOR, directory=scim.directory, ids=None, approve=True)
    assert scim.delete(f"/Users/{ids[4]}")[0] == 204
    assert not DirectoryUser.objects.filter(pk=ids[4]).exists()
    assert scim.delete(f"/Users/{ids[5]}")[0] == 204
    assert held_kinds(scim.directory) == [(ids[5], "delete")]


def test_approving_a_later_change_approves_the_users_earlier_ones_with_it(held: tuple[Scim, list[str]]) -> None:
    scim, ids = held
    directory = scim.directory
    rename = HeldChange.objects.get(user_id=ids[2], change="update")
    result = held_changes_resolve(actor=TEST_ACTOR, directory=directory, ids=[rename.id], approve=True)
    assert result.count == 2 and not result.rearmed
    assert [(e["event"], e["data"]["id"]) for e in events(directory, "user.updated")] == [
        ("user.updated", ids[2]),
        ("user.updated", ids[2]),
    ]
    assert held_kinds(directory) == [(ids[1], "delete"), (ids[3], "deactivate")]
    assert rest_directory(directory)["guard"]["state"] == "tripped"
    user = DirectoryUser.objects.get(pk=ids[2])
    assert user.held is False and user.active is False and user.raw["title"] == "Gone"


def test_discarding_an_earlier_change_discards_the_users_later_ones_and_restores_the_scim_view(
    held: tuple[Scim, list[str]],
) -> None:
    scim, ids = held
    directory = scim.directory
    before = events(directory)
    deactivation = HeldChange.objects.get(user_id=ids[2], change="deactivate")
    result = held_changes_resolve(actor=TEST_ACTOR, directory=directory, ids=[deactivation.id], approve=False)
    assert result.count == 2
    assert events(directory) == before  # nothing sent
    shown = scim.get(f"/Users/{ids[2]}")[1]
    assert shown["active"] is True and "title" not in shown
    assert scim.get("/Users?filter=active%20eq%20false")[1]["totalResults"] == 1  # user 3, still held


def test_discarding_a_held_deletion_brings_the_user_back_to_scim(held: tuple[Scim, list[str]]) -> None:
    scim, ids = held
    directory = scim.directory
    held_changes_resolve(actor=TEST_ACTOR, directory=directory, ids=None, approve=False)
    assert scim.get(f"/Users/{ids[1]}")[0] == 200
    assert scim.get("/Users")[1]["totalResults"] == 5
    assert rest_directory(directory)["guard"]["state"] == "armed"
    # The identity provider may now send the deletion afresh: a new window counts it.
    assert scim.delete(f"/Users/{ids[1]}")[0] == 204
    assert not DirectoryUser.objects.filter(pk=ids[1]).exists()


def test_approving_a_deletion_removes_the_users_memberships(scim_hooked: Scim) -> None:
    directory = guard_set(scim_hooked.directory, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 3)
    _, group = scim_hooked.post("/Groups", group_body("Team", members=ids))
    scim_hooked.delete(f"/Users/{ids[0]}")
    scim_hooked.delete(f"/Users/{ids[1]}")
    held_changes_resolve(actor=TEST_ACTOR, directory=directory, ids=None, approve=True)
    assert [m["value"] for m in scim_hooked.get(f"/Groups/{group['id']}")[1]["members"]] == [ids[2]]


def test_an_unknown_or_foreign_id_is_refused_and_nothing_is_done(held: tuple[Scim, list[str]]) -> None:
    scim, _ids = held
    directory = scim.directory
    other = directory_create(actor=TEST_ACTOR, data={"tenant": "other", "product": "crm"})
    other_scim = Scim(guard_set(other, max_users=1, max_percent=1))
    other_ids = users_make(other_scim, 3, prefix="o")
    other_scim.delete(f"/Users/{other_ids[0]}")
    other_scim.delete(f"/Users/{other_ids[1]}")
    foreign = _held_ids(other)
    mine = _held_ids(directory)
    before = events(directory)
    for ids in ([uuid.uuid4()], foreign, [mine[0], *foreign]):
        with pytest.raises(ValidationFailed) as refused:
            held_changes_resolve(actor=TEST_ACTOR, directory=directory, ids=ids, approve=True)
        assert refused.value.field == "ids"
    assert _held_ids(directory) == mine and _held_ids(other) == foreign
    assert events(directory) == before


def test_resolving_with_nothing_held_does_nothing(scim_hooked: Scim) -> None:
    directory = scim_hooked.directory
    result = held_changes_resolve(actor=TEST_ACTOR, directory=directory, ids=None, approve=True)
    assert (result.count, result.rearmed) == (0, False)


def test_an_approval_that_would_break_uniqueness_applies_nothing(scim_hooked: Scim) -> None:
    """A held rename took a userName that another user got after it (the identity provider renamed them in
    turn): the approval fails whole, nothing is applied, the changes stay held."""
    directory = guard_set(scim_hooked.directory, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 3)
    scim_hooked.delete(f"/Users/{ids[0]}")
    assert scim_hooked.put(f"/Users/{ids[1]}", user_body("renamed@guard.example", active=False))[0] == 200
    # Another user takes that name in the application's view meanwhile (not through SCIM: the identity
    # provider's view would have refused it).
    DirectoryUser.objects.filter(pk=ids[2]).update(
        user_name="renamed@guard.example", user_name_key="renamed@guard.example"
    )
    before = events(directory)
    with pytest.raises(Conflict):
        held_changes_resolve(actor=TEST_ACTOR, directory=directory, ids=None, approve=True)
    assert events(directory) == before and len(held_kinds(directory)) == 1
