"""Replays of what real identity providers send: Okta's SCIM 2.0 SPEC test, Microsoft's SCIM Validator
(Entra ID with and without ?aadOptscim062020), OneLogin and JumpCloud quirks. Status, body and database."""

from __future__ import annotations

import time
import uuid
from urllib.parse import quote

import pytest

from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from tests.scim.conftest import ENTERPRISE_URN, ERROR_URN, LIST_URN, PATCH_URN, USER_URN, Scim

MS_GROUP_URN = "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group"


def _members(gid: str) -> set[str]:
    return {str(u) for u in GroupMembership.objects.filter(group_id=gid).values_list("user_id", flat=True)}


def test_okta_spec_test_sequence(scim_a: Scim) -> None:
    okta_json = {"content_type": "application/json"}  # the SPEC test POSTs with application/json
    seed = {
        "schemas": [USER_URN],
        "userName": "seed@atko.com",
        "name": {"givenName": "Seed", "familyName": "User"},
        "emails": [{"primary": True, "value": "seed@atko.com", "type": "work"}],
        "active": True,
    }
    assert scim_a.post("/Users", seed, **okta_json)[0] == 201
    # O1
    status, page = scim_a.get("/Users?count=1&startIndex=1", HTTP_ACCEPT="application/scim+json")
    assert status == 200 and LIST_URN in page["schemas"]
    assert all(isinstance(page[k], int) for k in ("totalResults", "itemsPerPage", "startIndex"))
    first = page["Resources"][0]
    assert first["id"] and first["userName"] and first["name"]["givenName"] and first["name"]["familyName"]
    assert first["emails"][0]["value"] and first["active"] is True
    # O2
    status, one = scim_a.get(f"/Users/{first['id']}")
    assert status == 200 and one["id"] == first["id"]
    # O3
    status, none = scim_a.get(
        "/Users?filter=userName%20eq%20%22" + uuid.uuid4().hex + "%40atko.com%22&startIndex=1&count=100"
    )
    assert status == 200 and none["totalResults"] == 0
    # O4
    for bogus in ("010101001010101011001010101011", "00919288221112222"):
        status, error = scim_a.get(f"/Users/{bogus}")
        assert status == 404 and ERROR_URN in error["schemas"] and error["detail"]
    # O5
    body = {
        "schemas": [USER_URN],
        "userName": "Runscope1@atko.com",
        "name": {"givenName": "Runscope", "familyName": "Tester"},
        "emails": [{"primary": True, "value": "Runscope1@atko.com", "type": "work"}],
        "active": True,
        "password": "pw1!",
        "groups": [],
    }
    status, created = scim_a.post("/Users", body, **okta_json)
    assert status == 201 and created["id"] and created["active"] is True and USER_URN in created["schemas"]
    assert created["name"] == {"givenName": "Runscope", "familyName": "Tester"} and "password" not in created
    # O6
    status, dup = scim_a.post("/Users", body, **okta_json)
    assert status == 409 and dup["scimType"] == "uniqueness" and dup["status"] == "409"
    # O7 (decision: case-insensitive userName)
    status, upper = scim_a.get("/Users?filter=" + quote('userName eq "RUNSCOPE1@ATKO.COM"'))
    assert status == 200 and upper["totalResults"] == 1
    # O8
    started = time.monotonic()
    assert scim_a.get("/Groups")[0] == 200
    assert time.monotonic() - started < 0.6
    # O9
    response = scim_a.client.get(f"{scim_a.base}/Users", HTTP_AUTHORIZATION="non-token")
    assert response.status_code == 401 and b'"status":"401"' in response.content
    # O10: deactivation by PATCH, then an AIW-style PUT without active
    status, deactivated = scim_a.ops(f"/Users/{created['id']}", {"op": "replace", "value": {"active": False}})
    assert status == 200 and deactivated["active"] is False
    put = {k: v for k, v in body.items() if k != "active"} | {
        "id": created["id"],
        "name": {"givenName": "R", "familyName": "T"},
    }
    status, replaced = scim_a.put(f"/Users/{created['id']}", put)
    assert status == 200 and replaced["active"] is False and replaced["name"]["givenName"] == "R"
    assert DirectoryUser.objects.get(pk=created["id"]).active is False


def test_okta_paging_order_is_independent_of_page_size(scim_a: Scim) -> None:
    for i in range(25):
        scim_a.post("/Users", {"userName": f"p{i}@atko.com"})
    _, whole = scim_a.get("/Users?startIndex=1&count=100")
    pieces = []
    for start in range(1, 26, 7):
        pieces += [r["id"] for r in scim_a.get(f"/Users?startIndex={start}&count=7")[1]["Resources"]]
    assert pieces == [r["id"] for r in whole["Resources"]]


