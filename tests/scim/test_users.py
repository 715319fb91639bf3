"""Users: create, read, list/paging, replace, delete — HTTP answer, database row and events."""

from __future__ import annotations

import orjson
import pytest

from core.timefmt import iso_utc
from directories.models import DirectoryUser, GroupMembership
from tests.scim.conftest import ENTERPRISE_URN, LIST_URN, USER_URN, Scim, group_body, user_body
from webhooks.models import WebhookEvent


def _events(directory) -> list[dict]:  # noqa: ANN001
    return [orjson.loads(e.body) for e in WebhookEvent.objects.filter(directory_id=directory.id).order_by("created_at")]


def test_create_user_answers_201_with_location_meta_and_stores_columns(scim_a: Scim) -> None:
    body = user_body("Jane@Example.com", externalId="00u1", password="hunter2", nickName="JJ")
    body[ENTERPRISE_URN] = {"employeeNumber": "42", "department": "R&D"}
    status, user = scim_a.post("/Users", body)
    assert status == 201
    assert scim_a.last["Location"] == user["meta"]["location"]
    assert user["meta"]["resourceType"] == "User" and user["meta"]["created"] and user["meta"]["lastModified"]
    assert user["userName"] == "Jane@Example.com" and user["active"] is True
    assert user[ENTERPRISE_URN]["employeeNumber"] == "42" and user["nickName"] == "JJ"
    assert "password" not in user
    row = DirectoryUser.objects.get(pk=user["id"])
    assert (row.first_name, row.last_name, row.email, row.active, row.external_id) == (
        "Jane",
        "Doe",
        "Jane@Example.com",
        True,
        "00u1",
    )
    assert row.raw["id"] == user["id"] and "password" not in row.raw
    assert "hunter2" not in orjson.dumps(row.raw).decode()


def test_create_user_without_active_defaults_to_true(scim_a: Scim) -> None:
    status, user = scim_a.post("/Users", {"schemas": [USER_URN], "userName": "x@y.z"})
    assert status == 201 and user["active"] is True
    row = DirectoryUser.objects.get(pk=user["id"])
    assert row.active is True and row.email == "x@y.z" and row.first_name == ""


def test_email_column_is_primary_then_first_then_username(scim_a: Scim) -> None:
    emails = [{"value": "first@x.io", "type": "home"}, {"value": "prim@x.io", "primary": True}]
    _, user = scim_a.post("/Users", user_body("u1", emails=emails))
    assert DirectoryUser.objects.get(pk=user["id"]).email == "prim@x.io"
    _, user = scim_a.post("/Users", user_body("u2", emails=[{"value": "first@x.io"}]))
    assert DirectoryUser.objects.get(pk=user["id"]).email == "first@x.io"
    _, user = scim_a.post("/Users", user_body("u3", emails=[]))
    assert DirectoryUser.objects.get(pk=user["id"]).email == "u3"


def test_duplicate_username_is_409_uniqueness_case_insensitive(scim_a: Scim) -> None:
    assert scim_a.post("/Users", user_body("dup@example.com"))[0] == 201
    status, body = scim_a.post("/Users", user_body("DUP@EXAMPLE.COM"))
    assert status == 409
    assert body == {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:Error"],
        "status": "409",
        "scimType": "uniqueness",
        "detail": body["detail"],
    }
    assert DirectoryUser.objects.filter(user_name_key="dup@example.com").count() == 1


def test_same_username_in_two_directories_is_allowed(scim_a: Scim, scim_b: Scim) -> None:
    assert scim_a.post("/Users", user_body("same@example.com"))[0] == 201
    assert scim_b.post("/Users", user_body("same@example.com"))[0] == 201


def test_get_user_of_other_directory_is_404(scim_a: Scim, scim_b: Scim) -> None:
    _, user = scim_a.post("/Users", user_body())
    assert scim_a.get(f"/Users/{user['id']}")[0] == 200
    status, body = scim_b.get(f"/Users/{user['id']}")
    assert status == 404 and body["status"] == "404"
    assert scim_b.put(f"/Users/{user['id']}", user_body())[0] == 404
    assert scim_b.delete(f"/Users/{user['id']}")[0] == 404
    assert DirectoryUser.objects.filter(pk=user["id"]).exists()


