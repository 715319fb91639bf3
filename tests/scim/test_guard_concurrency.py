"""The deprovision guard under concurrent requests (contract §4.2): deprovisions of one directory serialize on
the directory's row lock, never in process memory, so parallel requests, each on its own database connection
as on separate web processes, apply exactly as many as the limits allow and hold the rest.

Runs on both databases: on PostgreSQL with real commits (transaction mode), on SQLite against the suite's
database file, where each thread's connection waits on the database's write lock. The fault suite runs the
same against the web server's processes (tests/faults/test_guard.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from directories.models import Deprovision, Directory, DirectoryUser, HeldChange
from directories.services import directory_create
from scim.api import scim_request
from tests.actors import TEST_ACTOR
from tests.scim.guardkit import DEACTIVATE_OKTA, guard_set
from tests.scim.test_concurrency import _parallel

pytestmark = pytest.mark.django_db(transaction=True)


def _call(directory: Directory, method: str, body: Any = None, resource_id: str | None = None) -> dict[str, Any]:
    return scim_request(
        {
            "method": method,
            "directoryId": str(directory.id),
            "apiSecret": directory.scim_secret,
            "resourceType": "users",
            "resourceId": resource_id,
            "body": body,
        }
    )


@pytest.fixture
def directory() -> Directory:
    made = directory_create(actor=TEST_ACTOR, data={"tenant": "guard-race", "product": "crm"})
    # max_users binds: 1 % of 40 users is below it, so the percentage never stops the trip.
    return guard_set(made, max_users=10, max_percent=1)


def _users(directory: Directory, count: int) -> list[str]:
    return [_call(directory, "POST", {"userName": f"r{i}@race.example"})["data"]["id"] for i in range(count)]


def test_thirty_parallel_deletes_apply_exactly_ten_and_hold_twenty(directory: Directory) -> None:
    ids = _users(directory, 40)
    results = _parallel([lambda u=u: _call(directory, "DELETE", None, u) for u in ids[:30]])
    assert [r["status"] if isinstance(r, dict) else r for r in results] == [204] * 30
    deleted = set(ids[:30]) - {
        str(u) for u in DirectoryUser.objects.filter(directory=directory).values_list("id", flat=True)
    }
    assert len(deleted) == 10
    held = list(HeldChange.objects.filter(directory=directory).values_list("user_id", "change", "position"))
    assert len(held) == 20 and {change for _u, change, _p in held} == {"delete"}
    assert {str(u) for u, _c, _p in held} == set(ids[:30]) - deleted
    assert sorted(position for _u, _c, position in held) == list(range(1, 21))
    assert Deprovision.objects.filter(directory=directory).count() == 10
    directory.refresh_from_db()
    assert directory.guard_tripped_at is not None


def test_parallel_deactivations_and_deletes_mixed_hold_past_the_limit(directory: Directory) -> None:
    ids = _users(directory, 40)
    jobs = [lambda u=u: _call(directory, "PATCH", DEACTIVATE_OKTA, u) for u in ids[:15]]
    jobs += [lambda u=u: _call(directory, "DELETE", None, u) for u in ids[15:30]]
    results = _parallel(jobs)
    assert sorted(r["status"] for r in results) == [200] * 15 + [204] * 15, results
    applied = Deprovision.objects.filter(directory=directory).count()
    gone = 40 - DirectoryUser.objects.filter(directory=directory).count()
    inactive = DirectoryUser.objects.filter(directory=directory, active=False).count()
    assert applied == gone + inactive == 10
    assert HeldChange.objects.filter(directory=directory).count() == 20
