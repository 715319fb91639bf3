"""Groups: create with members, read, list, rename, member PATCH forms, delete, events."""

from __future__ import annotations

import uuid

import orjson
import pytest

from directories.models import DirectoryGroup, GroupMembership
from tests.scim.conftest import GROUP_URN, Scim, group_body, user_body
from webhooks.models import WebhookEvent


def _events(directory) -> list[dict]:  # noqa: ANN001
    return [orjson.loads(e.body) for e in WebhookEvent.objects.filter(directory_id=directory.id).order_by("created_at")]


def _members(group_id: str) -> set[str]:
    return {str(u) for u in GroupMembership.objects.filter(group_id=group_id).values_list("user_id", flat=True)}


@pytest.fixture
def users(scim_hooked: Scim) -> list[str]:
    return [scim_hooked.post("/Users", user_body(f"m{i}@x.io"))[1]["id"] for i in range(4)]


def test_create_group_with_members_records_created_and_user_added(scim_hooked: Scim, users: list[str]) -> None:
    status, group = scim_hooked.post("/Groups", group_body("Eng", users[:2]))
    assert status == 201 and scim_hooked.last["Location"] == group["meta"]["location"]
    assert {m["value"] for m in group["members"]} == set(users[:2])
    assert _members(group["id"]) == set(users[:2])
    events = [e for e in _events(scim_hooked.directory) if e["event"].startswith("group.")]
    assert [e["event"] for e in events] == ["group.created", "group.user_added", "group.user_added"]
    assert events[1]["data"]["group"] == events[0]["data"]
    assert set(events[0]["data"]) == {"id", "name", "raw", "created_at", "updated_at"}
    assert events[0]["data"]["name"] == "Eng" and events[0]["data"]["id"] == group["id"]
    assert events[1]["data"]["id"] == users[0]
    assert "members" not in DirectoryGroup.objects.get(pk=group["id"]).raw


def test_create_group_with_empty_members_and_microsoft_schema(scim_a: Scim) -> None:
    body = group_body(
        "Empty", [], schemas=[GROUP_URN, "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group"]
    )
    status, group = scim_a.post("/Groups", body)
    assert status == 201 and group["members"] == []


def test_duplicate_display_name_is_409(scim_a: Scim) -> None:
    assert scim_a.post("/Groups", group_body("Sales"))[0] == 201
    status, body = scim_a.post("/Groups", group_body("SALES"))
    assert status == 409 and body["scimType"] == "uniqueness"
    assert DirectoryGroup.objects.filter(display_name_key="sales").count() == 1


def test_member_from_other_directory_is_400_and_nothing_changes(scim_a: Scim, scim_b: Scim) -> None:
    _, foreign = scim_b.post("/Users", user_body("foreign@x.io"))
    status, body = scim_a.post("/Groups", group_body("G", [foreign["id"]]))
    assert status == 400 and body["scimType"] == "invalidValue"
    assert not DirectoryGroup.objects.filter(directory=scim_a.directory).exists()
    _, group = scim_a.post("/Groups", group_body("G"))
    status, body = scim_a.ops(
        f"/Groups/{group['id']}", {"op": "add", "path": "members", "value": [{"value": foreign["id"]}]}
    )
    assert status == 400 and body["scimType"] == "invalidValue"
    assert _members(group["id"]) == set()


@pytest.mark.parametrize("value", [[{"value": "not-a-uuid"}], [{"display": "x"}], [{"value": str(uuid.uuid4())}], "x"])
def test_bad_member_values_are_400(scim_a: Scim, value: object) -> None:
    _, group = scim_a.post("/Groups", group_body("G"))
    status, body = scim_a.ops(f"/Groups/{group['id']}", {"op": "add", "path": "members", "value": value})
    assert status == 400 and body["scimType"] == "invalidValue"


def test_get_group_with_and_without_members(scim_a: Scim) -> None:
    _, user = scim_a.post("/Users", user_body())
    _, group = scim_a.post("/Groups", group_body("G", [user["id"]]))
    _, full = scim_a.get(f"/Groups/{group['id']}")
    assert full["members"] == [{"value": user["id"], "type": "User", "$ref": user["meta"]["location"]}]
    _, lean = scim_a.get(f"/Groups/{group['id']}?excludedAttributes=members")
    assert "members" not in lean and lean["displayName"] == "G"
    _, listed = scim_a.get("/Groups?excludedAttributes=members&filter=displayName%20eq%20%22g%22")
    assert listed["totalResults"] == 1 and "members" not in listed["Resources"][0]


