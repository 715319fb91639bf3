"""Concurrency on PostgreSQL: uniqueness from the constraint, member writes serialized per group, no deadlocks.

On SQLite these skip (one writer at a time, no row locks to test); under CI=true the suite runs on
PostgreSQL, where they must run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, connections

from directories.models import Directory, DirectoryUser, GroupMembership
from directories.services import directory_create
from scim.api import scim_request
from tests.actors import TEST_ACTOR

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row locking and concurrent constraint checks need PostgreSQL (CI runs them)")


@pytest.fixture
def directory() -> Directory:
    # No webhook: events are observed through the embedding callback (the outbox is the webhooks
    # area's, and its in-process delivery would consume the rows while we count them).
    return directory_create(actor=TEST_ACTOR, data={"tenant": "race", "product": "crm"})


EVENTS: list[dict] = []
_LOCK = threading.Lock()


def _sink(event: dict) -> None:
    with _LOCK:
        EVENTS.append(event)


@pytest.fixture(autouse=True)
def _clear_events() -> None:
    EVENTS.clear()


def _parallel(jobs: list[Callable[[], Any]]) -> list[Any]:
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = jobs[i]()
        except Exception as exc:  # noqa: BLE001 - surfaced through the results
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def _call(directory: Directory, method: str, resource: str, body: Any = None, resource_id: str | None = None) -> dict:
    return scim_request(
        {
            "method": method,
            "directoryId": str(directory.id),
            "apiSecret": directory.scim_secret,
            "resourceType": resource,
            "resourceId": resource_id,
            "body": body,
        },
        callback=_sink,
    )


def _patch(op: str, ids: list[str]) -> dict:
    return {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": op, "path": "members", "value": [{"value": i} for i in ids]}],
    }


def test_twenty_parallel_creates_of_one_username(directory: Directory) -> None:
    body = {"userName": "race@example.com", "name": {"givenName": "R", "familyName": "C"}}
    results = _parallel([lambda: _call(directory, "POST", "users", body) for _ in range(20)])
    statuses = sorted(r["status"] for r in results)
    assert statuses == [201] + [409] * 19, results
    assert all(r["data"]["scimType"] == "uniqueness" for r in results if r["status"] == 409)
    assert DirectoryUser.objects.filter(directory=directory).count() == 1
    assert [e["event"] for e in EVENTS] == ["user.created"]


def test_fifty_parallel_member_adds_to_one_group(directory: Directory) -> None:
    users = [_call(directory, "POST", "users", {"userName": f"u{i}@x.io"})["data"]["id"] for i in range(50)]
    group = _call(directory, "POST", "groups", {"displayName": "Everyone"})["data"]["id"]
    results = _parallel([lambda u=u: _call(directory, "PATCH", "groups", _patch("add", [u]), group) for u in users])
    assert [r["status"] for r in results] == [204] * 50, results
    assert GroupMembership.objects.filter(group_id=group).count() == 50
    added = [e["data"]["id"] for e in EVENTS if e["event"] == "group.user_added"]
    assert sorted(added) == sorted(users)


def test_parallel_add_and_remove_reach_the_exact_expected_set(directory: Directory) -> None:
    users = [_call(directory, "POST", "users", {"userName": f"m{i}@x.io"})["data"]["id"] for i in range(30)]
    group = _call(directory, "POST", "groups", {"displayName": "Mixed", "members": [{"value": u} for u in users[:15]]})
    gid = group["data"]["id"]
    jobs = [lambda u=u: _call(directory, "PATCH", "groups", _patch("remove", [u]), gid) for u in users[:10]]
    jobs += [lambda u=u: _call(directory, "PATCH", "groups", _patch("add", [u]), gid) for u in users[15:]]
    jobs += [lambda: _call(directory, "PATCH", "groups", _patch("add", users[20:25][::-1]), gid)]
    results = _parallel(jobs)
    assert all(r["status"] == 204 for r in results), results
    expected = set(users[10:])
    assert {str(u) for u in GroupMembership.objects.filter(group_id=gid).values_list("user_id", flat=True)} == expected


def test_member_add_racing_user_delete_never_fails_with_500(directory: Directory) -> None:
    users = [_call(directory, "POST", "users", {"userName": f"d{i}@x.io"})["data"]["id"] for i in range(10)]
    group = _call(directory, "POST", "groups", {"displayName": "Racing"})["data"]["id"]
    jobs = [lambda u=u: _call(directory, "PATCH", "groups", _patch("add", [u]), group) for u in users]
    jobs += [lambda u=u: _call(directory, "DELETE", "users", None, u) for u in users]
    results = _parallel(jobs)
    assert not [r for r in results if isinstance(r, Exception)], results
    assert all(r["status"] in (204, 400) for r in results), results
    assert not GroupMembership.objects.filter(group_id=group).exists()
    assert not DirectoryUser.objects.filter(directory=directory).exists()


def test_parallel_patches_of_one_user_lose_no_update(directory: Directory) -> None:
    uid = _call(directory, "POST", "users", {"userName": "multi@x.io"})["data"]["id"]
    jobs = [
        lambda i=i: _call(
            directory,
            "PATCH",
            "users",
            {"Operations": [{"op": "add", "path": "emails", "value": [{"value": f"e{i}@x.io", "type": "other"}]}]},
            uid,
        )
        for i in range(10)
    ]
    results = _parallel(jobs)
    assert all(r["status"] == 200 for r in results), results
    assert len(DirectoryUser.objects.get(pk=uid).raw["emails"]) == 10
