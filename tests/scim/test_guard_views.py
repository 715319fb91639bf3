"""While the deprovision guard holds changes (contract §4.2): the SCIM surface shows the identity provider's
view (held-deleted users are gone, held deactivations read inactive, later changes queue behind), and the
application's view (REST, webhooks, the changes feed) does not change; `dsync.guard_tripped` is sent once."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import orjson
import pytest

from directories.models import Directory, DirectoryUser
from tests.scim.conftest import GROUP_URN, Scim, group_body, user_body
from tests.scim.guardkit import (
    DEACTIVATE_OKTA,
    events,
    guard_set,
    held_kinds,
    rest,
    rest_directory,
    rest_user,
    users_make,
)
from webhooks.models import WebhookEvent


@pytest.fixture
def tripped(scim_hooked: Scim) -> tuple[Scim, list[str]]:
    """Ten users; user 0 deleted (went through), user 1's deletion and user 2's deactivation held."""
    guard_set(scim_hooked.directory, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 10)
    assert scim_hooked.delete(f"/Users/{ids[0]}")[0] == 204
    assert scim_hooked.delete(f"/Users/{ids[1]}")[0] == 204
    assert scim_hooked.patch(f"/Users/{ids[2]}", DEACTIVATE_OKTA)[0] == 200
    assert held_kinds(scim_hooked.directory) == [(ids[1], "delete"), (ids[2], "deactivate")]
    return scim_hooked, ids


def _filter(scim: Scim, text: str) -> dict[str, Any]:
    status, body = scim.get(f"/Users?filter={quote(text)}")
    assert status == 200, body
    return body


def test_a_held_deleted_user_is_gone_for_every_scim_request(tripped: tuple[Scim, list[str]]) -> None:
    scim, ids = tripped
    path = f"/Users/{ids[1]}"
    assert scim.get(path)[0] == 404
    assert scim.ops(path, {"op": "replace", "path": "title", "value": "x"})[0] == 404
    assert scim.put(path, user_body("user1@guard.example"))[0] == 404
    assert scim.delete(path)[0] == 404
    assert held_kinds(scim.directory) == [(ids[1], "delete"), (ids[2], "deactivate")]


def test_scim_lists_and_filters_show_the_identity_providers_view(tripped: tuple[Scim, list[str]]) -> None:
    scim, ids = tripped
    status, page = scim.get("/Users")
    assert status == 200 and page["totalResults"] == 8
    listed = {user["id"]: user for user in page["Resources"]}
    assert ids[1] not in listed and listed[ids[2]]["active"] is False
    assert _filter(scim, 'userName eq "user1@guard.example"')["totalResults"] == 0
    inactive = _filter(scim, "active eq false")
    assert [u["id"] for u in inactive["Resources"]] == [ids[2]] and inactive["totalResults"] == 1
    assert _filter(scim, "active eq true")["totalResults"] == 7
    assert _filter(scim, f'id eq "{ids[1]}"')["totalResults"] == 0
    assert _filter(scim, 'emails.value sw "user1@"')["totalResults"] == 0
    assert scim.get("/Users?count=0")[1]["totalResults"] == 8
    status, sorted_page = scim.get("/Users?sortBy=userName&sortOrder=descending&count=3")
    assert status == 200 and sorted_page["totalResults"] == 8
    assert [u["userName"] for u in sorted_page["Resources"]][0] == "user9@guard.example"
    status, searched = scim.post("/Users/.search", {"filter": 'userName sw "user"', "count": 100})
    assert status == 200 and searched["totalResults"] == 8
    assert ids[1] not in {u["id"] for u in searched["Resources"]}


def test_a_filter_evaluates_the_held_document_not_the_row(tripped: tuple[Scim, list[str]]) -> None:
    scim, ids = tripped
    rename = {"op": "replace", "path": "title", "value": "Gone"}
    assert scim.ops(f"/Users/{ids[2]}", rename)[0] == 200  # held behind the deactivation
    assert _filter(scim, 'title eq "Gone"')["totalResults"] == 1
    assert "title" not in DirectoryUser.objects.get(pk=ids[2]).raw
    modified = scim.get(f"/Users/{ids[2]}")[1]["meta"]["lastModified"]
    assert _filter(scim, f'meta.lastModified ge "{modified}"')["totalResults"] >= 1


def test_later_changes_of_a_held_user_queue_behind_in_order(tripped: tuple[Scim, list[str]]) -> None:
    scim, ids = tripped
    path = f"/Users/{ids[2]}"
    status, body = scim.ops(path, {"op": "replace", "path": "displayName", "value": "Later"})
    assert status == 200 and body["displayName"] == "Later" and body["active"] is False
    status, body = scim.ops(path, {"op": "Replace", "path": "active", "value": "True"})  # re-activation
    assert status == 200 and body["active"] is True
    # The same value again changes nothing: nothing more is held.
    assert scim.ops(path, {"op": "replace", "path": "active", "value": True})[0] == 200
    assert scim.get(path)[1]["active"] is True and scim.get(path)[1]["displayName"] == "Later"
    assert scim.delete(path)[0] == 204
    assert scim.get(path)[0] == 404
    assert held_kinds(scim.directory) == [
        (ids[1], "delete"),
        (ids[2], "deactivate"),
        (ids[2], "update"),
        (ids[2], "update"),
        (ids[2], "delete"),
    ]
    # The application's view is as it was before any of them.
    status, shown = rest_user(scim.directory, ids[2])
    assert status == 200 and shown["active"] is True and "displayName" not in shown["raw"]


def test_the_application_sees_no_held_change(tripped: tuple[Scim, list[str]]) -> None:
    scim, ids = tripped
    directory = scim.directory
    for user_id in (ids[1], ids[2]):
        status, shown = rest_user(directory, user_id)
        assert status == 200 and shown["active"] is True
    listed = rest().get("/api/v1/directory-sync/users", {"tenant": directory.tenant, "product": directory.product})
    assert {u["id"] for u in listed.json()["data"]} == set(ids[1:])
    inactive = rest().get(
        "/api/v1/directory-sync/users", {"tenant": directory.tenant, "product": directory.product, "active": "false"}
    )
    assert inactive.json()["data"] == []
    # Only user 0's deletion reached the feed: held changes take no number.
    assert [(e["event"], e["data"]["id"]) for e in events(directory, "user.deleted", "user.updated")] == [
        ("user.deleted", ids[0])
    ]
    assert rest_directory(directory)["events"]["last_sequence"] == 11  # 10 creations, 1 deletion


def test_group_changes_naming_held_users(tripped: tuple[Scim, list[str]]) -> None:
    """A held-deleted user cannot become a member (gone for the identity provider) and is not listed among a
    group's SCIM members; a held-deactivated one takes part as usual; the application keeps both."""
    scim, ids = tripped
    directory = scim.directory
    status, group = scim.post("/Groups", group_body("Team", members=[ids[3]]))
    assert status == 201
    refused = scim.ops(f"/Groups/{group['id']}", {"op": "add", "path": "members", "value": [{"value": ids[1]}]})
    assert refused[0] == 400 and refused[1]["scimType"] == "invalidValue"
    assert scim.put(f"/Groups/{group['id']}", group_body("Team", members=[ids[1]]))[0] == 400
    added = scim.ops(f"/Groups/{group['id']}", {"op": "add", "path": "members", "value": [{"value": ids[2]}]})
    assert added[0] == 204
    members = {m["value"] for m in scim.get(f"/Groups/{group['id']}")[1]["members"]}
    assert members == {ids[3], ids[2]}
    assert [e["data"]["id"] for e in events(directory, "group.user_added")] == [ids[3], ids[2]]