def test_list_paging_is_stable_and_counts_truly(scim_a: Scim) -> None:
    ids = [scim_a.post("/Users", user_body(f"user{i:02}@x.io"))[1]["id"] for i in range(7)]
    status, page = scim_a.get("/Users?startIndex=3&count=2")
    assert status == 200
    assert page["schemas"] == [LIST_URN]
    assert (page["totalResults"], page["itemsPerPage"], page["startIndex"]) == (7, 2, 3)
    assert [r["id"] for r in page["Resources"]] == ids[2:4]
    _, all_pages = scim_a.get("/Users?startIndex=0&count=100")
    assert [r["id"] for r in all_pages["Resources"]] == ids and all_pages["startIndex"] == 1
    _, zero = scim_a.get("/Users?count=0")
    assert zero["totalResults"] == 7 and zero["Resources"] == [] and zero["itemsPerPage"] == 0
    _, negative = scim_a.get("/Users?count=-5")
    assert negative["totalResults"] == 7 and negative["itemsPerPage"] == 0
    _, beyond = scim_a.get("/Users?startIndex=50&count=10")
    assert beyond["totalResults"] == 7 and beyond["Resources"] == []


def test_count_is_capped_at_advertised_max(scim_a: Scim, settings) -> None:  # noqa: ANN001
    settings.SCIM_MAX_RESULTS = 2
    for i in range(3):
        scim_a.post("/Users", user_body(f"cap{i}@x.io"))
    _, page = scim_a.get("/Users?count=500")
    assert page["itemsPerPage"] == 2 and page["totalResults"] == 3
    assert scim_a.get("/ServiceProviderConfig")[1]["filter"]["maxResults"] == 2


@pytest.mark.parametrize("param", ["count=abc", "startIndex=1.5", "startIndex=x"])
def test_non_numeric_paging_is_400(scim_a: Scim, param: str) -> None:
    status, body = scim_a.get(f"/Users?{param}")
    assert status == 400 and body["scimType"] == "invalidValue"


def test_attributes_and_excluded_attributes(scim_a: Scim) -> None:
    body = user_body("attr@x.io", title="CTO")
    body[ENTERPRISE_URN] = {"department": "R&D", "employeeNumber": "7"}
    _, user = scim_a.post("/Users", body)
    _, only = scim_a.get(f"/Users/{user['id']}?attributes=userName,name.givenName,{ENTERPRISE_URN}:department")
    assert set(only) == {"schemas", "id", "userName", "name", ENTERPRISE_URN}
    assert only["name"] == {"givenName": "Jane"} and only[ENTERPRISE_URN] == {"department": "R&D"}
    _, without = scim_a.get(f"/Users/{user['id']}?excludedAttributes=emails,title,id")
    assert "emails" not in without and "title" not in without and without["id"] == user["id"]
    _, listed = scim_a.get("/Users?attributes=USERNAME")
    assert set(listed["Resources"][0]) == {"schemas", "id", "userName"}


def test_put_replaces_user_and_keeps_active_when_omitted(scim_hooked: Scim) -> None:
    _, user = scim_hooked.post("/Users", user_body("put@x.io", title="Old"))
    scim_hooked.ops(f"/Users/{user['id']}", {"op": "replace", "value": {"active": False}})
    replacement = {"schemas": [USER_URN], "userName": "put@x.io", "name": {"givenName": "New", "familyName": "Name"}}
    status, put = scim_hooked.put(f"/Users/{user['id']}", replacement)
    assert status == 200
    assert put["active"] is False  # decision: omitted active is not asserted (RFC 7644 §3.5.1)
    assert "title" not in put and "emails" not in put
    row = DirectoryUser.objects.get(pk=user["id"])
    assert (row.first_name, row.active, row.email) == ("New", False, "put@x.io")
    assert [e["event"] for e in _events(scim_hooked.directory)] == ["user.created", "user.updated", "user.updated"]