def test_groups_list_pages_correctly(scim_a: Scim) -> None:
    ids = [scim_a.post("/Groups", group_body(f"G{i}"))[1]["id"] for i in range(60)]
    _, page = scim_a.get("/Groups?startIndex=51&count=20")
    assert page["totalResults"] == 60 and [g["id"] for g in page["Resources"]] == ids[50:]


def test_patch_add_remove_replace_members(scim_hooked: Scim, users: list[str]) -> None:
    _, group = scim_hooked.post("/Groups", group_body("G", [users[0]]))
    gid = group["id"]
    status, body = scim_hooked.ops(
        f"/Groups/{gid}", {"op": "Add", "path": "members", "value": [{"value": users[1]}, {"value": users[0]}]}
    )
    assert status == 204 and body is None
    assert _members(gid) == {users[0], users[1]}
    # Okta: remove by filter path plus add, in one atomic request (interop O13)
    status, _ = scim_hooked.ops(
        f"/Groups/{gid}",
        {"op": "remove", "path": f'members[value eq "{users[0]}"]'},
        {"op": "add", "path": "members", "value": [{"value": users[2]}]},
    )
    assert status == 204 and _members(gid) == {users[1], users[2]}
    # Entra legacy remove with a value list (interop E5)
    scim_hooked.ops(f"/Groups/{gid}", {"op": "Remove", "path": "members", "value": [{"value": users[1]}]})
    assert _members(gid) == {users[2]}
    # replace with a full list has set semantics
    scim_hooked.ops(
        f"/Groups/{gid}", {"op": "replace", "path": "members", "value": [{"value": users[3]}, {"value": users[0]}]}
    )
    assert _members(gid) == {users[3], users[0]}
    # remove without value removes everyone
    scim_hooked.ops(f"/Groups/{gid}", {"op": "remove", "path": "members"})
    assert _members(gid) == set()
    kinds = [e["event"] for e in _events(scim_hooked.directory) if e["event"].startswith("group.")]
    assert kinds == [
        "group.created",
        "group.user_added",
        "group.user_added",
        "group.user_removed",
        "group.user_added",
        "group.user_removed",
        "group.user_removed",
        "group.user_added",
        "group.user_added",
        "group.user_removed",
        "group.user_removed",
    ]


def test_adding_existing_member_or_removing_non_member_records_nothing(scim_hooked: Scim, users: list[str]) -> None:
    _, group = scim_hooked.post("/Groups", group_body("G", [users[0]]))
    before = len(_events(scim_hooked.directory))
    updated = DirectoryGroup.objects.get(pk=group["id"]).updated_at
    scim_hooked.ops(f"/Groups/{group['id']}", {"op": "add", "path": "members", "value": [{"value": users[0]}]})
    scim_hooked.ops(f"/Groups/{group['id']}", {"op": "remove", "path": f'members[value eq "{users[1]}"]'})
    scim_hooked.ops(f"/Groups/{group['id']}", {"op": "remove", "path": 'members[value eq "nonsense"]'})
    assert len(_events(scim_hooked.directory)) == before
    assert DirectoryGroup.objects.get(pk=group["id"]).updated_at == updated


def test_okta_rename_with_id_in_value(scim_hooked: Scim) -> None:
    _, group = scim_hooked.post("/Groups", group_body("Old"))
    status, _ = scim_hooked.ops(
        f"/Groups/{group['id']}", {"op": "replace", "value": {"id": group["id"], "displayName": "New"}}
    )
    assert status == 204
    row = DirectoryGroup.objects.get(pk=group["id"])
    assert (row.display_name, row.display_name_key, row.raw["displayName"]) == ("New", "new", "New")
    assert _events(scim_hooked.directory)[-1]["event"] == "group.updated"
    assert scim_hooked.get("/Groups?filter=displayName%20eq%20%22new%22")[1]["totalResults"] == 1


def test_patch_group_answers_200_with_resource_when_attributes_asked(scim_a: Scim) -> None:
    _, group = scim_a.post("/Groups", group_body("G"))
    status, body = scim_a.ops(
        f"/Groups/{group['id']}?attributes=displayName", {"op": "replace", "path": "displayName", "value": "H"}
    )
    assert status == 200 and body["displayName"] == "H" and "members" not in body


