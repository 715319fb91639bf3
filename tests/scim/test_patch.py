"""User PATCH (RFC 7644 §3.5.2) with Okta and Entra forms; atomicity and error types."""

from __future__ import annotations

import pytest

from directories.models import DirectoryUser
from tests.scim.conftest import ENTERPRISE_URN, Scim, user_body


@pytest.fixture
def user(scim_a: Scim) -> dict:
    body = user_body("pat@x.io", externalId="e1")
    body["emails"] = [{"value": "pat@x.io", "type": "work", "primary": True}, {"value": "pat@home.io", "type": "home"}]
    return scim_a.post("/Users", body)[1]


def _row(user: dict) -> DirectoryUser:
    return DirectoryUser.objects.get(pk=user["id"])


def test_okta_deactivation_without_path(scim_a: Scim, user: dict) -> None:
    status, body = scim_a.ops(f"/Users/{user['id']}", {"op": "replace", "value": {"active": False}})
    assert status == 200 and body["active"] is False and _row(user).active is False
    assert scim_a.get(f"/Users/{user['id']}")[1]["active"] is False  # soft delete stays readable (E9)


@pytest.mark.parametrize("value", ["False", "false", False])
def test_entra_active_strings_and_booleans(scim_a: Scim, user: dict, value: object) -> None:
    status, body = scim_a.ops(f"/Users/{user['id']}", {"op": "Replace", "path": "active", "value": value})
    assert status == 200 and body["active"] is False and _row(user).raw["active"] is False


def test_entra_active_maybe_is_400_invalid_value(scim_a: Scim, user: dict) -> None:
    status, body = scim_a.ops(f"/Users/{user['id']}", {"op": "Replace", "path": "active", "value": "maybe"})
    assert status == 400 and body["scimType"] == "invalidValue" and _row(user).active is True


def test_entra_pathless_replace_with_dotted_keys(scim_a: Scim, user: dict) -> None:
    status, body = scim_a.ops(
        f"/Users/{user['id']}",
        {
            "op": "Replace",
            "value": {
                "displayName": "Pat P",
                "name.givenName": "Patricia",
                "name.familyName": "Prime",
                f"{ENTERPRISE_URN}:employeeNumber": "99",
                "active": "False",
            },
        },
    )
    assert status == 200
    assert body["name"] == {"givenName": "Patricia", "familyName": "Prime"} and body["displayName"] == "Pat P"
    assert body[ENTERPRISE_URN] == {"employeeNumber": "99"} and ENTERPRISE_URN in body["schemas"]
    row = _row(user)
    assert (row.first_name, row.last_name, row.active) == ("Patricia", "Prime", False)


def test_replace_work_email_by_value_path(scim_a: Scim, user: dict) -> None:
    status, body = scim_a.ops(
        f"/Users/{user['id']}", {"op": "replace", "path": 'emails[type eq "work"].value', "value": "new@x.io"}
    )
    assert status == 200
    assert {"value": "new@x.io", "type": "work", "primary": True} in body["emails"]
    assert _row(user).email == "new@x.io"
    assert scim_a.get("/Users?filter=emails.value%20eq%20%22new@x.io%22")[1]["totalResults"] == 1


def test_e4_replace_work_email_when_none_exists_adds_one(scim_a: Scim) -> None:
    _, user = scim_a.post("/Users", user_body("nowork@x.io", emails=[{"value": "h@x.io", "type": "home"}]))
    status, body = scim_a.ops(
        f"/Users/{user['id']}", {"op": "replace", "path": 'emails[type eq "work"].value', "value": "w@x.io"}
    )
    assert status == 200
    assert body["emails"] == [{"value": "h@x.io", "type": "home"}, {"type": "work", "value": "w@x.io"}]


def test_replace_with_unbuildable_filter_and_no_match_is_no_target(scim_a: Scim, user: dict) -> None:
    status, body = scim_a.ops(
        f"/Users/{user['id']}", {"op": "replace", "path": 'emails[value co "zzz"].value', "value": "a@b.c"}
    )
    assert status == 400 and body["scimType"] == "noTarget"


def test_add_sub_attribute_and_remove_paths(scim_a: Scim, user: dict) -> None:
    uid = user["id"]
    assert (
        scim_a.ops(f"/Users/{uid}", {"op": "add", "path": "name.middleName", "value": "Q"})[1]["name"]["middleName"]
        == "Q"
    )
    _, body = scim_a.ops(f"/Users/{uid}", {"op": "remove", "path": 'emails[type eq "home"]'})
    assert [e["type"] for e in body["emails"]] == ["work"]
    _, body = scim_a.ops(f"/Users/{uid}", {"op": "remove", "path": "name.givenName"})
    assert "givenName" not in body["name"] and _row(user).first_name == ""
    _, body = scim_a.ops(f"/Users/{uid}", {"op": "remove", "path": "externalId"})
    assert "externalId" not in body and _row(user).external_id is None


