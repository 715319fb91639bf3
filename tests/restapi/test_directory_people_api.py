"""GET /api/v1/directory-sync/<id>/users and /<id>/groups (and their /api/v1/dsync alias): one directory's
users and groups by its id, paged and filtered as the tenant's lists are."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from core.comparison import comparison_key
from directories.models import Directory, DirectoryUser
from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.restapi.conftest import make_group, make_user
from tests.restapi.test_users_groups_api import ACME, BASE, PREFIXES, get

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(directory_a: Directory, directory_b: Directory) -> dict[str, DirectoryUser]:
    users = {
        "ann": make_user(directory_a, "ann", email="Ann@Acme.test", email_key=comparison_key("Ann@Acme.test")),
        "bob": make_user(directory_a, "bob", active=False, email="bob@acme.test", email_key="bob@acme.test"),
        "cy": make_user(directory_a, "cy"),
        "carl": make_user(directory_b, "carl", email="ann@acme.test", email_key="ann@acme.test"),
    }
    make_group(directory_a, "Engineering", [users["ann"], users["cy"]])
    make_group(directory_a, "Empty")
    make_group(directory_b, "Engineering", [users["carl"]])
    DirectoryUser.objects.filter(pk=users["bob"].pk).update(updated_at=timezone.now() - timedelta(days=2))
    return users


def _names(client: Client, directory: Directory, what: str = "users", query: dict | None = None) -> list[str]:
    status, body = get(client, f"{BASE}/{directory.id}/{what}", query)
    assert status == 200, body
    return [item["raw"]["userName"] if what == "users" else item["name"] for item in body["data"]]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_directory_s_users_are_its_own_in_the_tenant_list_s_shape(
    api_client: Client, people: dict[str, DirectoryUser], directory_a: Directory, prefix: str
) -> None:
    status, body = get(api_client, f"{prefix}/{directory_a.id}/users")
    assert status == 200 and body["error"] is None
    assert [u["id"] for u in body["data"]] == [str(people[n].id) for n in ("ann", "bob", "cy")]
    # The same objects as the tenant's list gives for this directory, maps and all.
    tenant = get(api_client, f"{BASE}/users", {**ACME, "directoryId": str(directory_a.id)})[1]
    assert body["data"] == tenant["data"]


def test_another_directory_s_users_and_groups_never_show(
    api_client: Client, people: dict[str, DirectoryUser], directory_a: Directory, directory_b: Directory
) -> None:
    assert _names(api_client, directory_b) == ["carl"]
    assert "carl" not in _names(api_client, directory_a)
    assert _names(api_client, directory_b, "groups") == ["Engineering"]
    assert _names(api_client, directory_a, "groups") == ["Engineering", "Empty"]
    # A group of another directory matches none of this one's users.
    other_group = directory_b.groups.get().id
    assert _names(api_client, directory_a, query={"group": str(other_group)}) == []


def test_the_user_filters_of_the_tenant_list_apply(
    api_client: Client, people: dict[str, DirectoryUser], directory_a: Directory
) -> None:
    eng = directory_a.groups.get(display_name="Engineering").id
    yesterday = (timezone.now() - timedelta(days=1)).isoformat().replace("+00:00", "Z")
    assert _names(api_client, directory_a, query={"active": "true"}) == ["ann", "cy"]
    assert _names(api_client, directory_a, query={"active": "false"}) == ["bob"]
    assert _names(api_client, directory_a, query={"email": "ANN@acme.TEST"}) == ["ann"]
    assert _names(api_client, directory_a, query={"group": str(eng)}) == ["ann", "cy"]
    assert _names(api_client, directory_a, query={"updatedAfter": yesterday}) == ["ann", "cy"]
    assert _names(api_client, directory_a, query={"group": str(eng), "email": "ann@acme.test"}) == ["ann"]
    assert _names(api_client, directory_a, query={"group": str(uuid.uuid4())}) == []


def test_groups_have_no_top_level_members_and_filter_by_name(
    api_client: Client, people: dict[str, DirectoryUser], directory_a: Directory
) -> None:
    status, body = get(api_client, f"{BASE}/{directory_a.id}/groups")
    assert status == 200 and all("members" not in group for group in body["data"])
    assert set(body["data"][0]) == {"id", "name", "raw", "created_at", "updated_at"}
    assert _names(api_client, directory_a, "groups", {"name": "engineering"}) == ["Engineering"]
    assert _names(api_client, directory_a, "groups", {"name": "nothing"}) == []


@pytest.mark.parametrize(
    ("what", "query", "named"),
    [
        ("users", {"active": "yes"}, "active"),
        ("users", {"group": "not-a-uuid"}, "group"),
        ("users", {"updatedAfter": "yesterday"}, "updatedAfter"),
        ("users", {"email": ""}, "email"),
        ("users", {"pageLimit": "-1"}, "pageLimit"),
        ("groups", {"name": ""}, "name"),
        ("groups", {"pageOffset": "x"}, "pageOffset"),
    ],
)
def test_a_malformed_query_is_a_400_naming_the_parameter(
    api_client: Client, directory_a: Directory, what: str, query: dict, named: str
) -> None:
    status, body = get(api_client, f"{BASE}/{directory_a.id}/{what}", query)
    assert status == 400 and body["data"] is None and named in body["error"]["message"], body


@pytest.mark.parametrize("directory_id", [str(uuid.uuid4()), "not-a-uuid", "0" * 100])
@pytest.mark.parametrize("what", ["users", "groups"])
def test_an_unknown_directory_is_the_same_404_whatever_the_id(
    api_client: Client, directory_a: Directory, directory_id: str, what: str
) -> None:
    status, body = get(api_client, f"{BASE}/{directory_id}/{what}")
    assert (status, body) == (404, {"data": None, "error": {"code": 404, "message": "Directory not found."}})


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("what", ["users", "groups"])
def test_an_anonymous_caller_gets_401_whether_the_directory_exists_or_not(
    directory_a: Directory, prefix: str, what: str
) -> None:
    for directory_id in (directory_a.id, uuid.uuid4()):
        for client in (Client(), Client(HTTP_AUTHORIZATION="Bearer wrong-key")):
            status, body = get(client, f"{prefix}/{directory_id}/{what}")
            assert status == 401 and body["error"]["code"] == 401


def test_paging_windows_and_the_capped_limit(api_client: Client, directory_a: Directory) -> None:
    users = [make_user(directory_a, f"u{i:02d}") for i in range(5)]
    for i in range(3):
        make_group(directory_a, f"g{i}")
    page = get(api_client, f"{BASE}/{directory_a.id}/users", {"pageOffset": "1", "pageLimit": "2"})[1]["data"]
    assert [u["id"] for u in page] == [str(users[1].id), str(users[2].id)]
    assert get(api_client, f"{BASE}/{directory_a.id}/users", {"pageLimit": "0"})[1]["data"] == []
    assert len(get(api_client, f"{BASE}/{directory_a.id}/users", {"pageLimit": "5000"})[1]["data"]) == 5
    assert _names(api_client, directory_a, "groups", {"pageOffset": "2"}) == ["g2"]


def test_a_directory_of_another_product_of_the_same_tenant_lists_only_its_own(
    api_client: Client, directory_a: Directory
) -> None:
    hr = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "hr"})
    make_user(directory_a, "ann")
    make_user(hr, "hal")
    assert _names(api_client, hr) == ["hal"]
