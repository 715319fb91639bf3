"""After-commit kicks and drains end to end, through the SCIM endpoint: in-process (no broker), a real Celery
worker on the test broker, and a broker outage recovered by the sweep.

These tests commit for real (transaction=True): delivery runs on another thread with its own
database connection, exactly as in production.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.test import Client

from directories.models import Directory
from tests.webhooks.conftest import (
    Receiver,
    TaskCounter,
    closed_port,
    make_hooked_directory,
    running_worker,
    single_drain_thread_on_sqlite,
    use_broker,
)
from webhooks.drainflag import DrainFlag
from webhooks.models import EventState, WebhookDelivery, WebhookEvent
from webhooks.services import drain_pool, drain_task, draining, drains, events_sweep

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
    assert drain_pool.drain(timeout=15)
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
    with single_drain_thread_on_sqlite():
        yield


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Drain requests recorded instead of published: these tests run the drain themselves, here."""
    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(draining, "publish", lambda key: calls.append(key) or True)
    return calls


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
    assert drain_pool.drain(timeout=15)

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
    assert set(WebhookEvent.objects.filter(directory_id=directory.id).values_list("state", flat=True)) == {"delivered"}


def test_slow_receiver_does_not_hold_the_scim_request_in_process(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    receiver.slow_seconds = 2  # below WEBHOOK_TIMEOUT (3 s in tests): a slow success
    directory = make_hooked_directory(receiver, path="/slow")
    started = time.monotonic()
    assert _post(_scim(directory), directory, "Users", _user("slow@example.com")).status_code == 201
    assert time.monotonic() - started < 1.0
    assert drain_pool.drain(timeout=15)
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
    assert not drain_pool._in_flight  # it went through the broker, not the in-process pool


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
def test_an_event_drained_again_or_asked_for_by_id_is_still_attempted_once(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    celery_worker,  # noqa: ANN001
    delivered_tasks: TaskCounter,
) -> None:
    from webhooks.tasks import webhook_event_deliver

    directory = make_hooked_directory(receiver)
    assert _post(_scim(directory), directory, "Users", _user("twice@example.com")).status_code == 201
    assert delivered_tasks.wait_for(1)
    event_id = WebhookDelivery.objects.get(directory=directory).event_id
    # Messages of the per-event task published before batched draining, and the sweep's drain request.
    webhook_event_deliver.apply_async(args=[str(event_id)])
    webhook_event_deliver.apply_async(args=[str(event_id)])
    assert draining.kick_many([(directory.id, "directory")]) == 1
    assert delivered_tasks.wait_for(4)  # all three extra tasks ran, and found nothing to claim
    assert len(receiver.wait_for(2, timeout=0.5)) == 1
    assert WebhookDelivery.objects.filter(directory=directory).count() == 1


@pytest.mark.broker
def test_a_deliver_message_queued_before_batched_draining_is_delivered_once(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    celery_worker,  # noqa: ANN001
    delivered_tasks: TaskCounter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from webhooks.services import event_record
    from webhooks.tasks import webhook_event_deliver

    directory = make_hooked_directory(receiver)
    monkeypatch.setattr(draining, "kick", lambda *args: None)  # as if recorded by the previous version
    payload = event_record(directory=directory, event_type="user.created", data={"id": "1"})
    webhook_event_deliver.apply_async(args=[payload["id"]])
    webhook_event_deliver.apply_async(args=[payload["id"]])
    assert delivered_tasks.wait_for(2)
    (request,) = receiver.wait_for(2, timeout=0.5)
    assert request.json["id"] == payload["id"]
    receiver.assert_signed(request, SECRET)
    assert WebhookDelivery.objects.get(directory=directory).delivered is True


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
        assert response.status_code == 201  # the write succeeds; the broker failure is not a 500
        assert time.monotonic() - started < 2.0  # and does not hold the request for long
    pending = list(WebhookEvent.objects.filter(state=EventState.PENDING).values_list("id", flat=True))
    assert len(pending) == 4
    assert receiver.wait_for(1, timeout=0.5) == []

    # The broker is back: the sweep asks for a drain of the directory, which sends each event once.
    private_ok.CELERY_BROKER_URL = broker_url
    use_broker(broker_url)
    with running_worker():
        assert events_sweep(pending_age=timedelta(0)).enqueued == 4
        assert delivered_tasks.wait_for(1)  # one drain for the directory's four events
        assert WebhookDelivery.objects.filter(directory=directory, delivered=True).count() == 4
        # A second sweep finds nothing left to hand over; nothing is sent twice.
        assert events_sweep(pending_age=timedelta(0)).enqueued == 0
    got = receiver.wait_for(5, timeout=0.5)
    assert [r.json["id"] for r in got] == [str(e) for e in pending]  # once each, in commit order
    for request in got:
        receiver.assert_signed(request, SECRET)
    assert set(WebhookEvent.objects.filter(directory_id=directory.id).values_list("state", flat=True)) == {"delivered"}


@pytest.mark.parametrize("scheme", ["redis", "amqp"])
def test_a_failed_kick_opens_a_breaker_that_after_commit_kicks_respect_and_the_sweep_ignores(
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
) -> None:
    """A broker that hangs instead of refusing would cost every request a connect timeout; after one
    failure, after-commit kicks are skipped for a while (the events wait in the outbox). With Redis the
    failure is met at the coalescing SET, before any publish; with RabbitMQ at the publish."""
    import uuid

    from webhooks.tasks import webhook_events_drain

    dead = (
        f"redis://127.0.0.1:{closed_port()}/15"
        if scheme == "redis"
        else f"amqp://guest:guest@127.0.0.1:{closed_port()}//"
    )
    private_ok.CELERY_BROKER_URL = dead
    use_broker(dead)
    contacts: list[tuple[str, str]] = []
    real_apply_async = webhook_events_drain.apply_async
    real_claim_or_wake = DrainFlag.claim_or_wake

    def counting_apply_async(*args: Any, **kwargs: Any) -> Any:
        contacts.append(("publish", kwargs["args"][0]))
        return real_apply_async(*args, **kwargs)

    def counting_claim_or_wake(self: Any, directory_id: str, target: str, ttl: float) -> Any:
        contacts.append(("set", directory_id))
        return real_claim_or_wake(self, directory_id, target, ttl)

    monkeypatch.setattr(webhook_events_drain, "apply_async", counting_apply_async)
    monkeypatch.setattr(DrainFlag, "claim_or_wake", counting_claim_or_wake)
    try:
        ids = [uuid.uuid4() for _ in range(3)]
        started = time.monotonic()
        for directory_id in ids:
            draining.kick(directory_id, "directory")  # never raises
        assert time.monotonic() - started < 2.0
        first = ("set" if scheme == "redis" else "publish", str(ids[0]))
        assert contacts == [first]  # the breaker skipped the other two
        assert (
            draining.kick_many([(i, "directory") for i in ids]) == 0
        )  # the sweep tries again, stops at the first failure
        assert contacts == [first, first]
    finally:
        use_broker(None)


# --- coalescing of kicks (Redis broker) and the in-process dirty flag ----------------------------------


@pytest.mark.broker
def test_kicks_while_a_drain_is_queued_publish_once_and_an_event_committed_as_it_gives_up_its_key_is_sent(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    broker_url: str,
    monkeypatch: pytest.MonkeyPatch,
    published: list[tuple[str, str]],
) -> None:
    """The race the drain's re-check exists for: an event commits after the drain's last claim, and its
    kick finds the key still held (so it publishes nothing, only pushes a wake-up the drain no longer
    waits for). The drain's claim after giving up the key must find it."""
    from webhooks.services import event_record

    directory = make_hooked_directory(receiver)
    key = (str(directory.id), "directory")
    first = [event_record(directory=directory, event_type="user.created", data={"id": str(i)}) for i in range(3)]
    assert published == [key]  # three commits, three kicks, one drain asked for
    flags = draining.drain_flag()
    assert flags is not None
    drain_key, wake_list = flags.names(*key)
    redis_client = redis.Redis.from_url(broker_url)
    assert redis_client.llen(wake_list) == 1  # the later kicks woke it (once is enough)

    late: list[dict[str, Any]] = []
    real_wait = flags.wait_for_wake

    def wait_then_race(directory_id: str, target: str, timeout: float) -> bool:
        if not late:
            late.append(event_record(directory=directory, event_type="user.updated", data={"id": "0"}))
            return False  # the wait ends just before that event's wake-up arrives
        return real_wait(directory_id, target, timeout)

    monkeypatch.setattr(flags, "wait_for_wake", wait_then_race)
    totals = drain_task.drain_run(*key)
    assert totals["delivered"] == 4
    got = receiver.wait_for(5, timeout=0.5)
    assert [r.json["id"] for r in got] == [p["id"] for p in [*first, *late]]  # all, once each, in order
    assert published == [key]  # the late event's kick published nothing
    assert set(WebhookEvent.objects.filter(directory_id=directory.id).values_list("state", flat=True)) == {"delivered"}
    assert not redis_client.exists(drain_key, wake_list)  # the key is given up at the end


@pytest.mark.broker
def test_a_steady_stream_to_one_directory_costs_far_fewer_publishes_than_events(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    celery_worker,  # noqa: ANN001
    delivered_tasks: TaskCounter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    published: list[Any] = []
    real_publish = draining.publish
    monkeypatch.setattr(draining, "publish", lambda k: published.append(k) or real_publish(k))
    directory = make_hooked_directory(receiver)
    scim = _scim(directory)
    for i in range(10):
        assert _post(scim, directory, "Users", _user(f"stream{i}@example.com")).status_code == 201
    got = receiver.wait_for(10, timeout=20)
    assert [r.json["data"]["email"] for r in got] == [f"stream{i}@example.com" for i in range(10)]  # in order
    assert 1 <= len(published) < 5  # a drain lingers between events instead of one task per event
    assert delivered_tasks.wait_for(len(published))
    assert WebhookDelivery.objects.filter(directory=directory, delivered=True).count() == 10


def test_a_kick_while_the_directorys_drain_runs_sets_its_dirty_flag_and_that_drain_sends_the_event(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from webhooks.services import event_record

    receiver.slow_seconds = 0.5
    directory = make_hooked_directory(receiver, path="/slow")
    submitted: list[Any] = []
    real_submit = drain_pool._submit
    monkeypatch.setattr(drain_pool, "_submit", lambda k: submitted.append(k) or real_submit(k))
    first = event_record(directory=directory, event_type="user.created", data={"id": "1"})
    assert len(receiver.wait_for(1)) == 1  # the drain is inside the first (slow) attempt
    second = event_record(directory=directory, event_type="user.updated", data={"id": "1"})
    assert drain_pool.drain(timeout=15)
    assert submitted == [(str(directory.id), "directory")]  # the second kick started no second drain
    got = receiver.wait_for(3, timeout=0.5)
    assert [r.json["id"] for r in got] == [first["id"], second["id"]]
    assert not drain_pool._dirty


def test_an_in_process_drain_hands_its_directory_over_when_its_budget_is_spent(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.db import transaction

    from webhooks.services import delivery, events_record

    monkeypatch.setattr(drains, "DRAIN_BUDGET", 0.0)
    monkeypatch.setattr(delivery, "BATCH_SIZE", 2)
    directory = make_hooked_directory(receiver)
    submitted: list[Any] = []
    real_submit = drain_pool._submit
    monkeypatch.setattr(drain_pool, "_submit", lambda k: submitted.append(k) or real_submit(k))
    with transaction.atomic():
        payloads = events_record(directory=directory, events=[("user.created", {"id": str(i)}) for i in range(5)])
    assert drain_pool.drain(timeout=15)
    got = receiver.wait_for(6, timeout=0.5)
    assert [r.json["id"] for r in got] == [p["id"] for p in payloads]  # in order across the jobs
    # The transaction's one kick, then a hand-over after every attempt: with no budget left, each job
    # makes its first claim (one event, its latency not known yet), sends it and hands over.
    assert len(submitted) == 6
    assert not drain_pool._dirty


def test_a_slow_receivers_events_are_claimed_a_few_at_a_time(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Batches are sized from the receiver's latency (BATCH_WINDOW of sending), so a worker killed while
    a slow receiver takes its time leaves few claimed events behind."""
    from django.db import transaction

    from webhooks.services import delivery, events_record

    receiver.slow_seconds = 0.2
    monkeypatch.setattr(drains, "BATCH_WINDOW", 0.3)
    monkeypatch.setattr(delivery, "BATCH_SIZE", 2)
    limits: list[int] = []
    real_batch = delivery.events_batch_deliver
    monkeypatch.setattr(delivery, "events_batch_deliver", lambda **kw: limits.append(kw["limit"]) or real_batch(**kw))
    directory = make_hooked_directory(receiver, path="/slow")
    with transaction.atomic():
        payloads = events_record(directory=directory, events=[("user.created", {"id": str(i)}) for i in range(4)])
    assert drain_pool.drain(timeout=15)
    # One until the latency is known; then, at ~0.2 s an event, one fits in 0.3 s; the last claim finds
    # nothing left.
    assert limits == [1, 1, 1, 1, 1]
    got = receiver.wait_for(5, timeout=0.5)
    assert [r.json["id"] for r in got] == [p["id"] for p in payloads]


@pytest.mark.broker
def test_a_drain_whose_worker_is_stopping_puts_its_batch_back_and_hands_the_directory_over(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    broker_url: str,
    published: list[tuple[str, str]],
) -> None:
    from webhooks.services import event_record

    directory = make_hooked_directory(receiver)
    key = (str(directory.id), "directory")
    payloads = [event_record(directory=directory, event_type="user.created", data={"id": str(i)}) for i in range(3)]
    assert published == [key]
    asked: list[int] = []

    def stopping_after_the_first_attempt() -> bool:
        asked.append(1)
        return len(asked) > 1

    drain_task.drain_run(*key, should_stop=stopping_after_the_first_attempt)
    assert [r.json["id"] for r in receiver.wait_for(2, timeout=0.5)] == [payloads[0]["id"]]
    assert list(WebhookEvent.objects.order_by("sequence").values_list("state", flat=True)) == [
        EventState.DELIVERED,
        *[EventState.PENDING] * 2,
    ]
    assert published == [key, key]  # handed over to a new task, which owns the flag now
    flag, _wake = draining.drain_flag().names(*key)
    assert redis.Redis.from_url(broker_url).exists(flag)
    drain_task.drain_run(*key)  # that task
    got = receiver.wait_for(4, timeout=0.5)
    assert [r.json["id"] for r in got] == [p["id"] for p in payloads]
    assert not redis.Redis.from_url(broker_url).exists(flag)


@pytest.mark.broker
def test_the_sweep_leaves_a_directory_whose_flag_is_held_and_starts_a_drain_once_the_flag_expires(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    broker_url: str,
    monkeypatch: pytest.MonkeyPatch,
    published: list[tuple[str, str]],
) -> None:
    """A live drain holds (and refreshes) its flag, and will claim the pending events itself; a flag
    left by a drain that was killed expires, and then the sweep asks for a new drain."""
    from webhooks.services import event_record

    directory = make_hooked_directory(receiver)
    key = (str(directory.id), "directory")
    monkeypatch.setattr(draining, "kick", lambda *args: None)  # recorded while the broker was unreachable
    event_record(directory=directory, event_type="user.created", data={"id": "1"})
    flag, _wake = draining.drain_flag().names(*key)
    redis.Redis.from_url(broker_url).set(flag, 1, px=300)  # the flag of a drain that is gone
    assert events_sweep(pending_age=timedelta(0)).enqueued == 1  # handed to the flag's owner...
    assert published == []  # ... so nothing published
    time.sleep(0.4)
    assert events_sweep(pending_age=timedelta(0)).enqueued == 1
    assert published == [key]
    drain_task.drain_run(*key)
    assert len(receiver.wait_for(1)) == 1


def test_with_a_non_redis_broker_every_kick_publishes_and_each_drain_takes_what_it_finds(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    published: list[tuple[str, str]],
) -> None:
    from webhooks.services import event_record

    private_ok.CELERY_BROKER_URL = "amqp://guest:guest@127.0.0.1:5672//"
    directory = make_hooked_directory(receiver)
    key = (str(directory.id), "directory")
    payloads = [event_record(directory=directory, event_type="user.created", data={"id": str(i)}) for i in range(3)]
    assert published == [key] * 3  # no flag to coalesce on
    assert drain_task.drain_run(*key)["delivered"] == 3  # the first task sends all three, in order
    assert drain_task.drain_run(*key)["claimed"] == 0  # the others find nothing
    got = receiver.wait_for(4, timeout=0.5)
    assert [r.json["id"] for r in got] == [p["id"] for p in payloads]


def test_drains_are_published_through_the_task_modules_publisher_installed_at_start_up() -> None:
    """webhooks.apps hands draining the one Celery-aware publisher; draining itself never imports tasks."""
    import ast
    from pathlib import Path

    from webhooks import tasks

    assert draining._publisher is tasks.drain_publish
    tree = ast.parse(Path(draining.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert not any(name and (name.startswith("celery") or name == "webhooks.tasks") for name in imported), imported
