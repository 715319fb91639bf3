"""attribute_map → custom_attributes and role_map → roles: validation on save, what users read, events."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.test import Client

from directories.mapping import attribute_map_problem, custom_attributes, role_map_problem, roles
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from directories.services import directory_update
from tests.actors import TEST_ACTOR
from tests.restapi.conftest import make_group, make_user
from tests.restapi.test_users_groups_api import ACME, get

ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
RAW = {
    "userName": "ann@x.io",
    "externalId": "E-1",
    "name": {"givenName": "Ann"},
    "emails": [{"value": "home@x.io", "type": "home"}, {"value": "Work@x.io", "type": "Work", "primary": True}],
    ENTERPRISE: {"department": "R&D", "manager": {"value": "boss"}},
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("externalId", "E-1"),
        ("EXTERNALID", "E-1"),
        ("name.givenName", "Ann"),
        ("name.familyName", None),
        ("emails.value", "Work@x.io"),  # the primary element
        ('emails[type eq "home"].value', "home@x.io"),
        ('emails[type eq "WORK" and primary eq true].value', "Work@x.io"),
        ('emails[type eq "other"].value', None),
        ("emails", {"value": "Work@x.io", "type": "Work", "primary": True}),
        (f"{ENTERPRISE}:department", "R&D"),
        (f"{ENTERPRISE.upper()}:manager.value", "boss"),
        ("urn:ietf:params:scim:schemas:core:2.0:User:userName", "ann@x.io"),
        ("urn:example:never:sent:x", None),
    ],
)
def test_custom_attributes_read_the_path_or_null(path: str, value: Any) -> None:
    assert custom_attributes(RAW, {"a": path}) == {"a": value}


def test_roles_are_sorted_distinct_and_matched_by_id_or_display_name() -> None:
    eng, ops = uuid.uuid4(), uuid.uuid4()
    role_map = {"engineering": "dev", str(ops).upper(): "ops", "Ops": "ops", "Sales": "seller"}
    assert roles([(ops, "Ops"), (eng, "ENGINEERING")], role_map) == ["dev", "ops"]
    assert roles([(eng, "Other")], role_map) == []
    assert roles([(eng, "Engineering")], {}) == []


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ([], "attribute_map"),
        ({f"k{i}": "title" for i in range(101)}, "attribute_map"),
        ({"email": "title"}, "email"),
        ({"roles": "title"}, "roles"),
        ({"1bad": "title"}, "1bad"),
        ({"has-dash": "title"}, "has-dash"),
        ({"ok": "not a path"}, "ok"),
        ({"ok": 'emails[type co "x"].value'}, "ok"),
        ({"ok": "name..givenName"}, "ok"),
        ({"ok": 5}, "ok"),
        ({"ok": "a" * 600}, "ok"),
    ],
)
def test_attribute_map_problems_name_the_key(value: Any, key: str) -> None:
    found = attribute_map_problem(value)
    assert found is not None and found[0] == key


@pytest.mark.parametrize(
    ("value", "key"),
    [("x", "role_map"), ({"Eng": ""}, "Eng"), ({"Eng": "  "}, "Eng"), ({"Eng": 3}, "Eng"), ({"": "r"}, "")],
)
def test_role_map_problems_name_the_key(value: Any, key: str) -> None:
    found = role_map_problem(value)
    assert found is not None and found[0] == key


def _patch(client: Client, directory: Directory, body: Any) -> tuple[int, dict[str, Any]]:
    response = client.patch(f"/api/v1/directory-sync/{directory.id}", json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def test_rest_patch_saves_valid_maps_and_refuses_bad_ones_saving_nothing(
    api_client: Client, directory_a: Directory
) -> None:
    maps = {"attribute_map": {"department": f"{ENTERPRISE}:department"}, "role_map": {"Engineering": "dev"}}
    status, body = _patch(api_client, directory_a, maps)
    assert status == 200 and body["data"]["attribute_map"] == maps["attribute_map"]
    assert body["data"]["role_map"] == maps["role_map"]
    for bad, key in (
        ({"attribute_map": {"email": "title"}, "name": "renamed"}, "email"),
        ({"role_map": {"Eng": ""}, "attribute_map": {}}, "Eng"),
    ):
        status, body = _patch(api_client, directory_a, bad)
        assert status == 400 and key in body["error"]["message"], body
    directory_a.refresh_from_db()
    assert directory_a.attribute_map == maps["attribute_map"] and directory_a.role_map == maps["role_map"]
    assert directory_a.name == "Acme Okta"
    status, body = _patch(api_client, directory_a, {"attribute_map": None, "role_map": {}})
    assert status == 200 and body["data"]["attribute_map"] == {} and body["data"]["role_map"] == {}


def test_users_read_custom_attributes_and_roles_from_the_current_maps(
    api_client: Client, directory_a: Directory, django_assert_max_num_queries
) -> None:  # noqa: ANN001
    ann = make_user(directory_a, "ann@acme.test")
    ann.raw = {**ann.raw, ENTERPRISE: {"department": "R&D"}}
    ann.save()
    eng = make_group(directory_a, "Engineering", [ann])
    make_group(directory_a, "Ops", [ann])
    directory_a.attribute_map = {"department": f"{ENTERPRISE}:department", "title": "title"}
    directory_a.role_map = {"engineering": "dev", str(eng.id): "builder"}
    directory_a.save()
    with django_assert_max_num_queries(3):  # the page, the directories, the groups
        status, body = get(api_client, "/api/v1/directory-sync/users", ACME)
    assert body["data"][0]["custom_attributes"] == {"department": "R&D", "title": None}
    assert body["data"][0]["roles"] == ["builder", "dev"]
    status, one = get(api_client, f"/api/v1/directory-sync/users/{ann.id}", ACME)
    assert one["data"]["roles"] == ["builder", "dev"]
    directory_a.role_map = {"Ops": "operator"}
    directory_a.save()
    assert get(api_client, f"/api/v1/directory-sync/users/{ann.id}", ACME)[1]["data"]["roles"] == ["operator"]


def test_updating_the_maps_leaves_one_audit_entry(directory_a: Directory, settings: Any) -> None:
    from audit.models import AuditEntry

    directory_update(directory=directory_a, data={"role_map": {"Eng": "dev"}}, actor=TEST_ACTOR)
    entry = AuditEntry.objects.filter(directory_id=directory_a.id).latest("id")
    assert entry.action == "directory.updated" and entry.details["fields"] == ["role_map"]
    assert Directory.objects.get(pk=directory_a.id).role_map == {"Eng": "dev"}


def test_user_groups_route_pages_a_users_groups_and_hides_other_tenants(
    api_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    ann = make_user(directory_a, "ann")
    groups = [make_group(directory_a, f"G{i}", [ann]) for i in range(3)]
    make_group(directory_a, "Other")
    status, body = get(api_client, f"/api/v1/directory-sync/users/{ann.id}/groups", ACME)
    assert status == 200 and [g["id"] for g in body["data"]] == [str(g.id) for g in groups]
    assert "members" not in body["data"][0] and body["data"][0]["created_at"].endswith("Z")
    status, body = get(api_client, f"/api/v1/dsync/users/{ann.id}/groups", {**ACME, "pageOffset": 1, "pageLimit": 1})
    assert [g["name"] for g in body["data"]] == ["G1"]
    status, body = get(
        api_client, f"/api/v1/directory-sync/users/{ann.id}/groups", {"tenant": "globex", "product": "crm"}
    )
    assert status == 404 and body["data"] is None
    carl = make_user(directory_b, "carl")
    assert get(api_client, f"/api/v1/directory-sync/users/{carl.id}/groups", ACME)[0] == 404
    assert Client().get(f"/api/v1/directory-sync/users/{ann.id}/groups", ACME).status_code == 401
    assert GroupMembership.objects.filter(user=ann).count() == 3
    assert DirectoryGroup.objects.filter(directory=directory_a).count() == 4
    assert DirectoryUser.objects.filter(pk=ann.id).exists()
