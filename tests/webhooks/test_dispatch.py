"""After-commit dispatch end to end, through the SCIM endpoint: in-process (no broker), a real Celery
worker on the test broker, and a broker outage recovered by the sweep.

These tests commit for real (transaction=True): delivery runs on another thread with its own
database connection, exactly as in production.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client

from directories.models import Directory
from tests.webhooks.conftest import Receiver, TaskCounter, closed_port, make_hooked_directory, use_broker
from webhooks import dispatch
from webhooks.models import EventState, WebhookDelivery, WebhookEvent
from webhooks.services import events_sweep

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "whsec-acme-0123456789abcdef"
SCIM_CT = "application/scim+json"


def _scim(directory: Directory) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {directory.scim_secret}")


def _post(client: Client, directory: Directory, resource: str, body: dict[str, Any]) -> Any:
    return client.post(f"/api/scim/v2.0/{directory.id}/{resource}", json.dumps(body), content_type=SCIM_CT)


def _settled(response: Any) -> Any:
    """Let the in-process deliveries of this request finish before the next request. The SQLite test
    database is shared-cache in-memory, where two connections writing at once fail with "table is
    locked" instead of waiting (a file database in WAL mode, as `scripts/run.sh` uses, waits)."""
    assert dispatch.drain(timeout=15)
    return response


def _user(name: str) -> dict[str, Any]:
    return {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
        "userName": name,
        "name": {"givenName": "Ann", "familyName": "Lee"},
        "emails": [{"value": name, "primary": True, "type": "work"}],
        "active": True,
    }


