"""Directory health (contract §4.1): counted per request in process memory, written in batches, each
state change announced as dsync.health_changed, and no database round trip on a SCIM request for it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import orjson
import pytest
from django.conf import settings as django_settings
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from directories.activity import recorder
from directories.activity.recorder import Recorder
from directories.activity.services import scim_health_merge, scim_health_sweep
from directories.activity.state import AUTHENTICATED, Counters
from directories.models import Directory, ScimHealth, ScimLogEntry
from directories.services import directory_create, directory_scim_secret_rotate, directory_update
from tests.actors import TEST_ACTOR
from tests.scim.conftest import Scim, user_body
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

API = Client(HTTP_AUTHORIZATION="Bearer test-env-api-key")


@pytest.fixture
def announced(settings: Any, outbox_kept: list) -> Any:  # noqa: ANN401
    """WEBHOOK_URL set, so state changes are recorded as dsync.health_changed (kept in the outbox)."""
    settings.WEBHOOK_URL = "https://hooks.example.com/roster-ops"

    def changes(directory: Directory) -> list[tuple[str, str]]:
        rows = WebhookEvent.objects.filter(directory_id=directory.id, event_type="dsync.health_changed")
        bodies = [orjson.loads(row.body) for row in rows.order_by("created_at")]
        for body in bodies:
            assert "secret" not in body["data"]["scim"] and "secret" not in body["data"]["webhook"]
        return [(b["data"]["previous_state"], b["data"]["health"]["state"]) for b in bodies]

    return changes


def health(directory: Directory) -> dict[str, Any]:
    """The Directory's `health` over REST, after this process's counters are written."""
    recorder.flush()
    return API.get(f"/api/v1/directory-sync/{directory.id}").json()["data"]["health"]


def test_a_new_directory_is_never_connected_and_its_first_state_is_not_announced(announced: Any) -> None:
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"})
    assert health(directory) == {
        "state": "never_connected",
        "last_request_at": None,
        "last_success_at": None,
        "last_error_at": None,
        "requests_24h": 0,
        "errors_24h": 0,
        "auth_failures_24h": 0,
    }
    assert announced(directory) == []
    assert WebhookEvent.objects.filter(directory_id=directory.id, event_type="dsync.created").count() == 1


def test_requests_make_it_healthy_and_the_change_is_announced_once(scim_a: Scim, announced: Any) -> None:
    assert scim_a.get("/Users")[0] == 200
    assert scim_a.post("/Users", user_body())[0] == 201
    now = health(scim_a.directory)
    assert now["state"] == "healthy" and (now["requests_24h"], now["errors_24h"], now["auth_failures_24h"]) == (2, 0, 0)
    assert now["last_request_at"] == now["last_success_at"] and now["last_error_at"] is None
    assert scim_a.get("/Users")[0] == 200
    assert health(scim_a.directory)["requests_24h"] == 3
    assert announced(scim_a.directory) == [("never_connected", "healthy")]


def test_five_failed_authenticated_requests_make_it_failing_and_a_success_heals_it(
    scim_a: Scim, announced: Any
) -> None:
    assert scim_a.get("/Users")[0] == 200
    for _ in range(4):
        assert scim_a.get(f"/Users/{uuid.uuid4()}")[0] == 404
    assert health(scim_a.directory)["state"] == "healthy"
    assert scim_a.post("/Users", {"userName": 7})[0] == 400
    failing = health(scim_a.directory)
    assert failing["state"] == "failing" and (failing["requests_24h"], failing["errors_24h"]) == (6, 5)
    assert scim_a.get("/Users")[0] == 200
    assert health(scim_a.directory)["state"] == "healthy"
    assert announced(scim_a.directory) == [
        ("never_connected", "healthy"),
        ("healthy", "failing"),
        ("failing", "healthy"),
    ]


def test_a_wrong_secret_is_invalid_credentials_until_the_right_one_comes_back(scim_a: Scim, announced: Any) -> None:
    wrong = Scim(scim_a.directory, secret="an-old-secret")
    assert wrong.get("/Users")[0] == 401
    refused = health(scim_a.directory)
    assert refused["state"] == "invalid_credentials"
    assert (refused["requests_24h"], refused["errors_24h"], refused["auth_failures_24h"]) == (1, 1, 1)
    assert scim_a.get("/Users")[0] == 200
    assert health(scim_a.directory)["state"] == "healthy"
    assert wrong.get("/Users")[0] == 401
    assert health(scim_a.directory)["state"] == "invalid_credentials"
    assert announced(scim_a.directory) == [
        ("never_connected", "invalid_credentials"),
        ("invalid_credentials", "healthy"),
        ("healthy", "invalid_credentials"),
    ]


def test_a_401_for_a_directory_that_does_not_exist_counts_nowhere(directory_a: Directory) -> None:
    assert Client(HTTP_AUTHORIZATION="Bearer x").get(f"/api/scim/v2.0/{uuid.uuid4()}/Users").status_code == 401
    assert recorder.flush() == 0
    assert not ScimHealth.objects.exists()


def test_deactivation_is_a_state_of_its_own_and_is_announced_at_once(scim_a: Scim, announced: Any) -> None:
    assert scim_a.get("/Users")[0] == 200
    recorder.flush()
    directory_update(actor=TEST_ACTOR, directory=scim_a.directory, data={"deactivated": True})
    assert API.get(f"/api/v1/directory-sync/{scim_a.directory.id}").json()["data"]["health"]["state"] == "deactivated"
    assert scim_a.get("/Users")[0] == 403  # counted, yet still deactivated
    refused = health(scim_a.directory)
    assert refused["state"] == "deactivated" and refused["errors_24h"] == 1
    directory_update(actor=TEST_ACTOR, directory=scim_a.directory, data={"deactivated": False})
    assert health(scim_a.directory)["state"] == "healthy"
    assert announced(scim_a.directory) == [
        ("never_connected", "healthy"),
        ("healthy", "deactivated"),
        ("deactivated", "healthy"),
    ]


def test_the_sweep_notices_silence_and_the_next_request_ends_it(scim_a: Scim, announced: Any, settings: Any) -> None:
    assert scim_a.get("/Users")[0] == 200
    recorder.flush()
    later = timezone.now() + timedelta(days=settings.SCIM_SILENT_DAYS, seconds=1)
    assert scim_health_sweep(now=later - timedelta(seconds=2)).silent == 0  # not yet
    assert scim_health_sweep(now=later).silent == 1
    assert ScimHealth.objects.get(directory=scim_a.directory).state == "silent"
    assert scim_health_sweep(now=later).silent == 0  # announced once
    assert scim_a.get("/Users")[0] == 200
    assert health(scim_a.directory)["state"] == "healthy"
    assert announced(scim_a.directory) == [
        ("never_connected", "healthy"),
        ("healthy", "silent"),
        ("silent", "healthy"),
    ]


def test_the_sweep_erases_previous_secrets_past_their_expiry(scim_a: Scim) -> None:
    directory_scim_secret_rotate(actor=TEST_ACTOR, directory=scim_a.directory, grace_seconds=60)
    result = scim_health_sweep(now=timezone.now() + timedelta(seconds=61))
    row = Directory.objects.get(pk=scim_a.directory.pk)
    assert (
        result.secrets_cleared == 1 and row.previous_scim_secret == "" and row.previous_scim_secret_expires_at is None
    )


def test_uses_are_credited_to_the_secret_used_even_when_a_rotation_came_before_the_flush(scim_a: Scim) -> None:
    old = scim_a.directory.scim_secret
    assert scim_a.get("/Users")[0] == 200  # with the old secret, not flushed yet
    directory = directory_scim_secret_rotate(actor=TEST_ACTOR, directory=scim_a.directory, grace_seconds=3600)
    recorder.flush()
    scim = API.get(f"/api/v1/directory-sync/{directory.id}").json()["data"]["scim"]
    assert scim["last_used_at"] is None and scim["previous_secret_last_used_at"] is not None
    assert Scim(directory, secret=directory.scim_secret).get("/Users")[0] == 200
    assert Scim(directory, secret=old).get("/Users")[0] == 200
    recorder.flush()
    after = API.get(f"/api/v1/directory-sync/{directory.id}").json()["data"]["scim"]
    assert (
        after["last_used_at"] is not None
        and after["previous_secret_last_used_at"] > scim["previous_secret_last_used_at"]
    )


def test_counters_that_cannot_be_written_are_kept_for_the_next_flush(
    scim_a: Scim, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import OperationalError

    from directories.activity import recorder as recorder_module

    for _ in range(3):
        scim_a.get("/Users")

    def down(**kwargs: Any) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(recorder_module, "scim_health_merge", down)
    assert recorder.flush() == 0
    monkeypatch.undo()
    scim_a.get("/Users")
    assert health(scim_a.directory)["requests_24h"] == 4


def test_a_deleted_directory_drops_its_counters(scim_a: Scim) -> None:
    scim_a.get("/Users")
    scim_a.directory.delete()
    assert recorder.flush() == 1  # handled: nothing to write it to
    assert not ScimHealth.objects.exists()


def test_recording_adds_no_database_round_trip_to_a_request(scim_a: Scim, monkeypatch: pytest.MonkeyPatch) -> None:
    """What tests/scim/test_queries.py pins per operation, here with the recording seen to happen: the
    counters are recorded (and a failure's log entry queued), and no statement of the request touches
    the health or log tables."""
    recorded: list[Any] = []
    real = recorder.record
    monkeypatch.setattr(recorder, "record", lambda *a, **k: (recorded.append(k), real(*a, **k)))
    _, user = scim_a.post("/Users", user_body())
    for call in (
        lambda: scim_a.get(f"/Users/{user['id']}"),
        lambda: scim_a.get("/Users"),
        lambda: scim_a.put(f"/Users/{user['id']}", user_body(title="x")),
        lambda: scim_a.post("/Users", user_body("second@x.io")),
        lambda: scim_a.get(f"/Users/{uuid.uuid4()}"),  # a failure: its log entry waits for the flush too
    ):
        with CaptureQueriesContext(connection) as ctx:
            call()
        assert not [q["sql"] for q in ctx.captured_queries if "scimhealth" in q["sql"] or "scimlogentry" in q["sql"]]
    assert len(recorded) == 6 and {r["kind"] for r in recorded} == {AUTHENTICATED}
    assert recorder.flush() == 2  # the 404's log entry, and the directory's counters


@pytest.mark.django_db(transaction=True)
def test_batches_written_at_the_same_time_by_several_processes_add_up(directory_a: Directory) -> None:
    """Eight "processes" (threads with their own connections) write their batches for one directory at
    once; the row's lock serializes them and every count is kept."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL (CI runs this)")
    now_us = int(time.time() * 1_000_000)
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def process(i: int) -> None:
        batch = Counters()
        for j in range(10):
            batch.add(at=now_us - (i * 10 + j), status=200 if j else 500, kind=AUTHENTICATED)
        try:
            barrier.wait()
            scim_health_merge(directory_id=directory_a.id, counters=batch)
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=process, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    row = ScimHealth.objects.get(directory=directory_a)
    assert sum(counts[0] for counts in row.hours.values()) == 80
    assert sum(counts[1] for counts in row.hours.values()) == 8
    assert row.state == "healthy" and len(row.recent_failures) == 5


@pytest.mark.django_db(transaction=True)
def test_the_background_thread_writes_the_counters_and_the_log(directory_a: Directory, settings: Any) -> None:
    settings.SCIM_ACTIVITY_FLUSH_SECONDS = 0.05
    process = Recorder()
    entry = {"at": timezone.now(), "method": "GET", "path": "/Users/x", "status": 404, "latency_ms": 1}
    try:
        process.record(directory_a.id, at=int(time.time() * 1_000_000), status=200, kind=AUTHENTICATED)
        process.log(directory_a.id, {**entry, "request_id": "r1", "request_body": "", "response_body": ""})
        deadline = time.monotonic() + 10
        while not (
            ScimHealth.objects.filter(directory=directory_a, state="healthy").exists()
            and ScimLogEntry.objects.filter(directory=directory_a, request_id="r1").exists()
        ):
            assert time.monotonic() < deadline, "the background thread wrote nothing"
            time.sleep(0.05)
    finally:
        process.stop()


@pytest.mark.django_db(transaction=True)
def test_what_is_left_is_written_when_the_process_exits(directory_a: Directory) -> None:
    """A web process that records a request and exits (no background thread, no explicit flush): the
    counters are in the database once it is gone."""
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    else:
        url = f"sqlite:///{db['NAME']}"
    script = (
        "import django, time, uuid; django.setup()\n"
        "from directories.activity import recorder\n"
        f"recorder.record(uuid.UUID('{directory_a.id}'), at=int(time.time() * 1e6), status=404, kind='authenticated')\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "TEST_DATABASE_URL": url,
        "SCIM_HEALTH_FLUSH_SECONDS": "0",
        "CI": "",
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=django_settings.BASE_DIR, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    row = ScimHealth.objects.get(directory=directory_a)
    assert (row.state, sum(counts[1] for counts in row.hours.values())) == ("healthy", 1)