def test_okta_group_push_sequence(scim_hooked: Scim) -> None:
    u = [scim_hooked.post("/Users", {"userName": f"g{i}@atko.com"})[1]["id"] for i in range(3)]
    status, group = scim_hooked.post(
        "/Groups", {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "Push", "members": []}
    )
    assert status == 201  # O14
    gid = group["id"]
    ops = [{"op": "add", "path": "members", "value": [{"value": u[0], "display": "g0@atko.com"}, {"value": u[1]}]}]
    assert scim_hooked.ops(f"/Groups/{gid}", *ops)[0] == 204
    status, _ = scim_hooked.ops(
        f"/Groups/{gid}",
        {"op": "remove", "path": f'members[value eq "{u[0]}"]'},
        {"op": "add", "path": "members", "value": [{"value": u[2]}]},
    )
    assert status == 204 and _members(gid) == {u[1], u[2]}
    assert scim_hooked.ops(f"/Groups/{gid}", {"op": "replace", "value": {"id": gid, "displayName": "Pushed"}})[0] == 204
    assert scim_hooked.ops(f"/Groups/{gid}", {"op": "replace", "path": "members", "value": [{"value": u[0]}]})[0] == 204
    assert _members(gid) == {u[0]} and DirectoryGroup.objects.get(pk=gid).display_name == "Pushed"
    assert scim_hooked.delete(f"/Groups/{gid}")[0] == 204


@pytest.mark.parametrize("aad_flag", [False, True])
def test_microsoft_validator_sequence(directory_b: Directory, aad_flag: bool) -> None:
    scim = Scim(directory_b)
    q = "?aadOptscim062020" if aad_flag else ""
    # Test Connection: a random userName and groups (E13)
    probe_filter = quote(f'userName eq "{uuid.uuid4().hex}"')
    status, probe = scim.get(f"/Users?filter={probe_filter}&aadOptscim062020")
    assert status == 200 and probe["totalResults"] == 0
    # Create user with enterprise extension and roles (E12)
    body = {
        "schemas": [USER_URN, ENTERPRISE_URN],
        "externalId": "ext-7",
        "userName": "Ryan@contoso.com",
        "active": True,
        "displayName": "Ryan Leenay",
        "emails": [{"primary": True, "type": "work", "value": "Ryan@contoso.com"}],
        "meta": {"resourceType": "User"},
        "name": {"formatted": "Ryan Leenay", "familyName": "Leenay", "givenName": "Ryan"},
        "roles": [],
        ENTERPRISE_URN: {"department": "Sales", "employeeNumber": "1"},
    }
    status, user = scim.post("/Users" + q, body)
    assert status == 201
    uid = user["id"]
    # Filters Entra uses (E6)
    for flt in [
        'userName eq "ryan@contoso.com"',
        'externalId eq "ext-7"',
        'emails[type eq "work"].value eq "Ryan@contoso.com"',
        'userName eq "Ryan@contoso.com" and externalId eq "ext-7"',
    ]:
        status, found = scim.get(f"/Users?filter={quote(flt)}")
        assert status == 200 and found["totalResults"] == 1, flt
    # Update: RFC form with the flag, legacy capitalised ops and string booleans without it
    if aad_flag:
        ops = [
            {"op": "replace", "path": "displayName", "value": "Ryan L"},
            {"op": "replace", "path": 'emails[type eq "work"].value', "value": "ryan.l@contoso.com"},
            {"op": "replace", "path": "name.givenName", "value": "Ry"},
            {"op": "add", "path": f"{ENTERPRISE_URN}:manager", "value": "mgr-9"},
            {"op": "replace", "path": "active", "value": False},
        ]
    else:
        ops = [
            {"op": "Replace", "path": "displayName", "value": "Ryan L"},
            {"op": "Replace", "path": 'emails[type eq "work"].value', "value": "ryan.l@contoso.com"},
            {"op": "Replace", "value": {"name.givenName": "Ry", f"{ENTERPRISE_URN}:manager": "mgr-9"}},
            {"op": "Replace", "path": "active", "value": "False"},
        ]
    status, patched = scim.patch(f"/Users/{uid}{q}", {"schemas": [PATCH_URN], "Operations": ops})
    assert status == 200
    assert patched["active"] is False and patched["displayName"] == "Ryan L" and patched["name"]["givenName"] == "Ry"
    assert patched[ENTERPRISE_URN]["manager"] == {"value": "mgr-9"} and patched[ENTERPRISE_URN]["department"] == "Sales"
    row = DirectoryUser.objects.get(pk=uid)
    assert (row.active, row.email, row.first_name) == (False, "ryan.l@contoso.com", "Ry")
    # Disable user is read back through a filter (E9)
    status, found = scim.get("/Users?filter=" + quote('userName eq "Ryan@contoso.com"'))
    assert found["Resources"][0]["active"] is False
    # Groups: created empty, filtered with excludedAttributes=members (E7, E8)
    status, group = scim.post(
        "/Groups" + q,
        {
            "schemas": [MS_GROUP_URN, "urn:ietf:params:scim:schemas:core:2.0:Group"],
            "externalId": "g-1",
            "displayName": "Validators",
            "meta": {"resourceType": "Group"},
        },
    )
    assert status == 201
    gid = group["id"]
    status, found = scim.get("/Groups?excludedAttributes=members&filter=" + quote('displayName eq "Validators"'))
    assert found["totalResults"] == 1 and "members" not in found["Resources"][0]
    assert scim.post("/Groups", {"displayName": "validators"})[0] == 409
    add = {"op": "Add" if not aad_flag else "add", "path": "members", "value": [{"value": uid}]}
    assert scim.patch(f"/Groups/{gid}{q}", {"schemas": [PATCH_URN], "Operations": [add]})[0] == 204
    assert _members(gid) == {uid}
    if aad_flag:
        remove = {"op": "remove", "path": f'members[value eq "{uid}"]'}
    else:
        remove = {"op": "Remove", "path": "members", "value": [{"value": uid}]}
    assert scim.patch(f"/Groups/{gid}{q}", {"schemas": [PATCH_URN], "Operations": [remove]})[0] == 204
    assert _members(gid) == set()
    assert (
        scim.patch(
            f"/Groups/{gid}",
            {"schemas": [PATCH_URN], "Operations": [{"op": "Replace", "path": "displayName", "value": "Renamed"}]},
        )[0]
        == 204
    )
    # Delete both; later GET/DELETE are 404 (R6)
    assert scim.delete(f"/Users/{uid}")[0] == 204 and scim.get(f"/Users/{uid}")[0] == 404
    assert scim.delete(f"/Groups/{gid}")[0] == 204 and scim.delete(f"/Groups/{gid}")[0] == 404


