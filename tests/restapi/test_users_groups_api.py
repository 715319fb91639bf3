"""GET /api/v1/directory-sync/users and /groups: tenant scoping, paging, group members."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from core.timefmt import iso_utc
from directories.models import Directory
from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.restapi.conftest import make_group, make_user

pytestmark = pytest.mark.django_db

BASE = "/api/v1/directory-sync"
PREFIXES = ["/api/v1/directory-sync", "/api/v1/dsync"]
ACME = {"tenant": "acme", "product": "crm"}
GLOBEX = {"tenant": "globex", "product": "crm"}


def get(client: Client, path: str, query: dict | None = None) -> tuple[int, dict]:
    response = client.get(path, query or {})
    assert response["Content-Type"] == "application/json"
    return response.status_code, response.json()


# --- users ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", PREFIXES)
def test_users_list_returns_the_spec_shape_oldest_first(
    api_client: Client, directory_a: Directory, directory_b: Directory, prefix: str
) -> None:
    ann = make_user(directory_a, "ann@acme.test", first_name="Ann", last_name="Lee", email="ann@acme.test", active=True)
    bob = make_user(directory_a, "bob@acme.test", active=False)
    make_user(directory_b, "carl@globex.test")
    status, body = get(api_client, f"{prefix}/users", ACME)
    assert status == 200 and body["error"] is None
    assert [u["id"] for u in body["data"]] == [str(ann.id), str(bob.id)]
    assert body["data"][0] == {
        "id": str(ann.id),
        "first_name": "Ann",
        "last_name": "Lee",
        "email": "ann@acme.test",
        "active": True,
        "raw": ann.raw,
        "created_at": iso_utc(ann.created_at),
        "updated_at": iso_utc(ann.updated_at),
        "custom_attributes": {},
        "roles": [],
    }
    assert body["data"][0]["raw"]["id"] == str(ann.id)
    assert body["data"][1]["active"] is False


def test_users_list_covers_every_directory_of_tenant_and_product_unless_one_is_named(
    api_client: Client, directory_a: Directory
) -> None:
    second = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm", "name": "second"})
    other_product = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "hr"})
    ann = make_user(directory_a, "ann")
    bea = make_user(second, "bea")
    make_user(other_product, "cid")

    status, body = get(api_client, f"{BASE}/users", ACME)
    assert [u["id"] for u in body["data"]] == [str(ann.id), str(bea.id)]

    status, body = get(api_client, f"{BASE}/users", {**ACME, "directoryId": str(second.id)})
    assert status == 200
    assert [u["id"] for u in body["data"]] == [str(bea.id)]


@pytest.mark.parametrize("directory_id", ["other-tenant", str(uuid.uuid4()), "not-a-uuid", ""])
def test_users_list_with_a_directory_outside_tenant_and_product_is_404(
    api_client: Client, directory_a: Directory, directory_b: Directory, directory_id: str
) -> None:
    make_user(directory_b, "carl")
    if directory_id == "other-tenant":
        directory_id = str(directory_b.id)
    status, body = get(api_client, f"{BASE}/users", {**ACME, "directoryId": directory_id})
    assert status == 404
    assert body == {"data": None, "error": {"message": "Directory not found.", "code": 404}}


@pytest.mark.parametrize("prefix", PREFIXES)
def test_user_detail_returns_the_user(api_client: Client, directory_a: Directory, prefix: str) -> None:
    ann = make_user(directory_a, "ann", email="ann@acme.test")
    status, body = get(api_client, f"{prefix}/users/{ann.id}", ACME)
    assert status == 200
    assert body["data"]["id"] == str(ann.id) and body["data"]["email"] == "ann@acme.test"


def test_user_of_another_tenant_is_a_404_identical_to_a_missing_one(
    api_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    carl = make_user(directory_b, "carl")
    other = get(api_client, f"{BASE}/users/{carl.id}", ACME)
    missing = get(api_client, f"{BASE}/users/{uuid.uuid4()}", ACME)
    malformed = get(api_client, f"{BASE}/users/010101001010101011001010101011", ACME)
    assert other == missing == malformed
    assert other[0] == 404 and other[1]["error"] == {"message": "User not found.", "code": 404}
    # The same user is visible to its own tenant.
    assert get(api_client, f"{BASE}/users/{carl.id}", GLOBEX)[0] == 200


def test_user_of_another_product_of_the_same_tenant_is_404(api_client: Client, directory_a: Directory) -> None:
    ann = make_user(directory_a, "ann")
    status, _ = get(api_client, f"{BASE}/users/{ann.id}", {"tenant": "acme", "product": "hr"})
    assert status == 404


@pytest.mark.parametrize("route", ["/users", "/users/{id}", "/groups", "/groups/{id}"])
@pytest.mark.parametrize(
    ("query", "missing"), [({"product": "crm"}, "tenant"), ({"tenant": "acme"}, "product"), ({}, "tenant")]
)
def test_read_routes_require_tenant_and_product(
    api_client: Client, directory_a: Directory, route: str, query: dict, missing: str
) -> None:
    ident = make_user(directory_a, "ann").id if "users" in route else make_group(directory_a, "Eng").id
    status, body = get(api_client, BASE + route.format(id=ident), query)
    assert status == 400
    assert missing in body["error"]["message"] and body["data"] is None


# --- groups -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", PREFIXES)
def test_groups_list_has_no_top_level_members(
    api_client: Client, directory_a: Directory, directory_b: Directory, prefix: str
) -> None:
    ann = make_user(directory_a, "ann")
    eng = make_group(directory_a, "Engineering", [ann])
    ops = make_group(directory_a, "Ops")
    make_group(directory_b, "Sales")
    status, body = get(api_client, f"{prefix}/groups", ACME)
    assert status == 200
    stamps = [{"created_at": iso_utc(g.created_at), "updated_at": iso_utc(g.updated_at)} for g in (eng, ops)]
    assert body["data"] == [
        {"id": str(eng.id), "name": "Engineering", "raw": eng.raw, **stamps[0]},
        {"id": str(ops.id), "name": "Ops", "raw": ops.raw, **stamps[1]},
    ]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_group_detail_lists_members_as_group_and_user_ids(
    api_client: Client, directory_a: Directory, prefix: str
) -> None:
    ann = make_user(directory_a, "ann")
    bob = make_user(directory_a, "bob")
    make_user(directory_a, "cid")
    eng = make_group(directory_a, "Engineering", [ann, bob])
    status, body = get(api_client, f"{prefix}/groups/{eng.id}", ACME)
    assert status == 200
    assert body["data"]["id"] == str(eng.id) and body["data"]["name"] == "Engineering"
    assert body["data"]["raw"]["id"] == str(eng.id)
    assert body["data"]["members"] == [
        {"group_id": str(eng.id), "user_id": str(ann.id)},
        {"group_id": str(eng.id), "user_id": str(bob.id)},
    ]


def test_empty_group_detail_has_an_empty_member_list(api_client: Client, directory_a: Directory) -> None:
    ops = make_group(directory_a, "Ops")
    assert get(api_client, f"{BASE}/groups/{ops.id}", ACME)[1]["data"]["members"] == []


def test_group_of_another_tenant_is_a_404_identical_to_a_missing_one(
    api_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    sales = make_group(directory_b, "Sales")
    other = get(api_client, f"{BASE}/groups/{sales.id}", ACME)
    missing = get(api_client, f"{BASE}/groups/{uuid.uuid4()}", ACME)
    malformed = get(api_client, f"{BASE}/groups/not-a-group", ACME)
    assert other == missing == malformed
    assert other[0] == 404 and other[1]["error"] == {"message": "Group not found.", "code": 404}
    assert get(api_client, f"{BASE}/groups/{sales.id}", GLOBEX)[0] == 200


def test_groups_list_filtered_by_directory(api_client: Client, directory_a: Directory) -> None:
    second = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm", "name": "second"})
    make_group(directory_a, "Eng")
    ops = make_group(second, "Ops")
    status, body = get(api_client, f"{BASE}/groups", {**ACME, "directoryId": str(second.id)})
    assert status == 200 and [g["id"] for g in body["data"]] == [str(ops.id)]


# --- paging -----------------------------------------------------------------------------------------


@pytest.fixture
def five_users(directory_a: Directory) -> list[str]:
    return [str(make_user(directory_a, f"user{i}").id) for i in range(5)]


@pytest.fixture
def five_groups(directory_a: Directory) -> list[str]:
    return [str(make_group(directory_a, f"group{i}").id) for i in range(5)]


@pytest.mark.parametrize(
    ("query", "window"),
    [
        ({}, slice(0, 5)),
        ({"pageOffset": "0", "pageLimit": "2"}, slice(0, 2)),
        ({"pageOffset": "2", "pageLimit": "2"}, slice(2, 4)),
        ({"pageOffset": "4", "pageLimit": "2"}, slice(4, 5)),
        ({"pageOffset": "5"}, slice(5, 5)),
        ({"pageOffset": "500", "pageLimit": "10"}, slice(0, 0)),
        ({"pageOffset": "9223372036854775807"}, slice(0, 0)),
        ({"pageLimit": "0"}, slice(0, 0)),
        ({"pageOffset": "1", "pageLimit": "0"}, slice(0, 0)),
        ({"pageLimit": "1000000"}, slice(0, 5)),
    ],
)
@pytest.mark.parametrize("kind", ["users", "groups"])
def test_paging_windows(
    api_client: Client, five_users: list[str], five_groups: list[str], kind: str, query: dict, window: slice
) -> None:
    expected = (five_users if kind == "users" else five_groups)[window]
    status, body = get(api_client, f"{BASE}/{kind}", {**ACME, **query})
    assert status == 200, body
    assert [row["id"] for row in body["data"]] == expected


@pytest.mark.parametrize("kind", ["users", "groups"])
def test_page_limit_defaults_to_100_and_is_capped_at_1000(
    api_client: Client, directory_a: Directory, kind: str
) -> None:
    from core.comparison import comparison_key
    from directories.models import DirectoryGroup, DirectoryUser

    if kind == "users":
        DirectoryUser.objects.bulk_create(
            DirectoryUser(directory=directory_a, user_name=f"u{i}", user_name_key=comparison_key(f"u{i}"))
            for i in range(1005)
        )
    else:
        DirectoryGroup.objects.bulk_create(
            DirectoryGroup(directory=directory_a, display_name=f"g{i}", display_name_key=f"g{i}") for i in range(1005)
        )
    assert len(get(api_client, f"{BASE}/{kind}", ACME)[1]["data"]) == 100
    assert len(get(api_client, f"{BASE}/{kind}", {**ACME, "pageLimit": "5000"})[1]["data"]) == 1000
    assert len(get(api_client, f"{BASE}/{kind}", {**ACME, "pageOffset": "1000", "pageLimit": "1000"})[1]["data"]) == 5


def test_pages_do_not_overlap_or_skip_rows_created_in_the_same_instant(
    api_client: Client, directory_a: Directory
) -> None:
    from django.utils import timezone

    from core.comparison import comparison_key
    from directories.models import DirectoryUser

    now = timezone.now()
    DirectoryUser.objects.bulk_create(
        DirectoryUser(directory=directory_a, user_name=f"u{i}", user_name_key=comparison_key(f"u{i}")) for i in range(9)
    )
    DirectoryUser.objects.filter(directory=directory_a).update(created_at=now)
    seen: list[str] = []
    for offset in range(0, 9, 2):
        seen += [
            u["id"] for u in get(api_client, f"{BASE}/users", {**ACME, "pageOffset": offset, "pageLimit": 2})[1]["data"]
        ]
    assert len(seen) == 9 and len(set(seen)) == 9
    assert seen == sorted(seen, key=uuid.UUID)  # ties on created_at are broken by id


@pytest.mark.parametrize("kind", ["users", "groups"])
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("pageOffset", "abc"),
        ("pageOffset", "-1"),
        ("pageOffset", "1.5"),
        ("pageOffset", "1e3"),
        ("pageLimit", "ten"),
        ("pageLimit", "-5"),
        ("pageLimit", "+5"),
        ("pageLimit", "0x10"),
        ("pageOffset", ""),
        ("pageLimit", ""),
        ("pageOffset", " 1"),
    ],
)
def test_paging_rejects_values_that_are_not_non_negative_integers(
    api_client: Client, directory_a: Directory, kind: str, name: str, value: str
) -> None:
    status, body = get(api_client, f"{BASE}/{kind}", {**ACME, name: value})
    assert status == 400
    assert body == {"data": None, "error": {"message": f"{name} must be a non-negative integer.", "code": 400}}


def test_raw_values_beyond_64_bits_are_still_rendered(api_client: Client, directory_a: Directory) -> None:
    # orjson refuses such integers; an IdP may still send one in an extension attribute.
    ann = make_user(directory_a, "ann")
    ann.raw = {**ann.raw, "urn:example:big": 2**70}
    ann.save()
    status, body = get(api_client, f"{BASE}/users/{ann.id}", ACME)
    assert status == 200
    assert body["data"]["raw"]["urn:example:big"] == 2**70


def test_read_routes_stay_within_their_query_budget(
    api_client: Client, directory_a: Directory, django_assert_num_queries
) -> None:  # noqa: ANN001
    users = [make_user(directory_a, f"user{i}") for i in range(20)]
    group = make_group(directory_a, "Eng", users)
    # One query per list page (two for users: their directories' attribute and role maps) and two for a
    # group with its members, however many rows (env API key).
    with django_assert_num_queries(2):
        assert len(get(api_client, f"{BASE}/users", ACME)[1]["data"]) == 20
    with django_assert_num_queries(1):
        get(api_client, f"{BASE}/groups", ACME)
    with django_assert_num_queries(1):
        get(api_client, f"{BASE}/users/{users[0].id}", ACME)  # the directory comes with the user (a join)
    with django_assert_num_queries(2):
        assert len(get(api_client, f"{BASE}/groups/{group.id}", ACME)[1]["data"]["members"]) == 20