def test_add_multi_valued_appends_and_moves_primary(scim_a: Scim, user: dict) -> None:
    _, body = scim_a.ops(
        f"/Users/{user['id']}",
        {"op": "add", "path": "emails", "value": [{"value": "p2@x.io", "type": "other", "primary": True}]},
    )
    assert len(body["emails"]) == 3
    assert [e.get("primary") for e in body["emails"]] == [False, None, True]
    assert _row(user).email == "p2@x.io"


def test_replace_username_updates_key_and_conflicts_are_409(scim_a: Scim, user: dict) -> None:
    scim_a.post("/Users", user_body("other@x.io"))
    _, body = scim_a.ops(f"/Users/{user['id']}", {"op": "replace", "path": "userName", "value": "Renamed@X.io"})
    assert body["userName"] == "Renamed@X.io" and _row(user).user_name_key == "renamed@x.io"
    status, body = scim_a.ops(f"/Users/{user['id']}", {"op": "replace", "path": "userName", "value": "OTHER@x.io"})
    assert status == 409 and body["scimType"] == "uniqueness"


def test_password_patch_is_accepted_and_never_stored(scim_a: Scim, user: dict) -> None:
    status, body = scim_a.ops(f"/Users/{user['id']}", {"op": "replace", "path": "password", "value": "s3cret!"})
    assert status == 200 and "password" not in body
    assert "s3cret!" not in str(_row(user).raw)


def test_entra_manager_string_becomes_reference(scim_a: Scim, user: dict) -> None:
    _, body = scim_a.ops(f"/Users/{user['id']}", {"op": "Add", "path": f"{ENTERPRISE_URN}:manager", "value": "mgr-1"})
    assert body[ENTERPRISE_URN]["manager"] == {"value": "mgr-1"}
    _, body = scim_a.ops(f"/Users/{user['id']}", {"op": "Remove", "path": f"{ENTERPRISE_URN}:manager"})
    assert "manager" not in body[ENTERPRISE_URN]


def test_patch_is_atomic(scim_a: Scim, user: dict) -> None:
    status, _ = scim_a.ops(
        f"/Users/{user['id']}",
        {"op": "replace", "path": "name.givenName", "value": "Changed"},
        {"op": "replace", "path": "unknownThing", "value": "x"},
    )
    assert status == 400 and _row(user).first_name == "Jane"


@pytest.mark.parametrize(
    ("operation", "scim_type"),
    [
        ({"op": "remove"}, "noTarget"),
        ({"op": "replace", "path": "unknownAttr", "value": 1}, "invalidPath"),
        ({"op": "replace", "path": "name.nickname", "value": "x"}, "invalidPath"),
        ({"op": "replace", "path": "emails[type eq", "value": "x"}, "invalidPath"),
        ({"op": "replace", "path": "id", "value": "x"}, "mutability"),
        ({"op": "replace", "path": "groups", "value": []}, "mutability"),
        ({"op": "jump", "path": "title", "value": "x"}, "invalidSyntax"),
        ({"op": "replace", "value": "not an object"}, "invalidValue"),
        ({"op": "replace", "path": "userName", "value": ""}, "invalidValue"),
        ({"op": "replace", "path": "emails", "value": "x@y.z"}, "invalidValue"),
        ({"op": "add", "path": "title"}, "invalidValue"),
        ({"op": "replace", "path": 7, "value": "x"}, "invalidPath"),
    ],
)
def test_bad_user_patches(scim_a: Scim, user: dict, operation: dict, scim_type: str) -> None:
    before = _row(user).raw
    status, body = scim_a.ops(f"/Users/{user['id']}", operation)
    assert status == 400, body
    assert body["scimType"] == scim_type
    assert _row(user).raw == before


@pytest.mark.parametrize(
    "body",
    [
        {"Operations": []},
        {"schemas": ["urn:wrong"], "Operations": [{"op": "add", "path": "title", "value": "x"}]},
        {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"]},
        {"Operations": ["add"]},
        [],
    ],
)
def test_malformed_patch_bodies_are_400_invalid_syntax(scim_a: Scim, user: dict, body: object) -> None:
    status, error = scim_a.patch(f"/Users/{user['id']}", body)
    assert status == 400 and error["scimType"] == "invalidSyntax"


def test_patch_unknown_user_is_404(scim_a: Scim) -> None:
    status, body = scim_a.ops("/Users/00919288221112222", {"op": "replace", "path": "title", "value": "x"})
    assert status == 404 and body["detail"]
