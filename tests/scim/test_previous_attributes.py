"""`previous_attributes` on `user.updated` and `group.updated` (contract §5.1): the earlier value of each
visible field that changed, and of each top-level `raw` key that changed, beside `data` in the payload.

These run on every store: on SQLite the portable locked path; on PostgreSQL (real commits, outside any
transaction) the single-statement writes, their fallback to the locked path when the row changed
between the read and the write, and, through the embedding API inside a caller's transaction, the
PostgreSQL locked path.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from django.db import connection, transaction
from django.utils import timezone

from directories.models import Directory, DirectoryUser
from directories.rendering import previous_attributes
from scim.api import scim_request
from scim.storage import postgres
from tests.scim.conftest import ENTERPRISE_URN, Scim, group_body, user_body
from webhooks.models import WebhookEvent


def _payloads(directory: Directory, event_type: str) -> list[dict[str, Any]]:
    rows = WebhookEvent.objects.filter(directory_id=directory.id, event_type=event_type).order_by("created_at", "id")
    return [orjson.loads(row.body) for row in rows]


def _last(directory: Directory, event_type: str) -> dict[str, Any]:
    return _payloads(directory, event_type)[-1]


def _replace(path: str, value: Any) -> dict[str, Any]:
    return {"op": "replace", "path": path, "value": value}


# --- the comparison itself -------------------------------------------------------------------------


def test_comparison_keeps_changed_fields_and_raw_keys_only() -> None:
    before = {
        "id": "u1",
        "first_name": "Ann",
        "last_name": "Lee",
        "email": "ann@x.io",
        "active": True,
        "raw": {"id": "u1", "userName": "ann@x.io", "title": "Eng", "nickName": "A", "meta": {"v": 1}},
        "updated_at": "2024-01-01T00:00:00.000Z",
        "custom_attributes": {"dept": None},
        "roles": [],
    }
    after = before | {
        "last_name": "Kim",
        "active": False,
        "raw": {"id": "u1", "userName": "ann@x.io", "title": "CTO", "locale": "fr", "meta": {"v": 2}},
        "updated_at": "2024-01-02T00:00:00.000Z",
        "custom_attributes": {"dept": "R&D"},
    }
    assert previous_attributes(before, after) == {
        "last_name": "Lee",
        "active": True,
        "custom_attributes": {"dept": None},
        "raw": {"title": "Eng", "nickName": "A", "locale": None},
    }
    assert previous_attributes(before, before) == {}


def test_comparison_tells_json_types_apart() -> None:
    # Python's == takes true for 1: as JSON they differ, so the change is reported.
    before = {"id": "g", "name": "G", "raw": {"x": 1, "y": 1}}
    after = {"id": "g", "name": "G", "raw": {"x": True, "y": 1.0}}
    assert previous_attributes(before, after) == {"raw": {"x": 1, "y": 1}}
    # A reordered object is the same JSON value.
    assert previous_attributes({"raw": {"o": {"a": 1, "b": 2}}}, {"raw": {"o": {"b": 2, "a": 1}}}) == {}


# --- users ------------------------------------------------------------------------------------------


def test_user_patch_carries_the_earlier_values_beside_data(scim_hooked: Scim) -> None:
    _, user = scim_hooked.post("/Users", user_body("ann@x.io", title="Engineer"))
    status, _ = scim_hooked.ops(
        f"/Users/{user['id']}",
        _replace("name.familyName", "Smith"),
        _replace("title", "Director"),
        {"op": "add", "path": "nickName", "value": "Annie"},
    )
    assert status == 200
    payload = _last(scim_hooked.directory, "user.updated")
    assert payload["data"]["last_name"] == "Smith"
    assert "previous_attributes" not in payload["data"]
    assert payload["previous_attributes"] == {
        "last_name": "Doe",
        "raw": {"name": {"givenName": "Jane", "familyName": "Doe"}, "title": "Engineer", "nickName": None},
    }
    # The body sent keeps the contract's order: "sequence" after "created_at", previous_attributes last.
    assert list(payload) == [
        "id",
        "event",
        "created_at",
        "sequence",
        "directory_id",
        "tenant",
        "product",
        "data",
        "previous_attributes",
    ]
    assert payload["sequence"] == 2  # the user's creation was 1


def test_user_deactivation_and_email_change(scim_hooked: Scim) -> None:
    _, user = scim_hooked.post("/Users", user_body("bob@x.io"))
    body = user_body("bob@x.io", active=False, emails=[{"primary": True, "value": "robert@x.io"}])
    status, _ = scim_hooked.put(f"/Users/{user['id']}", body)
    assert status == 200
    previous = _last(scim_hooked.directory, "user.updated")["previous_attributes"]
    assert previous == {
        "email": "bob@x.io",
        "active": True,
        "raw": {"active": True, "emails": [{"primary": True, "value": "bob@x.io", "type": "work"}]},
    }


def test_removed_raw_key_gives_its_old_value_and_no_meta_or_updated_at(scim_hooked: Scim) -> None:
    _, user = scim_hooked.post("/Users", user_body("cy@x.io", externalId="ext-1"))
    scim_hooked.ops(f"/Users/{user['id']}", {"op": "remove", "path": "externalId"})
    previous = _last(scim_hooked.directory, "user.updated")["previous_attributes"]
    assert previous == {"raw": {"externalId": "ext-1"}}


def test_custom_attributes_change_with_raw(scim_hooked: Scim) -> None:
    directory = scim_hooked.directory
    directory.attribute_map = {"department": f"{ENTERPRISE_URN}:department"}
    directory.role_map = {"Engineering": "dev"}
    directory.save(update_fields=["attribute_map", "role_map"])
    _, user = scim_hooked.post("/Users", user_body("dee@x.io", **{ENTERPRISE_URN: {"department": "R&D"}}))
    scim_hooked.post("/Groups", group_body("Engineering", members=[user["id"]]))
    scim_hooked.ops(f"/Users/{user['id']}", _replace(f"{ENTERPRISE_URN}:department", "Sales"))
    payload = _last(directory, "user.updated")
    assert payload["data"]["custom_attributes"] == {"department": "Sales"}
    assert payload["data"]["roles"] == ["dev"]  # unchanged by a user write: not among the previous values
    assert payload["previous_attributes"] == {
        "custom_attributes": {"department": "R&D"},
        "raw": {ENTERPRISE_URN: {"department": "R&D"}},
    }


def test_no_visible_change_means_no_event(scim_hooked: Scim) -> None:
    body = user_body("eve@x.io")
    _, user = scim_hooked.post("/Users", body)
    scim_hooked.put(f"/Users/{user['id']}", body)
    assert _payloads(scim_hooked.directory, "user.updated") == []


def test_every_user_updated_carries_the_field(scim_hooked: Scim) -> None:
    _, user = scim_hooked.post("/Users", user_body("fay@x.io"))
    for title in ("a", "b", "c"):
        scim_hooked.ops(f"/Users/{user['id']}", _replace("title", title))
    previous = [p["previous_attributes"] for p in _payloads(scim_hooked.directory, "user.updated")]
    assert previous == [{"raw": {"title": None}}, {"raw": {"title": "a"}}, {"raw": {"title": "b"}}]
    scim_hooked.delete(f"/Users/{user['id']}")
    for event_type in ("user.created", "user.deleted"):
        [payload] = _payloads(scim_hooked.directory, event_type)
        assert "previous_attributes" not in payload


# --- groups -----------------------------------------------------------------------------------------


def test_group_rename_carries_the_old_name(scim_hooked: Scim) -> None:
    _, group = scim_hooked.post("/Groups", group_body("Sales", externalId="g-1"))
    status, _ = scim_hooked.ops(f"/Groups/{group['id']}", _replace("displayName", "Revenue"))
    assert status in (200, 204)
    payload = _last(scim_hooked.directory, "group.updated")
    assert payload["data"]["name"] == "Revenue"
    assert payload["previous_attributes"] == {"name": "Sales", "raw": {"displayName": "Sales"}}


def test_group_put_with_members_reports_only_the_groups_own_fields(scim_hooked: Scim) -> None:
    _, user = scim_hooked.post("/Users", user_body("gil@x.io"))
    _, group = scim_hooked.post("/Groups", group_body("Ops"))
    status, _ = scim_hooked.put(f"/Groups/{group['id']}", group_body("Ops", members=[user["id"]], externalId="x9"))
    assert status == 200
    [updated] = _payloads(scim_hooked.directory, "group.updated")
    assert updated["previous_attributes"] == {"raw": {"externalId": None}}
    [added] = _payloads(scim_hooked.directory, "group.user_added")
    assert "previous_attributes" not in added


def test_member_only_patch_records_no_group_updated(scim_hooked: Scim) -> None:
    _, user = scim_hooked.post("/Users", user_body("hal@x.io"))
    _, group = scim_hooked.post("/Groups", group_body("Support"))
    scim_hooked.ops(f"/Groups/{group['id']}", {"op": "add", "path": "members", "value": [{"value": user["id"]}]})
    assert _payloads(scim_hooked.directory, "group.updated") == []
    assert len(_payloads(scim_hooked.directory, "group.user_added")) == 1


# --- the other stores -------------------------------------------------------------------------------


def test_embedding_api_inside_a_callers_transaction(
    hooked_directory: Directory, django_capture_on_commit_callbacks
) -> None:  # noqa: ANN001
    def request(**fields: Any) -> dict[str, Any]:
        return scim_request(
            {"directoryId": str(hooked_directory.id), "apiSecret": hooked_directory.scim_secret, **fields},
            callback=seen.append,
        )

    seen: list[dict[str, Any]] = []
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        created = request(method="POST", resourceType="users", body=user_body("ida@x.io"))
        user_id = created["data"]["id"]
        request(
            method="PATCH",
            resourceType="users",
            resourceId=user_id,
            body={"Operations": [_replace("name.givenName", "Ida")]},
        )
    [updated] = [p for p in seen if p["event"] == "user.updated"]
    assert updated["previous_attributes"] == {
        "first_name": "Jane",
        "raw": {"name": {"givenName": "Jane", "familyName": "Doe"}},
    }


@pytest.mark.postgres
def test_statement_fallback_compares_with_the_row_it_changed(
    scim_hooked: Scim, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another write lands between the statement path's read and its UPDATE: the locked path redoes the
    request, and its previous values are those of the row it changed, not of the stale read."""
    if connection.vendor != "postgresql":
        pytest.skip("the single-statement writes are PostgreSQL's")
    _, user = scim_hooked.post("/Users", user_body("jo@x.io", title="one"))
    real = postgres.user_update_statement

    def meanwhile(**kwargs: Any) -> Any:
        row = DirectoryUser.objects.get(pk=user["id"])
        DirectoryUser.objects.filter(pk=row.pk).update(raw={**row.raw, "title": "two"}, updated_at=timezone.now())
        monkeypatch.setattr(postgres, "user_update_statement", real)
        return real(**kwargs)

    monkeypatch.setattr(postgres, "user_update_statement", meanwhile)
    status, _ = scim_hooked.ops(f"/Users/{user['id']}", _replace("title", "three"))
    assert status == 200
    [updated] = _payloads(scim_hooked.directory, "user.updated")
    assert updated["data"]["raw"]["title"] == "three"
    assert updated["previous_attributes"] == {"raw": {"title": "two"}}