def test_a_held_deleted_users_memberships_are_hidden_from_the_identity_provider(scim_hooked: Scim) -> None:
    directory = guard_set(scim_hooked.directory, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 4)
    status, group = scim_hooked.post("/Groups", group_body("Team", members=ids[:3]))
    assert status == 201
    scim_hooked.delete(f"/Users/{ids[0]}")
    scim_hooked.delete(f"/Users/{ids[1]}")  # held
    members = {m["value"] for m in scim_hooked.get(f"/Groups/{group['id']}")[1]["members"]}
    assert members == {ids[2]}
    detail = rest().get(
        f"/api/v1/directory-sync/groups/{group['id']}", {"tenant": directory.tenant, "product": directory.product}
    )
    assert {m["user_id"] for m in detail.json()["data"]["members"]} == {ids[1], ids[2]}


def test_creating_a_user_with_the_name_of_a_held_deleted_one_is_a_conflict(tripped: tuple[Scim, list[str]]) -> None:
    scim, _ids = tripped
    status, body = scim.post("/Users", user_body("user1@guard.example"))
    assert status == 409 and body["scimType"] == "uniqueness"


def test_tripping_sends_dsync_guard_tripped_once_to_the_service_receiver(scim_hooked: Scim, settings: Any) -> None:
    settings.WEBHOOK_URL = "https://service.example.com/roster"
    directory = guard_set(scim_hooked.directory, max_users=1, max_percent=1)
    ids = users_make(scim_hooked, 5)
    for user_id in ids:
        assert scim_hooked.delete(f"/Users/{user_id}")[0] == 204
    tripped = WebhookEvent.objects.filter(directory_id=directory.id, event_type="dsync.guard_tripped")
    assert tripped.count() == 1
    row = tripped.get()
    payload = orjson.loads(row.body)
    assert row.target == "global" and row.sequence is None and "sequence" not in payload
    data = payload["data"]
    assert data["id"] == str(directory.id) and "secret" not in data["scim"] and "secret" not in data["webhook"]
    assert data["guard"]["state"] == "tripped" and data["guard"]["held"] == 1
    assert data["deprovision_guard"]["max_users"] == 1


def test_a_group_with_members_lists_held_deactivated_users(tripped: tuple[Scim, list[str]]) -> None:
    scim, ids = tripped
    status, group = scim.post("/Groups", {"schemas": [GROUP_URN], "displayName": "G", "members": [{"value": ids[2]}]})
    assert status == 201 and [m["value"] for m in group["members"]] == [ids[2]]
    user = scim.get(f"/Users/{ids[2]}")[1]
    assert user["active"] is False and [g["value"] for g in user["groups"]] == [group["id"]]


def test_the_directory_shows_the_guard_tripped(tripped: tuple[Scim, list[str]]) -> None:
    scim, _ids = tripped
    directory: Directory = scim.directory
    guard = rest_directory(directory)["guard"]
    assert guard["state"] == "tripped" and guard["held"] == 2 and guard["window_deprovisions"] == 1
    listed = rest().get("/api/v1/directory-sync", {"tenant": directory.tenant, "product": directory.product})
    assert listed.json()["data"][0]["guard"] == guard