def test_entra_revalidation_repost_of_renamed_user_gets_correct_409(scim_b: Scim) -> None:
    _, user = scim_b.post("/Users", {"userName": "first@contoso.com"})
    scim_b.ops(f"/Users/{user['id']}", {"op": "Replace", "path": "userName", "value": "second@contoso.com"})
    assert scim_b.post("/Users", {"userName": "first@contoso.com"})[0] == 201
    assert scim_b.post("/Users", {"userName": "SECOND@contoso.com"})[0] == 409


def test_onelogin_put_based_updates_and_value_list_member_removal(scim_a: Scim) -> None:
    """OneLogin updates users with full PUTs (custom attributes included) and removes members by value list."""
    body = {
        "schemas": [USER_URN, ENTERPRISE_URN],
        "userName": "ol@onelogin.test",
        "externalId": "123",
        "name": {"givenName": "One", "familyName": "Login"},
        "emails": [{"value": "ol@onelogin.test", "primary": True}],
        "title": "Eng",
        ENTERPRISE_URN: {"department": "R&D"},
        "urn:onelogin:custom": {"badge": "7"},
    }
    status, user = scim_a.post("/Users", body, content_type="application/scim+json; charset=utf-8")
    assert status == 201 and user["urn:onelogin:custom"] == {"badge": "7"}
    status, replaced = scim_a.put(f"/Users/{user['id']}", body | {"title": "Lead", "active": False})
    assert status == 200 and replaced["title"] == "Lead" and replaced["active"] is False
    status, group = scim_a.post("/Groups", {"displayName": "OL Group", "members": [{"value": user["id"]}]})
    assert status == 201 and _members(group["id"]) == {user["id"]}
    status, _ = scim_a.ops(
        f"/Groups/{group['id']}", {"op": "remove", "path": "members", "value": [{"value": user["id"]}]}
    )
    assert status == 204 and _members(group["id"]) == set()


def test_jumpcloud_sequence(scim_a: Scim) -> None:
    """JumpCloud looks users and groups up by filter, PUTs users, and patches members with value lists."""
    assert scim_a.get("/Users?filter=" + quote('userName eq "jc@jumpcloud.test"'))[1]["totalResults"] == 0
    status, user = scim_a.post(
        "/Users",
        {
            "schemas": [USER_URN],
            "userName": "jc@jumpcloud.test",
            "externalId": "5f1",
            "name": {"givenName": "Jump", "familyName": "Cloud"},
            "emails": [{"value": "jc@jumpcloud.test", "type": "work", "primary": True}],
        },
        content_type="application/json",
    )
    assert status == 201
    assert scim_a.get("/Groups?filter=" + quote('displayName eq "JC Group"'))[1]["totalResults"] == 0
    _, group = scim_a.post("/Groups", {"displayName": "JC Group", "members": []})
    status, _ = scim_a.ops(f"/Groups/{group['id']}", {"op": "add", "path": "members", "value": [{"value": user["id"]}]})
    assert status == 204 and _members(group["id"]) == {user["id"]}
    status, _ = scim_a.ops(f"/Groups/{group['id']}", {"op": "replace", "path": "displayName", "value": "JC Renamed"})
    assert status == 204
    status, put = scim_a.put(
        f"/Users/{user['id']}",
        {
            "schemas": [USER_URN],
            "userName": "jc@jumpcloud.test",
            "active": False,
            "name": {"givenName": "Jump", "familyName": "Cloud"},
        },
    )
    assert status == 200 and put["active"] is False
    status, _ = scim_a.ops(
        f"/Groups/{group['id']}", {"op": "remove", "path": "members", "value": [{"value": user["id"]}]}
    )
    assert status == 204 and _members(group["id"]) == set()
