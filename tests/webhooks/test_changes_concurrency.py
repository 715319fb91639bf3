"""The changes feed under concurrent writers (contract §5.1), on PostgreSQL with real commits: every read
is the contiguous run from after+1, and once the writers stop the feed is exactly 1..N, N being the
number of acknowledged changes.

Eight threads write users of one directory through the SCIM endpoint (creates and renames, each a
change with one event) while a reader polls the feed from the last sequence it saw.
"""

from __future__ import annotations

import threading
from typing import Any

import orjson
import pytest
from django.db import connections
from django.test import Client

from directories.models import Directory
from tests.webhooks.feedrows import assert_gap_free_polls

pytestmark = pytest.mark.django_db(transaction=True)

SCIM_CT = "application/scim+json"
WRITERS = 8
USERS_PER_WRITER = 4
RENAMES_PER_USER = 3


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connections["default"].vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL (SQLite serialises every write)")


@pytest.fixture(autouse=True)
def _no_drain_on_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    from webhooks.services import draining

    monkeypatch.setattr(draining, "kick", lambda directory_id, target: None)


def _writer(directory: Directory, index: int, statuses: list[int], failures: list[BaseException]) -> None:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {directory.scim_secret}")
    users = f"/api/scim/v2.0/{directory.id}/Users"
    try:
        for n in range(USERS_PER_WRITER):
            body = {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": f"w{index}-{n}@acme.example"}
            created = client.post(users, data=orjson.dumps(body), content_type=SCIM_CT)
            statuses.append(created.status_code)
            if created.status_code != 201:
                continue
            user_id = created.json()["id"]
            for r in range(RENAMES_PER_USER):
                patch = {
                    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                    "Operations": [{"op": "replace", "path": "name.givenName", "value": f"g{index}-{n}-{r}"}],
                }
                renamed = client.patch(f"{users}/{user_id}", data=orjson.dumps(patch), content_type=SCIM_CT)
                statuses.append(renamed.status_code)
    except BaseException as exc:  # reported by the test, not lost in the thread
        failures.append(exc)
    finally:
        connections.close_all()


def _poll(directory: Directory, after: int, limit: int) -> list[dict[str, Any]]:
    client = Client(HTTP_AUTHORIZATION="Bearer test-env-api-key")
    response = client.get(f"/api/v1/directory-sync/{directory.id}/changes?after={after}&limit={limit}")
    assert response.status_code == 200, response.content
    return response.json()["data"]


def test_concurrent_scim_writers_never_make_a_reader_see_a_gap(directory_a: Directory) -> None:
    statuses: list[int] = []
    failures: list[BaseException] = []
    polls: list[tuple[int, list[int]]] = []
    writers_done = threading.Event()

    def reader() -> None:
        after = 0
        try:
            while True:
                finished = writers_done.is_set()  # read before polling: one more full pass after the end
                items = _poll(directory_a, after, 7)
                sequences = [item["sequence"] for item in items]
                polls.append((after, sequences))
                if sequences:
                    after = sequences[-1]
                elif finished:
                    return
        except BaseException as exc:
            failures.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=_writer, args=(directory_a, i, statuses, failures)) for i in range(WRITERS)]
    poller = threading.Thread(target=reader)
    poller.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    writers_done.set()
    poller.join(120)

    assert failures == []
    assert all(status < 500 for status in statuses), statuses
    acknowledged = sum(1 for status in statuses if 200 <= status < 300)
    assert acknowledged == WRITERS * USERS_PER_WRITER * (1 + RENAMES_PER_USER)
    assert_gap_free_polls(polls, acknowledged)
    final = _poll(directory_a, 0, 1000)
    assert [item["sequence"] for item in final] == list(range(1, acknowledged + 1))
    assert len({item["id"] for item in final}) == acknowledged
