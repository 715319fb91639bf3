"""Two folds of one directory at once (two readers, or a reader and celery beat) apply each event once:
the fold takes the directory's HistoryState row lock and reads its position after taking it (PostgreSQL,
real commits, one connection per thread)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from directories.models import Directory
from history.models import HistoryPoint, HistoryState, MembershipSpan, UserVersion
from history.services import history_catch_up
from tests.history.kit import history_view, rest_view
from tests.scim.conftest import Scim, group_body, user_body

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_folds_apply_each_event_once(directory_a: Directory, scim_a: Scim) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row locks between connections: PostgreSQL only")
    ids = [scim_a.post("/Users", user_body(f"c{i}@example.com"))[1]["id"] for i in range(30)]
    scim_a.post("/Groups", group_body("All", ids))
    for user_id in ids[:10]:
        scim_a.ops(f"/Users/{user_id}", {"op": "replace", "value": {"active": False}})
    expected = rest_view(directory_a)
    start = threading.Barrier(4)
    failures: list[BaseException] = []

    def fold() -> None:
        try:
            start.wait()
            history_catch_up(directory=Directory.objects.get(pk=directory_a.pk))
        except BaseException as exc:  # noqa: BLE001 (reported by the test below)
            failures.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=fold) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures
    assert HistoryState.objects.get(pk=directory_a.pk).folded_sequence == expected["sequence"]
    assert HistoryPoint.objects.filter(directory=directory_a).count() == expected["sequence"]
    assert UserVersion.objects.filter(directory=directory_a).count() == 40
    assert MembershipSpan.objects.filter(directory=directory_a).count() == 30
    assert history_view(directory_a, expected["sequence"])["users"] == expected["users"]
