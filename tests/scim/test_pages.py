"""Unfiltered user pages on PostgreSQL, SCIM and REST (directories.pages): totalResults from the tally
kept by triggers, deep pages from position marks; and the tally's active users, which the deprovision guard
reads (scim.storage.guard). Every page is compared with what COUNT(*) and OFFSET give for the same
directory, before and after the directory changes. On SQLite these skip (no triggers; pages count)."""

from __future__ import annotations

import importlib
import re
import uuid

import pytest
from django.db import connection
from django.db.models import Sum
from django.test import Client
from django.test.utils import CaptureQueriesContext

from directories import pages
from directories.models import Directory, DirectoryUser, UserTally
from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.scim.conftest import PATCH_URN, Scim, user_body

pytestmark = [pytest.mark.postgres]


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the tally is kept by PostgreSQL triggers (CI runs these)")


@pytest.fixture(autouse=True)
def _small_marks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pages, "MARK_EVERY", 3)
    pages.marks_forget()


def _tally(directory: Directory) -> int:
    sums = UserTally.objects.filter(directory=directory).aggregate(c=Sum("created"), d=Sum("deleted"))
    return (sums["c"] or 0) - (sums["d"] or 0)


def _active_tally(directory: Directory) -> int:
    return UserTally.objects.filter(directory=directory).aggregate(a=Sum("active"))["a"] or 0


def _active_counted(directory: Directory) -> int:
    return DirectoryUser.objects.filter(directory=directory, active=True).count()


def _expected(directory: Directory) -> list[str]:
    return [
        str(pk)
        for pk in DirectoryUser.objects.filter(directory=directory)
        .order_by("created_at", "id")
        .values_list("id", flat=True)
    ]


def _page(scim: Scim, start: int, count: int) -> tuple[int, list[str]]:
    status, body = scim.get(f"/Users?startIndex={start}&count={count}")
    assert status == 200, body
    assert body["startIndex"] == start and body["itemsPerPage"] == len(body["Resources"])
    return body["totalResults"], [r["id"] for r in body["Resources"]]


def _check_every_page(scim: Scim, *, count: int = 2) -> None:
    expected = _expected(scim.directory)
    for start in range(1, len(expected) + 3):
        total, ids = _page(scim, start, count)
        assert total == len(expected)
        assert ids == expected[start - 1 : start - 1 + count], start


def _bulk_users(directory: Directory, n: int, prefix: str) -> None:
    DirectoryUser.objects.bulk_create(
        DirectoryUser(
            directory=directory,
            user_name=f"{prefix}{i}@x.io",
            user_name_key=f"{prefix}{i}@x.io",
            raw={"userName": f"{prefix}{i}@x.io"},
        )
        for i in range(n)
    )


@pytest.mark.django_db(transaction=True)
def test_the_tally_follows_scim_creates_and_deletes_outside_transactions(scim_a: Scim, scim_b: Scim) -> None:
    ids = [scim_a.post("/Users", user_body(f"u{i}@x.io"))[1]["id"] for i in range(5)]
    scim_b.post("/Users", user_body("b@x.io"))
    assert scim_a.delete(f"/Users/{ids[1]}")[0] == 204
    assert scim_a.post("/Users", user_body("u0@x.io"))[0] == 409  # a refused duplicate counts nothing
    assert _tally(scim_a.directory) == 4 == DirectoryUser.objects.filter(directory=scim_a.directory).count()
    assert _tally(scim_b.directory) == 1
    assert _page(scim_a, 1, 100) == (4, [i for i in ids if i != ids[1]])


@pytest.mark.django_db
def test_the_tally_follows_bulk_inserts_deletes_and_the_locked_path(scim_a: Scim, scim_b: Scim) -> None:
    _bulk_users(scim_a.directory, 7, "a")
    _bulk_users(scim_b.directory, 2, "b")
    scim_a.post("/Users", user_body("one@x.io"))  # inside the test's transaction: the locked path
    DirectoryUser.objects.filter(directory=scim_a.directory, user_name__in=["a1@x.io", "a2@x.io"]).delete()
    assert _tally(scim_a.directory) == 6 == DirectoryUser.objects.filter(directory=scim_a.directory).count()
    assert _tally(scim_b.directory) == 2
    assert _page(scim_a, 1, 0) == (6, [])  # count=0: totalResults only