def test_rename_to_existing_display_name_is_409(scim_a: Scim) -> None:
    scim_a.post("/Groups", group_body("Taken"))
    _, group = scim_a.post("/Groups", group_body("Mine"))
    status, body = scim_a.ops(f"/Groups/{group['id']}", {"op": "replace", "path": "displayName", "value": "taken"})
    assert status == 409 and body["scimType"] == "uniqueness"
    assert DirectoryGroup.objects.get(pk=group["id"]).display_name == "Mine"


def test_group_patch_is_atomic(scim_a: Scim) -> None:
    _, user = scim_a.post("/Users", user_body())
    _, group = scim_a.post("/Groups", group_body("G"))
    status, _ = scim_a.ops(
        f"/Groups/{group['id']}",
        {"op": "replace", "path": "displayName", "value": "Renamed"},
        {"op": "add", "path": "members", "value": [{"value": user["id"]}]},
        {"op": "add", "path": "members", "value": [{"value": str(uuid.uuid4())}]},
    )
    assert status == 400
    assert DirectoryGroup.objects.get(pk=group["id"]).display_name == "G" and _members(group["id"]) == set()


def test_put_group_replaces_name_and_members_or_keeps_members_when_absent(scim_a: Scim) -> None:
    u1 = scim_a.post("/Users", user_body("a@x.io"))[1]["id"]
    u2 = scim_a.post("/Users", user_body("b@x.io"))[1]["id"]
    _, group = scim_a.post("/Groups", group_body("G", [u1]))
    status, put = scim_a.put(f"/Groups/{group['id']}", group_body("G2", [u2]))
    assert status == 200 and [m["value"] for m in put["members"]] == [u2]
    status, put = scim_a.put(f"/Groups/{group['id']}", group_body("G3"))
    assert status == 200 and _members(group["id"]) == {u2} and put["displayName"] == "G3"


def test_delete_group_removes_memberships_and_records_group_deleted(scim_hooked: Scim, users: list[str]) -> None:
    _, group = scim_hooked.post("/Groups", group_body("G", users[:2]))
    assert scim_hooked.delete(f"/Groups/{group['id']}") == (204, None)
    assert not GroupMembership.objects.filter(group_id=group["id"]).exists()
    assert _events(scim_hooked.directory)[-1]["event"] == "group.deleted"
    assert scim_hooked.get(f"/Groups/{group['id']}")[0] == 404


@pytest.mark.parametrize(
    ("operation", "scim_type"),
    [
        ({"op": "add", "path": 'members[value eq "x"]', "value": [{"value": "x"}]}, "invalidPath"),
        ({"op": "remove", "path": 'members[display eq "x"]'}, "invalidPath"),
        ({"op": "replace", "path": "nonsense", "value": "x"}, "invalidPath"),
        ({"op": "remove"}, "noTarget"),
        ({"op": "replace", "path": "id", "value": "x"}, "mutability"),
        ({"op": "merge", "path": "displayName", "value": "x"}, "invalidSyntax"),
        ({"op": "replace", "path": "displayName", "value": ""}, "invalidValue"),
        ({"op": "replace", "path": "displayName"}, "invalidValue"),
    ],
)
def test_bad_group_patches(scim_a: Scim, operation: dict, scim_type: str) -> None:
    _, group = scim_a.post("/Groups", group_body("G"))
    status, body = scim_a.ops(f"/Groups/{group['id']}", operation)
    assert status == 400, body
    assert body["scimType"] == scim_type
    assert DirectoryGroup.objects.get(pk=group["id"]).display_name == "G"


def test_adding_a_user_of_no_directory_rejects_the_whole_patch(scim_hooked: Scim, users: list[str]) -> None:
    # The known user is not added either: checking and inserting share one statement on PostgreSQL,
    # and the rejection rolls the insert back.
    _, group = scim_hooked.post("/Groups", group_body("Eng"))
    stranger = str(uuid.uuid4())
    status, body = scim_hooked.ops(
        f"/Groups/{group['id']}", {"op": "add", "path": "members", "value": [{"value": users[0]}, {"value": stranger}]}
    )
    assert status == 400 and body["scimType"] == "invalidValue" and stranger in body["detail"]
    assert _members(group["id"]) == set()
    assert [e["event"] for e in _events(scim_hooked.directory) if e["event"].startswith("group.")] == ["group.created"]