def test_put_with_identical_data_records_no_event(scim_hooked: Scim) -> None:
    body = user_body("same@x.io")
    _, user = scim_hooked.post("/Users", body)
    before = DirectoryUser.objects.get(pk=user["id"]).updated_at
    status, _ = scim_hooked.put(f"/Users/{user['id']}", body | {"id": user["id"], "meta": {"x": 1}})
    assert status == 200
    assert [e["event"] for e in _events(scim_hooked.directory)] == ["user.created"]
    assert DirectoryUser.objects.get(pk=user["id"]).updated_at == before


def test_put_rename_to_existing_username_is_409_and_changes_nothing(scim_a: Scim) -> None:
    scim_a.post("/Users", user_body("taken@x.io"))
    _, user = scim_a.post("/Users", user_body("mine@x.io"))
    status, body = scim_a.put(f"/Users/{user['id']}", user_body("TAKEN@x.io"))
    assert status == 409 and body["scimType"] == "uniqueness"
    assert DirectoryUser.objects.get(pk=user["id"]).user_name == "mine@x.io"


def test_delete_user_removes_memberships_and_sends_user_deleted_only(scim_hooked: Scim) -> None:
    _, user = scim_hooked.post("/Users", user_body())
    _, group = scim_hooked.post("/Groups", group_body("G", [user["id"]]))
    status, body = scim_hooked.delete(f"/Users/{user['id']}")
    assert status == 204 and body is None
    assert not DirectoryUser.objects.filter(pk=user["id"]).exists()
    assert not GroupMembership.objects.filter(group_id=group["id"]).exists()
    events = _events(scim_hooked.directory)
    assert [e["event"] for e in events] == ["user.created", "group.created", "group.user_added", "user.deleted"]
    assert events[-1]["data"]["id"] == user["id"] and events[-1]["data"]["raw"]["userName"] == "jane@example.com"
    assert scim_hooked.get(f"/Users/{user['id']}")[0] == 404
    assert scim_hooked.delete(f"/Users/{user['id']}")[0] == 404


def test_event_payload_matches_spec(scim_hooked: Scim) -> None:
    _, user = scim_hooked.post("/Users", user_body())
    (event,) = _events(scim_hooked.directory)
    directory = scim_hooked.directory
    assert event["event"] == "user.created"
    assert event["directory_id"] == str(directory.id) and event["tenant"] == "initech"
    row = DirectoryUser.objects.get(pk=user["id"])
    assert event["data"] == {
        "id": user["id"],
        "first_name": "Jane",
        "last_name": "Doe",
        "email": "jane@example.com",
        "active": True,
        "raw": row.raw,
        "created_at": iso_utc(row.created_at),
        "updated_at": iso_utc(row.updated_at),
        "custom_attributes": {},
        "roles": [],
    }


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"schemas": [USER_URN]}, "userName"),
        ({"userName": ""}, "userName"),
        ({"userName": 42}, "userName"),
        ({"userName": "a" * 600}, "userName"),
        ({"userName": "a", "active": "maybe"}, "active"),
        ({"userName": "a", "active": 1}, "active"),
        ({"userName": "a", "emails": "a@b.c"}, "emails"),
        ({"userName": "a", "emails": ["a@b.c"]}, "emails"),
        ({"userName": "a", "name": "Jane Doe"}, "name"),
        ({"userName": "a", "name": {"givenName": 5}}, "name.givenName"),
        ({"userName": "a", "externalId": 5}, "externalId"),
        ({"userName": "a", "title": ["x"]}, "title"),
    ],
)
def test_invalid_user_bodies_are_400_invalid_value(scim_a: Scim, body: dict, fragment: str) -> None:
    status, error = scim_a.post("/Users", body)
    assert status == 400, error
    assert error["scimType"] == "invalidValue" and fragment in error["detail"]
    assert not DirectoryUser.objects.exists()


def test_entra_string_active_is_coerced_on_create(scim_a: Scim) -> None:
    status, user = scim_a.post("/Users", user_body("s@x.io", active="False"))
    assert status == 201 and user["active"] is False
    assert DirectoryUser.objects.get(pk=user["id"]).raw["active"] is False