@pytest.fixture(autouse=True)
def one_pool_thread_on_sqlite() -> Iterator[None]:
    """On the shared-cache in-memory SQLite test database, concurrent writers fail rather than wait;
    run the in-process pool with one thread there (PostgreSQL runs use the real pool size)."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    if connection.vendor != "sqlite":
        yield
        return
    assert dispatch.drain(timeout=15)
    previous = dispatch._executor
    dispatch._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="roster-webhook-test")
    yield
    dispatch.drain(timeout=15)
    dispatch._executor.shutdown(wait=True)
    dispatch._executor = previous


@contextlib.contextmanager
def running_worker() -> Iterator[None]:
    from celery.contrib.testing.worker import start_worker

    from config.celery import app

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=15, loglevel="WARNING"):
        yield


# --- in-process (no broker: the embedded default) ---------------------------------------------------


def test_scim_changes_are_delivered_in_process_after_commit_signed_in_order(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
) -> None:
    directory = make_hooked_directory(receiver)
    scim = _scim(directory)
    created = _settled(_post(scim, directory, "Users", _user("ann@example.com")))
    assert created.status_code == 201, created.content
    user_id = created.json()["id"]
    patched = _settled(
        scim.patch(
            f"/api/scim/v2.0/{directory.id}/Users/{user_id}",
            json.dumps(
                {
                    "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
                    "Operations": [{"op": "replace", "value": {"active": False}}],
                }
            ),
            content_type=SCIM_CT,
        )
    )
    assert patched.status_code in (200, 204)
    group = _settled(
        _post(
            scim,
            directory,
            "Groups",
            {
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
                "displayName": "Eng",
                "members": [{"value": user_id}],
            },
        )
    )
    assert group.status_code == 201, group.content
    group_id = group.json()["id"]
    assert _settled(scim.delete(f"/api/scim/v2.0/{directory.id}/Groups/{group_id}")).status_code == 204
    assert scim.delete(f"/api/scim/v2.0/{directory.id}/Users/{user_id}").status_code == 204
    assert dispatch.drain(timeout=15)

    got = receiver.wait_for(6)
    events = [r.json["event"] for r in got]
    assert events[:2] == ["user.created", "user.updated"]
    assert {"group.created", "group.user_added", "group.deleted", "user.deleted"} <= set(events)
    for request in got:
        receiver.assert_signed(request, SECRET)
        assert request.json["directory_id"] == str(directory.id)
    assert got[1].json["data"]["active"] is False
    added = next(r.json for r in got if r.json["event"] == "group.user_added")
    assert added["data"]["id"] == user_id and added["data"]["group"]["id"] == group_id
    assert WebhookDelivery.objects.filter(directory=directory, delivered=True).count() == len(got)
    assert not WebhookEvent.objects.filter(directory_id=directory.id).exists()


def test_slow_receiver_does_not_hold_the_scim_request_in_process(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    receiver.slow_seconds = 2  # below WEBHOOK_TIMEOUT (3 s in tests): a slow success
    directory = make_hooked_directory(receiver, path="/slow")
    started = time.monotonic()
    assert _post(_scim(directory), directory, "Users", _user("slow@example.com")).status_code == 201
    assert time.monotonic() - started < 1.0
    assert dispatch.drain(timeout=15)
    assert len(receiver.wait_for(1)) == 1
    assert WebhookDelivery.objects.get(directory=directory).delivered is True


# --- a real Celery worker on the test broker --------------------------------------------------------


@pytest.mark.broker
def test_celery_worker_delivers_a_signed_event_end_to_end(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    celery_worker,  # noqa: ANN001
    delivered_tasks: TaskCounter,
) -> None:
    directory = make_hooked_directory(receiver)
    response = _post(_scim(directory), directory, "Users", _user("celery@example.com"))
    assert response.status_code == 201
    (request,) = receiver.wait_for(1, timeout=20)
    receiver.assert_signed(request, SECRET)
    assert request.json["event"] == "user.created"
    assert request.json["data"]["id"] == response.json()["id"]
    assert delivered_tasks.wait_for(1)
    assert WebhookDelivery.objects.filter(directory=directory, delivered=True).count() == 1
    assert not dispatch._in_flight  # it went through the broker, not the in-process pool


@pytest.mark.broker
def test_slow_receiver_does_not_slow_the_scim_request_with_a_broker(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    celery_worker,  # noqa: ANN001
    delivered_tasks: TaskCounter,
) -> None:
    receiver.slow_seconds = 2  # below WEBHOOK_TIMEOUT (3 s in tests): a slow success
    directory = make_hooked_directory(receiver, path="/slow")
    started = time.monotonic()
    assert _post(_scim(directory), directory, "Users", _user("slow@example.com")).status_code == 201
    assert time.monotonic() - started < 1.0
    assert len(receiver.wait_for(1, timeout=20)) == 1
    assert delivered_tasks.wait_for(1)
    assert WebhookDelivery.objects.get(directory=directory).delivered is True


@pytest.mark.broker
def test_event_enqueued_twice_is_attempted_once(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    celery_worker,  # noqa: ANN001
    delivered_tasks: TaskCounter,
) -> None:
    directory = make_hooked_directory(receiver)
    assert _post(_scim(directory), directory, "Users", _user("twice@example.com")).status_code == 201
    assert delivered_tasks.wait_for(1)
    event_id = WebhookDelivery.objects.get(directory=directory).event_id
    dispatch.enqueue(event_id)
    dispatch.enqueue(event_id)
    assert delivered_tasks.wait_for(3)  # both extra tasks ran, and found nothing to claim
    assert len(receiver.wait_for(2, timeout=0.5)) == 1


@pytest.mark.broker
def test_broker_outage_loses_nothing_and_the_sweep_delivers_each_event_once(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    broker_url: str,
    delivered_tasks: TaskCounter,
) -> None:
    directory = make_hooked_directory(receiver)
    dead = f"redis://127.0.0.1:{closed_port()}/15"
    private_ok.CELERY_BROKER_URL = dead
    use_broker(dead)
    scim = _scim(directory)
    for i in range(4):
        started = time.monotonic()
        response = _post(scim, directory, "Users", _user(f"outage{i}@example.com"))
        assert response.status_code == 201  # the write succeeds; the publish failure is not a 500
        assert time.monotonic() - started < 2.0  # and does not hold the request for long
    pending = set(WebhookEvent.objects.filter(state=EventState.PENDING).values_list("id", flat=True))
    assert len(pending) == 4
    assert receiver.wait_for(1, timeout=0.5) == []

    # The broker is back: the sweep enqueues each never-attempted event, the worker sends it once.
    private_ok.CELERY_BROKER_URL = broker_url
    use_broker(broker_url)
    with running_worker():
        assert events_sweep(pending_age=timedelta(0)).enqueued == 4
        assert delivered_tasks.wait_for(4)
        assert WebhookDelivery.objects.filter(directory=directory, delivered=True).count() == 4
        # A second sweep finds nothing left to enqueue; nothing is sent twice.
        assert events_sweep(pending_age=timedelta(0)).enqueued == 0
    got = receiver.wait_for(5, timeout=0.5)
    assert len(got) == 4
    assert {r.json["id"] for r in got} == {str(e) for e in pending}
    for request in got:
        receiver.assert_signed(request, SECRET)
    assert not WebhookEvent.objects.filter(directory_id=directory.id).exists()


def test_publish_failure_opens_a_breaker_that_on_commit_publishes_respect_and_the_sweep_ignores(
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A broker that hangs instead of refusing would cost every request a connect timeout; after one
    failure, on-commit publishes are skipped for a while (the events wait in the outbox)."""
    import uuid

    from webhooks.tasks import webhook_event_deliver

    dead = f"redis://127.0.0.1:{closed_port()}/15"
    private_ok.CELERY_BROKER_URL = dead
    use_broker(dead)
    attempts: list[str] = []
    real_apply_async = webhook_event_deliver.apply_async

    def counting_apply_async(*args: Any, **kwargs: Any) -> Any:
        attempts.append(kwargs["args"][0])
        return real_apply_async(*args, **kwargs)

    monkeypatch.setattr(webhook_event_deliver, "apply_async", counting_apply_async)
    try:
        ids = [uuid.uuid4() for _ in range(3)]
        started = time.monotonic()
        for event_id in ids:
            dispatch.enqueue(event_id)  # never raises
        assert time.monotonic() - started < 2.0
        assert attempts == [str(ids[0])]  # the breaker skipped the other two
        assert dispatch.enqueue_many(ids) == 0  # the sweep tries again, stops at the first failure
        assert attempts == [str(ids[0]), str(ids[0])]
    finally:
        use_broker(None)