@pytest.mark.django_db(transaction=True)
def test_the_active_tally_follows_every_scim_change_of_active(scim_a: Scim, scim_b: Scim) -> None:
    """What the deprovision guard weighs a deprovision against: creates active and inactive, deactivations
    in Okta's and Entra's forms, a reactivation, a PUT that resends `active` unchanged, deletes of an active
    and of an inactive user, all committed one by one as identity providers send them."""
    a = [scim_a.post("/Users", user_body(f"a{i}@x.io"))[1]["id"] for i in range(6)]
    scim_a.post("/Users", user_body("off@x.io", active=False))
    scim_b.post("/Users", user_body("b@x.io"))
    assert _active_tally(scim_a.directory) == 6 == _active_counted(scim_a.directory)
    okta = {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "value": {"active": False}}]}
    entra = {"schemas": [PATCH_URN], "Operations": [{"op": "Replace", "path": "active", "value": "False"}]}
    assert scim_a.patch(f"/Users/{a[0]}", okta)[0] == 200
    assert scim_a.patch(f"/Users/{a[1]}", entra)[0] == 200
    assert scim_a.patch(f"/Users/{a[1]}", entra)[0] == 200  # already inactive: counted once
    assert _active_tally(scim_a.directory) == 4 == _active_counted(scim_a.directory)
    assert scim_a.put(f"/Users/{a[0]}", user_body("a0@x.io", active=True))[0] == 200  # back
    assert scim_a.put(f"/Users/{a[2]}", user_body("renamed@x.io", active=True))[0] == 200  # unchanged
    assert _active_tally(scim_a.directory) == 5 == _active_counted(scim_a.directory)
    assert scim_a.delete(f"/Users/{a[3]}")[0] == 204  # active
    assert scim_a.delete(f"/Users/{a[1]}")[0] == 204  # inactive
    assert _active_tally(scim_a.directory) == 4 == _active_counted(scim_a.directory)
    assert _active_tally(scim_b.directory) == 1


@pytest.mark.django_db
def test_the_active_tally_follows_bulk_writes_in_one_transaction(scim_a: Scim, scim_b: Scim) -> None:
    _bulk_users(scim_a.directory, 6, "a")
    DirectoryUser.objects.bulk_create(
        DirectoryUser(directory=scim_a.directory, user_name=f"off{i}@x.io", user_name_key=f"off{i}@x.io", active=False)
        for i in range(3)
    )
    _bulk_users(scim_b.directory, 2, "b")
    # One statement turning several users of two directories, some of them already inactive.
    DirectoryUser.objects.filter(user_name__in=["a0@x.io", "a1@x.io", "off0@x.io", "b0@x.io"]).update(active=False)
    DirectoryUser.objects.filter(user_name__in=["off1@x.io", "off2@x.io"]).update(active=True)
    DirectoryUser.objects.filter(directory=scim_a.directory, user_name__in=["a2@x.io", "off0@x.io"]).delete()
    assert _active_tally(scim_a.directory) == 5 == _active_counted(scim_a.directory)
    assert _active_tally(scim_b.directory) == 1 == _active_counted(scim_b.directory)


@pytest.mark.django_db(transaction=True)
def test_deleting_a_directory_drops_its_tally(scim_a: Scim, scim_b: Scim) -> None:
    _bulk_users(scim_a.directory, 3, "a")
    _bulk_users(scim_b.directory, 1, "b")
    scim_a.directory.delete()
    assert not UserTally.objects.filter(directory_id=scim_a.directory.pk).exists()
    assert _tally(scim_b.directory) == 1


@pytest.mark.django_db
def test_every_page_matches_offset_paging_as_the_directory_changes(scim_a: Scim) -> None:
    _bulk_users(scim_a.directory, 11, "a")
    _check_every_page(scim_a)  # deep reads: first seen, then marks built
    assert pages._marks_get(scim_a.directory.pk).keys  # type: ignore[union-attr]
    _check_every_page(scim_a)  # from marks
    DirectoryUser.objects.filter(user_name="a4@x.io").delete()  # shifts every later position
    _check_every_page(scim_a)
    _bulk_users(scim_a.directory, 2, "late")
    _check_every_page(scim_a, count=4)
    ids = _expected(scim_a.directory)
    scim_a.delete(f"/Users/{ids[0]}")
    _check_every_page(scim_a, count=1)


@pytest.mark.django_db
def test_stale_marks_are_not_used(scim_a: Scim) -> None:
    _bulk_users(scim_a.directory, 9, "a")
    _page(scim_a, 7, 2)
    _page(scim_a, 7, 2)  # unchanged since the last deep read: marks built
    built = pages._marks_get(scim_a.directory.pk)
    assert built is not None and len(built.keys or ()) == 3
    DirectoryUser.objects.filter(user_name="a0@x.io").delete()
    expected = _expected(scim_a.directory)
    assert _page(scim_a, 7, 2) == (8, expected[6:8])
    assert pages._marks_get(scim_a.directory.pk).keys is None  # type: ignore[union-attr]


@pytest.mark.django_db
def test_a_deep_page_from_marks_is_one_query_and_costs_the_same_at_any_position(scim_a: Scim) -> None:
    _bulk_users(scim_a.directory, 30, "a")
    _page(scim_a, 25, 3)
    _page(scim_a, 25, 3)
    for start in (4, 13, 28, 30):
        with CaptureQueriesContext(connection) as ctx:
            total, ids = _page(scim_a, start, 3)
        assert total == 30 and ids == _expected(scim_a.directory)[start - 1 : start + 2]
        assert len(ctx.captured_queries) == 1
        offsets = [int(n) for n in re.findall(r"OFFSET (\d+)", ctx.captured_queries[0]["sql"])]
        assert offsets and max(offsets) < pages.MARK_EVERY, offsets


@pytest.mark.django_db
def test_pages_stay_scoped_to_their_directory_and_secret(scim_a: Scim, scim_b: Scim) -> None:
    _bulk_users(scim_a.directory, 8, "a")
    _bulk_users(scim_b.directory, 8, "b")
    for _ in range(2):
        _check_every_page(scim_b, count=3)
    # Marks kept for B are keyed by B's id; a request naming B with A's secret gets nothing.
    intruder = Scim(scim_b.directory, secret=scim_a.directory.scim_secret)
    status, body = intruder.get("/Users?startIndex=5&count=3")
    assert status == 401 and "b5@x.io" not in str(body)
    _check_every_page(scim_a, count=3)


@pytest.mark.django_db
def test_the_backfill_counts_users_that_predate_the_triggers(scim_a: Scim) -> None:
    migration = importlib.import_module("directories.migrations.0003_user_tally")
    _bulk_users(scim_a.directory, 4, "a")
    UserTally.objects.filter(directory=scim_a.directory).delete()
    with connection.cursor() as cursor:
        cursor.execute(migration.BACKFILL, None)
    assert _tally(scim_a.directory) == 4
    assert _page(scim_a, 1, 100)[0] == 4


@pytest.mark.django_db
def test_the_active_backfill_counts_active_users_that_predate_the_triggers(scim_a: Scim) -> None:
    migration = importlib.import_module("directories.migrations.0013_user_tally_active")
    _bulk_users(scim_a.directory, 4, "a")
    DirectoryUser.objects.filter(user_name="a0@x.io").update(active=False)
    UserTally.objects.filter(directory=scim_a.directory).update(active=0)
    with connection.cursor() as cursor:
        cursor.execute(migration.BACKFILL, None)
    assert _active_tally(scim_a.directory) == 3
    assert _tally(scim_a.directory) == 4  # the pair the pages read is left as it was


def test_marks_of_unknown_directories_do_not_grow_without_bound() -> None:
    for _ in range(pages._MAX_DIRECTORIES + 10):
        pages._marks_put(uuid.uuid4(), pages._Marks((1, 0), None))
    assert len(pages._marks) == pages._MAX_DIRECTORIES


def _rest_ids(client: Client, query: dict[str, str]) -> list[str]:
    response = client.get("/api/v1/directory-sync/users", query)
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["data"]]


@pytest.mark.django_db
def test_rest_pages_of_one_directory_match_offset_paging_as_it_changes(api_client: Client, scim_a: Scim) -> None:
    _bulk_users(scim_a.directory, 10, "a")
    tenant = {"tenant": scim_a.directory.tenant, "product": scim_a.directory.product}
    named = {**tenant, "directoryId": str(scim_a.directory.pk)}
    for round_ in range(3):  # seen, marks built, from marks
        expected = _expected(scim_a.directory)
        for query in (tenant, named):
            for offset in range(len(expected) + 2):
                ids = _rest_ids(api_client, {**query, "pageOffset": str(offset), "pageLimit": "2"})
                assert ids == expected[offset : offset + 2], (round_, query, offset)
        if round_ == 1:
            assert pages._marks_get(scim_a.directory.pk).keys  # type: ignore[union-attr]
            DirectoryUser.objects.filter(user_name="a2@x.io").delete()


@pytest.mark.django_db
def test_rest_pages_across_two_directories_of_a_tenant_keep_one_order(api_client: Client, scim_a: Scim) -> None:
    other = directory_create(
        actor=TEST_ACTOR,
        data={"name": "Second", "tenant": scim_a.directory.tenant, "product": scim_a.directory.product},
    )
    _bulk_users(scim_a.directory, 4, "a")
    _bulk_users(other, 4, "b")
    _bulk_users(scim_a.directory, 3, "c")
    expected = [
        str(pk)
        for pk in DirectoryUser.objects.filter(directory__in=[scim_a.directory, other])
        .order_by("created_at", "id")
        .values_list("id", flat=True)
    ]
    tenant = {"tenant": scim_a.directory.tenant, "product": scim_a.directory.product}
    for offset in range(len(expected) + 1):
        assert (
            _rest_ids(api_client, {**tenant, "pageOffset": str(offset), "pageLimit": "3"})
            == expected[offset : offset + 3]
        )
