"""Delivery of outbox events to a real local receiver: payloads, signatures, one attempt, the log."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import orjson
import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.comparison import comparison_key
from directories.models import Directory, DirectoryGroup, DirectoryUser
from directories.rendering import group_data, user_data
from directories.services import directory_create, directory_delete, directory_update
from tests.actors import TEST_ACTOR
from tests.webhooks.conftest import Receiver, make_hooked_directory
from webhooks.models import EventState, WebhookDelivery, WebhookEvent
from webhooks.services import (
    deliveries_purge,
    event_deliver,
    event_record,
    events_batch_deliver,
    events_record,
    events_sweep,
    sending_stale_after,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_drain_on_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests drive delivery themselves (event_deliver, events_batch_deliver, the sweep). On
    PostgreSQL they commit for real (tests/conftest.py), and the after-commit kick would hand the same
    events to the in-process drain in another thread; the kick itself is tested in test_draining.py."""
    from webhooks.services import draining

    monkeypatch.setattr(draining, "kick", lambda directory_id, target: None)


SECRET = "whsec-acme-0123456789abcdef"


def _user(directory: Directory, name: str = "ann@example.com") -> DirectoryUser:
    return DirectoryUser.objects.create(
        directory=directory,
        user_name=name,
        user_name_key=comparison_key(name),
        first_name="Ann",
        last_name="Lee",
        email=name,
        raw={"userName": name, "name": {"givenName": "Ann", "familyName": "Lee"}},
    )


def _group(directory: Directory, name: str = "Engineering") -> DirectoryGroup:
    return DirectoryGroup.objects.create(
        directory=directory, display_name=name, display_name_key=comparison_key(name), raw={"displayName": name}
    )


def _deliver_all(directory: Directory) -> None:
    for event_id in WebhookEvent.objects.filter(directory_id=directory.id).values_list("id", flat=True):
        event_deliver(event_id=event_id)


def test_each_of_the_eight_events_arrives_signed_with_the_spec_payload(
    hooked_directory: Directory, receiver: Receiver
) -> None:
    user = _user(hooked_directory)
    group = _group(hooked_directory)
    u, g = user_data(user, directory=hooked_directory), group_data(group)
    member = {**u, "group": g}
    expected = [
        ("user.created", u),
        ("user.updated", {**u, "active": False}),
        ("user.deleted", u),
        ("group.created", g),
        ("group.updated", {**g, "name": "Eng"}),
        ("group.deleted", g),
        ("group.user_added", member),
        ("group.user_removed", member),
    ]
    payloads = events_record(directory=hooked_directory, events=expected)
    _deliver_all(hooked_directory)

    got = receiver.wait_for(8)
    assert len(got) == 8
    by_id = {r.json["id"]: r for r in got}
    for payload, (event_type, data) in zip(payloads, expected, strict=True):
        request = by_id[payload["id"]]
        receiver.assert_signed(request, SECRET)
        assert request.headers["Content-Type"] == "application/json"
        assert request.headers["Roster-Event"] == event_type
        body = request.json
        assert set(body) == {"id", "event", "created_at", "sequence", "directory_id", "tenant", "product", "data"}
        # Numbered 1..8 in recording order (the directory's first events), in the body and the header.
        assert body["sequence"] == payload["sequence"] == expected.index((event_type, data)) + 1
        assert request.headers["Roster-Event-Sequence"] == str(body["sequence"])
        assert list(body)[:4] == ["id", "event", "created_at", "sequence"]
        assert body["event"] == event_type
        assert body["directory_id"] == str(hooked_directory.id)
        assert (body["tenant"], body["product"]) == ("acme", "crm")
        assert body["created_at"].endswith("Z")
        assert body["data"] == data
    assert by_id[payloads[6]["id"]].json["data"]["group"] == g
    # Each attempt is logged, delivered, with the exact bytes that were sent and signed.
    log = {d.event_id: d for d in WebhookDelivery.objects.filter(directory=hooked_directory)}
    assert len(log) == 8
    for request in got:
        entry = log[uuid.UUID(request.json["id"])]
        assert entry.delivered and entry.status_code == 200 and entry.error_class == ""
        assert entry.payload.encode() == request.body
        assert entry.endpoint == receiver.url("/ok")
        assert entry.response_excerpt == "thanks"
        assert entry.latency_ms is not None and entry.attempted_at <= entry.finished_at
        assert (entry.sequence, entry.resend) == (request.json["sequence"], False)
    # The outbox rows stay, with their outcome: they are the directory's changes feed.
    kept = WebhookEvent.objects.filter(directory_id=hooked_directory.id).order_by("sequence")
    assert [e.sequence for e in kept] == list(range(1, 9))
    assert {(e.state, e.attempts, e.status_code) for e in kept} == {(EventState.DELIVERED, 1, 200)}
    assert all(e.last_attempt_at is not None and e.finished_at is not None for e in kept)


def test_the_body_sent_is_byte_for_byte_the_stored_body(hooked_directory: Directory, receiver: Receiver) -> None:
    payload = event_record(
        directory=hooked_directory, event_type="user.created", data={"id": "x", "name": "Zoë ✓", "n": 1.5}
    )
    stored = WebhookEvent.objects.get(pk=payload["id"]).body.encode()
    event_deliver(event_id=payload["id"])
    (request,) = receiver.wait_for(1)
    assert request.body == stored
    assert orjson.loads(request.body)["data"]["name"] == "Zoë ✓"


def test_an_event_is_attempted_at_most_once_even_if_delivered_twice(
    hooked_directory: Directory, receiver: Receiver
) -> None:
    payload = event_record(directory=hooked_directory, event_type="user.created", data={"id": "1"})
    assert event_deliver(event_id=payload["id"]) == EventState.DELIVERED
    assert event_deliver(event_id=payload["id"]) is None
    assert event_deliver(event_id=str(uuid.uuid4())) is None
    assert event_deliver(event_id="not-a-uuid") is None
    assert len(receiver.wait_for(2, timeout=0.3)) == 1


@pytest.mark.parametrize(
    ("path", "status", "error_class"), [("/fail", 500, "HTTPStatus"), ("/redirect", 302, "Redirect")]
)
def test_failed_answers_get_exactly_one_request_and_a_failed_log_entry(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    path: str,
    status: int,
    error_class: str,
) -> None:
    directory = make_hooked_directory(receiver, path=path)
    payload = event_record(directory=directory, event_type="user.created", data={"id": "1"})
    assert event_deliver(event_id=payload["id"]) == EventState.FAILED
    events_sweep(pending_age=timedelta(0))  # nothing pending: the sweep must not resend it
    assert len(receiver.wait_for(2, timeout=0.5)) == 1
    entry = WebhookDelivery.objects.get(directory=directory)
    assert (entry.delivered, entry.status_code, entry.error_class) == (False, status, error_class)


def test_timeout_gets_one_request_and_a_failed_log_entry(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    private_ok.WEBHOOK_TIMEOUT = 1
    receiver.slow_seconds = 5
    directory = make_hooked_directory(receiver, path="/slow")
    payload = event_record(directory=directory, event_type="user.created", data={"id": "1"})
    assert event_deliver(event_id=payload["id"]) == EventState.FAILED
    assert len(receiver.wait_for(2, timeout=0.3)) == 1
    entry = WebhookDelivery.objects.get(directory=directory)
    assert (entry.delivered, entry.status_code, entry.error_class) == (False, None, "Timeout")
    assert entry.latency_ms < 2500


def test_with_logging_off_no_delivery_record_outlives_the_attempt(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    directory = make_hooked_directory(receiver, path="/fail", log=False)
    payloads = events_record(directory=directory, events=[("user.created", {"id": "1"}), ("user.deleted", {"id": "1"})])
    for p in payloads:
        assert event_deliver(event_id=p["id"]) == EventState.FAILED
    assert len(receiver.wait_for(2)) == 2
    assert not WebhookDelivery.objects.exists()
    # The outcome stays on the event itself (the changes feed), not in a log.
    kept = WebhookEvent.objects.filter(directory_id=directory.id)
    assert {(e.state, e.attempts, e.status_code) for e in kept} == {(EventState.FAILED, 1, 500)}


def test_directory_without_webhook_records_its_events_for_the_feed_but_nothing_to_send(directory_a: Directory) -> None:
    payloads = events_record(directory=directory_a, events=[("user.created", {"id": "1"})])
    assert payloads[0]["event"] == "user.created"  # the payload is still returned to the caller
    assert payloads[0]["sequence"] == 1
    event = WebhookEvent.objects.get(directory_id=directory_a.id)
    assert (event.state, event.state_reason, event.sequence, event.attempts) == (
        EventState.DROPPED,
        "directory has no webhook endpoint",
        1,
        0,
    )
    assert orjson.loads(event.body) == payloads[0]  # kept whole: an application may only pull


def test_deactivated_directory_events_are_dropped_with_a_reason(
    hooked_directory: Directory, receiver: Receiver
) -> None:
    payload = event_record(directory=hooked_directory, event_type="user.created", data={"id": "1"})
    directory_update(actor=TEST_ACTOR, directory=hooked_directory, data={"deactivated": True})
    assert event_deliver(event_id=payload["id"]) == EventState.DROPPED
    assert receiver.wait_for(1, timeout=0.3) == []
    entry = WebhookDelivery.objects.get(directory=hooked_directory)
    assert (entry.delivered, entry.error_class) == (False, "Dropped")
    assert entry.error_message == "not sent: directory deactivated"
    event = WebhookEvent.objects.get(pk=payload["id"])  # stays, in the feed, with the reason
    assert (event.state, event.state_reason, event.attempts) == (EventState.DROPPED, "directory deactivated", 0)


def test_dropped_event_of_a_non_logging_directory_keeps_the_reason_and_its_payload_for_the_feed(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
) -> None:
    directory = make_hooked_directory(receiver, log=False)
    payload = event_record(directory=directory, event_type="user.created", data={"id": "1", "email": "a@b.c"})
    directory_update(actor=TEST_ACTOR, directory=directory, data={"deactivated": True})
    assert event_deliver(event_id=payload["id"]) == EventState.DROPPED
    event = WebhookEvent.objects.get(pk=payload["id"])
    assert (event.state, event.state_reason) == (EventState.DROPPED, "directory deactivated")
    assert orjson.loads(event.body)["data"] == {"id": "1", "email": "a@b.c"}
    assert not WebhookDelivery.objects.exists()
    assert receiver.wait_for(1, timeout=0.3) == []


def test_events_of_a_deleted_directory_are_dropped(hooked_directory: Directory, receiver: Receiver) -> None:
    payload = event_record(directory=hooked_directory, event_type="user.created", data={"id": "1"})
    # A row that survived its directory (e.g. recorded concurrently with the delete).
    WebhookEvent.objects.filter(pk=payload["id"]).update(directory_id=uuid.uuid4())
    assert event_deliver(event_id=payload["id"]) == EventState.DROPPED
    event = WebhookEvent.objects.get(pk=payload["id"])
    assert (event.state, event.state_reason) == (EventState.DROPPED, "directory deleted")
    assert receiver.wait_for(1, timeout=0.3) == []


def test_directory_delete_takes_its_pending_events_and_log_with_it(
    hooked_directory: Directory, receiver: Receiver
) -> None:
    delivered = event_record(directory=hooked_directory, event_type="user.created", data={"id": "1"})
    event_deliver(event_id=delivered["id"])
    event_record(directory=hooked_directory, event_type="user.updated", data={"id": "1"})
    directory_delete(actor=TEST_ACTOR, directory=hooked_directory)
    assert not WebhookDelivery.objects.exists()
    assert not WebhookEvent.objects.exists()


def test_events_of_directory_a_go_only_to_directory_a(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    a = make_hooked_directory(receiver, path="/ok?dir=a", tenant="acme")
    b = make_hooked_directory(receiver, path="/ok?dir=b", tenant="globex")
    pa = event_record(directory=a, event_type="user.created", data={"id": "a"})
    pb = event_record(directory=b, event_type="user.created", data={"id": "b"})
    event_deliver(event_id=pa["id"])
    event_deliver(event_id=pb["id"])
    got = {r.path: r for r in receiver.wait_for(2)}
    assert got["/ok?dir=a"].json["id"] == pa["id"] and got["/ok?dir=b"].json["id"] == pb["id"]
    receiver.assert_signed(got["/ok?dir=a"], "whsec-acme-0123456789abcdef")
    receiver.assert_signed(got["/ok?dir=b"], "whsec-globex-0123456789abcdef")
    assert WebhookDelivery.objects.filter(directory=a).count() == 1
    assert WebhookDelivery.objects.filter(directory=b).count() == 1


# --- directory-level events to the global receiver ---------------------------------------------------


@pytest.fixture
def global_receiver(receiver: Receiver, private_ok):  # noqa: ANN001, ANN201
    private_ok.WEBHOOK_URL = receiver.url("/global")
    private_ok.WEBHOOK_SECRET = "global-secret-0123456789"
    return receiver


# Deactivating and activating change the health state too (contract §4.1): each is announced right after.
DEACTIVATED_THEN_ACTIVATED = ["dsync.deactivated", "dsync.health_changed", "dsync.activated", "dsync.health_changed"]


def _deliver_pending() -> None:
    for event_id in WebhookEvent.objects.filter(state=EventState.PENDING).values_list("id", flat=True):
        event_deliver(event_id=event_id)


def test_dsync_events_go_to_the_global_webhook_signed_with_its_secret(global_receiver: Receiver) -> None:
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"})
    directory_update(actor=TEST_ACTOR, directory=directory, data={"deactivated": True})
    directory_update(actor=TEST_ACTOR, directory=directory, data={"deactivated": False})
    directory_id = str(directory.id)
    directory_delete(actor=TEST_ACTOR, directory=directory)
    _deliver_pending()

    got = global_receiver.wait_for(6)
    assert [r.json["event"] for r in got] == ["dsync.created", *DEACTIVATED_THEN_ACTIVATED, "dsync.deleted"]
    changes = [(r.json["data"]["previous_state"], r.json["data"]["health"]["state"]) for r in (got[2], got[4])]
    assert changes == [("never_connected", "deactivated"), ("deactivated", "never_connected")]
    for request in got:
        assert request.path == "/global"
        global_receiver.assert_signed(request, "global-secret-0123456789")
        body = request.json
        assert body["directory_id"] == directory_id
        assert body["data"]["id"] == directory_id
        assert "secret" not in body["data"]["scim"] and "secret" not in body["data"]["webhook"]
    assert got[1].json["data"]["deactivated"] is True
    # No directory log for operator events; the outbox row keeps the outcome until the purge.
    assert set(WebhookEvent.objects.values_list("state", flat=True)) == {EventState.DELIVERED}


def test_dsync_events_are_not_recorded_without_a_global_webhook(settings) -> None:  # noqa: ANN001
    settings.WEBHOOK_URL = None
    directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"})
    assert not WebhookEvent.objects.exists()


# --- sweep: never attempted, and worker lost -------------------------------------------------------


def test_sweep_enqueues_old_pending_events_once_each(hooked_directory: Directory, receiver: Receiver) -> None:
    payloads = events_record(directory=hooked_directory, events=[("user.created", {"id": str(i)}) for i in range(3)])
    fresh = events_sweep()  # default minimum age: the on-commit publish is still in flight
    assert fresh.enqueued == 0
    WebhookEvent.objects.update(created_at=F("created_at") - timedelta(minutes=1))
    # No broker in this test: a kick hands work to the in-process pool, which runs in another thread and
    # would not see this test's uncommitted rows; drain here instead and check the sweep's selection.
    from webhooks.services import draining

    kicked: list[tuple[uuid.UUID, str]] = []
    original = draining.kick_many
    draining.kick_many = lambda keys: kicked.extend(keys) or len(kicked)  # type: ignore[assignment]
    try:
        result = events_sweep()
    finally:
        draining.kick_many = original  # type: ignore[assignment]
    assert result.enqueued == 3  # the three events, through one drain of their directory
    assert kicked == [(hooked_directory.id, "directory")]
    for _ in range(2):  # drained twice: still one attempt each
        events_batch_deliver(directory_id=hooked_directory.id, target="directory")
    for payload in payloads:  # and asked for by id afterwards: nothing left to claim
        assert event_deliver(event_id=payload["id"]) is None
    got = receiver.wait_for(6, timeout=0.5)
    assert [r.json["id"] for r in got] == [p["id"] for p in payloads]  # once each, in recorded order


def test_sweep_marks_a_stale_sending_event_as_worker_lost_and_never_resends(
    hooked_directory: Directory, receiver: Receiver
) -> None:
    payload = event_record(directory=hooked_directory, event_type="user.created", data={"id": "1"})
    claimed = timezone.now() - sending_stale_after() - timedelta(seconds=1)
    WebhookEvent.objects.filter(pk=payload["id"]).update(state=EventState.SENDING, claimed_at=claimed)
    recent = event_record(directory=hooked_directory, event_type="user.updated", data={"id": "1"})
    WebhookEvent.objects.filter(pk=recent["id"]).update(state=EventState.SENDING, claimed_at=timezone.now())

    result = events_sweep(pending_age=timedelta(0))
    assert result.worker_lost == 1
    entry = WebhookDelivery.objects.get(event_id=payload["id"])
    assert (entry.delivered, entry.error_class) == (False, "WorkerLost")
    assert "worker lost" in entry.error_message
    # The still-running attempt is left alone, and nothing is sent by the sweep.
    assert WebhookEvent.objects.get(pk=recent["id"]).state == EventState.SENDING
    assert event_deliver(event_id=payload["id"]) is None
    assert receiver.wait_for(1, timeout=0.3) == []


def test_worker_lost_global_event_stays_visible_as_failed(global_receiver: Receiver) -> None:
    directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"})
    event = WebhookEvent.objects.get()
    WebhookEvent.objects.filter(pk=event.pk).update(
        state=EventState.SENDING, claimed_at=timezone.now() - sending_stale_after() - timedelta(seconds=5)
    )
    events_sweep()
    event.refresh_from_db()
    assert event.state == EventState.FAILED
    assert event.state_reason.startswith("worker lost")


# --- purge ---------------------------------------------------------------------------------------


def test_purge_deletes_log_entries_past_retention_and_keeps_recent_ones(
    hooked_directory: Directory,
    receiver: Receiver,
    settings,  # noqa: ANN001
) -> None:
    settings.WEBHOOK_LOG_RETENTION_DAYS = 7
    old, new = (
        event_record(directory=hooked_directory, event_type="user.created", data={"id": str(i)}) for i in range(2)
    )
    event_deliver(event_id=old["id"])
    event_deliver(event_id=new["id"])
    WebhookDelivery.objects.filter(event_id=old["id"]).update(created_at=timezone.now() - timedelta(days=8))
    result = deliveries_purge()
    assert result.deliveries == 1
    assert list(WebhookDelivery.objects.values_list("event_id", flat=True)) == [uuid.UUID(new["id"])]


def test_purge_deletes_finished_outbox_rows_but_never_pending_ones(global_receiver: Receiver) -> None:
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"})
    _deliver_pending()
    directory_update(actor=TEST_ACTOR, directory=directory, data={"deactivated": True})  # a second event, left pending
    WebhookEvent.objects.update(created_at=timezone.now() - timedelta(days=30))
    WebhookEvent.objects.filter(state=EventState.DELIVERED).update(finished_at=timezone.now() - timedelta(days=30))
    result = deliveries_purge()
    assert result.events == 1
    left = WebhookEvent.objects.order_by("created_at").values_list("event_type", "state")
    assert list(left) == [("dsync.deactivated", EventState.PENDING), ("dsync.health_changed", EventState.PENDING)]


def test_purge_removes_the_log_of_a_directory_that_switched_logging_off(
    hooked_directory: Directory, receiver: Receiver
) -> None:
    payload = event_record(directory=hooked_directory, event_type="user.created", data={"id": "1"})
    event_deliver(event_id=payload["id"])
    directory_update(actor=TEST_ACTOR, directory=hooked_directory, data={"log_webhook_events": False})
    assert deliveries_purge().deliveries == 1
    assert not WebhookDelivery.objects.exists()


def test_purge_and_sweep_commands_run(hooked_directory: Directory, receiver: Receiver) -> None:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("webhooks_purge", stdout=out)
    assert "deleted 0 delivery log entries" in out.getvalue()
    out = StringIO()
    call_command("webhooks_sweep", "--min-age", "3600", stdout=out)
    assert "enqueued 0 pending event(s)" in out.getvalue()


# --- batches: one directory's events, claimed together, sent in order --------------------------------


def _statements(captured: CaptureQueriesContext) -> list[str]:
    """The SQL a batch ran, without transaction control: BEGIN/COMMIT in autocommit (production, and
    PostgreSQL here), SAVEPOINT/RELEASE inside a test's own transaction (SQLite here)."""
    control = ("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT")
    return [q["sql"] for q in captured.captured_queries if not q["sql"].upper().startswith(control)]


@pytest.mark.parametrize(("log", "statements"), [(False, 3), (True, 5)])
def test_a_batch_sends_one_directorys_events_in_recorded_order_with_a_fixed_number_of_statements(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    log: bool,
    statements: int,
) -> None:
    directory = make_hooked_directory(receiver, log=log)
    other = make_hooked_directory(receiver, tenant="globex")
    events = [("user.created", {"id": str(i)}) for i in range(5)]
    payloads = events_record(directory=directory, events=events)
    events_record(directory=other, events=[("user.created", {"id": "other"})])

    with CaptureQueriesContext(connection) as captured:
        result = events_batch_deliver(directory_id=directory.id, target="directory")
    # Claim, the directory, the closing UPDATE; with logging on also the re-read of the flag and one INSERT.
    assert len(_statements(captured)) == statements
    assert (result.claimed, result.delivered, result.failed, result.released) == (5, 5, 0, 0)
    got = receiver.wait_for(6, timeout=0.5)
    assert [r.json["id"] for r in got] == [p["id"] for p in payloads]
    assert [r.json["sequence"] for r in got[:5]] == [1, 2, 3, 4, 5]
    kept = WebhookEvent.objects.filter(directory_id=directory.id)
    assert sorted(kept.values_list("state", "attempts")) == [(EventState.DELIVERED, 1)] * 5
    assert WebhookDelivery.objects.filter(directory=directory, delivered=True).count() == (5 if log else 0)
    # The other directory's event is not this drain's business.
    assert WebhookEvent.objects.get(directory_id=other.id).state == EventState.PENDING
    assert events_batch_deliver(directory_id=directory.id, target="directory").claimed == 0


def test_events_recorded_in_one_transaction_keep_their_order_even_within_one_microsecond(
    hooked_directory: Directory, receiver: Receiver
) -> None:
    payloads = events_record(
        directory=hooked_directory,
        events=[("group.created", {"id": "g"})] + [("group.user_added", {"id": str(i)}) for i in range(30)],
    )
    rows = list(WebhookEvent.objects.filter(directory_id=hooked_directory.id).values_list("id", "created_at"))
    assert len({created for _id, created in rows}) == 31  # distinct, so the claim's order is the recorded one
    batches = []
    while claimed := events_batch_deliver(directory_id=hooked_directory.id, target="directory", limit=7).claimed:
        batches.append(claimed)
    assert batches == [7, 7, 7, 7, 3]  # a claim never takes more than its limit
    got = receiver.wait_for(32, timeout=0.5)
    assert [r.json["id"] for r in got] == [p["id"] for p in payloads]


def test_an_exception_mid_batch_puts_the_unattempted_events_back_and_leaves_the_one_in_flight_sending(
    hooked_directory: Directory,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from webhooks import transport

    payloads = events_record(directory=hooked_directory, events=[("user.created", {"id": str(i)}) for i in range(5)])
    real_post = transport.post
    calls: list[str] = []

    def post_then_crash(url: str, body: bytes, headers: dict[str, str], timeout: float) -> transport.AttemptResult:
        calls.append(headers["Roster-Event-Id"])
        if len(calls) == 2:
            real_post(url, body, headers, timeout)  # sent, and then the worker is interrupted
            raise RuntimeError("interrupted")
        return real_post(url, body, headers, timeout)

    monkeypatch.setattr(transport, "post", post_then_crash)
    with pytest.raises(RuntimeError):
        events_batch_deliver(directory_id=hooked_directory.id, target="directory")
    states = dict(WebhookEvent.objects.values_list("id", "state"))
    ids = [uuid.UUID(p["id"]) for p in payloads]
    assert states[ids[0]] == EventState.DELIVERED  # attempted and recorded before the crash
    assert WebhookDelivery.objects.get(event_id=ids[0]).delivered is True
    assert states[ids[1]] == EventState.SENDING  # its outcome is unknown: the sweep reports it, never resends it
    assert [states[i] for i in ids[2:]] == [EventState.PENDING] * 3  # never attempted: back in the queue
    assert not WebhookEvent.objects.filter(pk__in=ids[2:], claimed_at__isnull=False).exists()

    monkeypatch.setattr(transport, "post", real_post)
    result = events_batch_deliver(directory_id=hooked_directory.id, target="directory")
    assert (result.claimed, result.delivered) == (3, 3)
    got = receiver.wait_for(6, timeout=0.5)
    assert [r.json["id"] for r in got] == [p["id"] for p in payloads]  # each sent once, in order
    WebhookEvent.objects.filter(pk=ids[1]).update(
        claimed_at=timezone.now() - sending_stale_after() - timedelta(seconds=1)
    )
    assert events_sweep(pending_age=timedelta(0)).worker_lost == 1
    assert WebhookDelivery.objects.get(event_id=ids[1]).error_class == "WorkerLost"
    assert len(receiver.wait_for(6, timeout=0.3)) == 5


def test_a_soft_time_limit_during_an_attempt_stops_the_batch_and_puts_the_rest_back(
    hooked_directory: Directory,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from celery.exceptions import SoftTimeLimitExceeded

    from webhooks import transport

    payloads = events_record(directory=hooked_directory, events=[("user.created", {"id": str(i)}) for i in range(4)])
    real_head = transport._Attempt.head
    answers: list[int] = []

    def head_until_the_limit(self: Any, status: int) -> Any:
        answers.append(1)
        if len(answers) == 2:
            # What Celery's signal handler raises in the task's thread, here as the second answer's
            # status and headers arrive.
            raise SoftTimeLimitExceeded()
        return real_head(self, status)

    monkeypatch.setattr(transport._Attempt, "head", head_until_the_limit)
    with pytest.raises(SoftTimeLimitExceeded):
        events_batch_deliver(directory_id=hooked_directory.id, target="directory")
    ids = [uuid.UUID(p["id"]) for p in payloads]
    states = dict(WebhookEvent.objects.values_list("id", "state"))
    assert states[ids[0]] == EventState.DELIVERED
    assert states[ids[1]] == EventState.SENDING  # the request had been written: outcome unknown
    assert [states[i] for i in ids[2:]] == [EventState.PENDING, EventState.PENDING]


def test_a_batch_held_past_its_claim_hold_puts_the_rest_back_for_the_next_claim(
    hooked_directory: Directory,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from webhooks.services import delivery

    monkeypatch.setattr(delivery, "CLAIM_HOLD", 0.0)
    payloads = events_record(directory=hooked_directory, events=[("user.created", {"id": str(i)}) for i in range(3)])
    results = []
    while (result := events_batch_deliver(directory_id=hooked_directory.id, target="directory")).claimed:
        results.append((result.claimed, result.delivered, result.released))
    # Each batch makes one attempt (the first always goes), then gives the rest back, unsent.
    assert results == [(3, 1, 2), (2, 1, 1), (1, 1, 0)]
    got = receiver.wait_for(4, timeout=0.5)
    assert [r.json["id"] for r in got] == [p["id"] for p in payloads]


@pytest.mark.django_db(transaction=True)
def test_concurrent_drains_of_one_directory_claim_each_event_exactly_once(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four drains of the same directory at once (what a sweep racing a kick, or RabbitMQ, produces):
    every event is claimed by exactly one of them. On PostgreSQL the batch claim's FOR UPDATE SKIP
    LOCKED is what is tested; on SQLite the re-check of `state` under the write lock."""
    import threading

    from django.db import connections

    from webhooks.services import draining

    monkeypatch.setattr(draining, "kick", lambda *args: None)  # only the four drains below
    directory = make_hooked_directory(receiver, log=False)
    payloads = events_record(directory=directory, events=[("user.created", {"id": str(i)}) for i in range(60)])
    barrier = threading.Barrier(4)
    claimed: list[int] = []
    errors: list[BaseException] = []

    def drain() -> None:
        try:
            barrier.wait()
            while result := events_batch_deliver(directory_id=directory.id, target="directory", limit=5):
                if not result.claimed:
                    break
                claimed.append(result.claimed)
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=drain) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sum(claimed) == 60
    got = receiver.wait_for(61, timeout=0.5)
    assert sorted(r.json["id"] for r in got) == sorted(p["id"] for p in payloads)  # each once, none twice
    rows = WebhookEvent.objects.filter(directory_id=directory.id)
    assert sorted(rows.values_list("state", "attempts")) == [(EventState.DELIVERED, 1)] * 60


# --- one kick per transaction and directory ----------------------------------------------------------
# The kicks are counted where they happen (draining.kick), after the commit: on SQLite the test's own
# transaction never commits, so the capture (outside the transaction under test) runs the callbacks.


@pytest.fixture
def kicks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[uuid.UUID, str]]:
    from webhooks.services import draining

    kicked: list[tuple[uuid.UUID, str]] = []
    monkeypatch.setattr(draining, "kick", lambda directory_id, target: kicked.append((directory_id, target)))
    return kicked


def test_a_transaction_recording_events_twice_kicks_each_directory_once(
    hooked_directory: Directory,
    global_receiver: Receiver,
    kicks: list[tuple[uuid.UUID, str]],
    django_capture_on_commit_callbacks,  # noqa: ANN001
) -> None:
    from django.db import transaction

    from webhooks.services import directory_event_record

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        events_record(directory=hooked_directory, events=[("user.created", {"id": "1"})])
        events_record(directory=hooked_directory, events=[("group.created", {"id": "g"}), ("group.user_added", {})])
        directory_event_record(directory=hooked_directory, event_type="dsync.activated", data={})
        assert kicks == []  # nothing before the commit
    assert kicks == [(hooked_directory.id, "directory"), (hooked_directory.id, "global")]
    assert WebhookEvent.objects.filter(directory_id=hooked_directory.id).count() == 4


def test_a_kick_rolled_back_with_its_savepoint_is_registered_again_by_the_next_record(
    hooked_directory: Directory,
    kicks: list[tuple[uuid.UUID, str]],
    django_capture_on_commit_callbacks,  # noqa: ANN001
) -> None:
    from django.db import transaction

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        with pytest.raises(RuntimeError), transaction.atomic():
            events_record(directory=hooked_directory, events=[("user.created", {"id": "gone"})])
            raise RuntimeError("rolled back")
        kept = events_record(directory=hooked_directory, events=[("user.created", {"id": "kept"})])
    assert kicks == [(hooked_directory.id, "directory")]
    assert list(WebhookEvent.objects.values_list("id", flat=True)) == [uuid.UUID(kept[0]["id"])]


def test_an_event_recorded_in_a_savepoint_relies_on_the_kick_of_the_enclosing_transaction(
    hooked_directory: Directory,
    kicks: list[tuple[uuid.UUID, str]],
    django_capture_on_commit_callbacks,  # noqa: ANN001
) -> None:
    from django.db import transaction

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        events_record(directory=hooked_directory, events=[("user.created", {"id": "1"})])
        with pytest.raises(RuntimeError), transaction.atomic():
            events_record(directory=hooked_directory, events=[("user.updated", {"id": "1"})])
            raise RuntimeError("rolled back")
        with transaction.atomic():
            events_record(directory=hooked_directory, events=[("user.deleted", {"id": "1"})])
    assert kicks == [(hooked_directory.id, "directory")]  # survived both savepoints
    assert WebhookEvent.objects.count() == 2


def test_a_savepoint_rolled_back_alone_kicks_nothing_and_the_enclosing_records_still_kick(
    hooked_directory: Directory,
    global_receiver: Receiver,
    kicks: list[tuple[uuid.UUID, str]],
    django_capture_on_commit_callbacks,  # noqa: ANN001
) -> None:
    """The only event of the key lived in a rolled-back savepoint: no kick for it, even though the
    transaction commits (with an event of another key, whose kick still happens)."""
    from django.db import transaction

    from webhooks.services import directory_event_record

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        with pytest.raises(RuntimeError), transaction.atomic():
            events_record(directory=hooked_directory, events=[("user.created", {"id": "gone"})])
            raise RuntimeError("rolled back")
        directory_event_record(directory=hooked_directory, event_type="dsync.activated", data={})
    assert kicks == [(hooked_directory.id, "global")]
    assert list(WebhookEvent.objects.values_list("target", flat=True)) == ["global"]


def test_a_rolled_back_transaction_kicks_nothing_and_the_next_one_kicks_once(
    hooked_directory: Directory,
    kicks: list[tuple[uuid.UUID, str]],
    django_capture_on_commit_callbacks,  # noqa: ANN001
) -> None:
    from django.db import transaction

    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            events_record(directory=hooked_directory, events=[("user.created", {"id": "1"})])
            events_record(directory=hooked_directory, events=[("user.updated", {"id": "1"})])
            raise RuntimeError("rolled back")
    assert kicks == []
    assert not WebhookEvent.objects.exists()
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        events_record(directory=hooked_directory, events=[("user.created", {"id": "2"})])
        events_record(directory=hooked_directory, events=[("user.updated", {"id": "2"})])
    assert kicks == [(hooked_directory.id, "directory")]
    assert WebhookEvent.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_each_record_kicks_at_once(
    hooked_directory: Directory, kicks: list[tuple[uuid.UUID, str]]
) -> None:
    """In autocommit every record is its own transaction, committed by the time it returns."""
    events_record(directory=hooked_directory, events=[("user.created", {"id": "1"})])
    assert kicks == [(hooked_directory.id, "directory")]
    events_record(directory=hooked_directory, events=[("user.updated", {"id": "1"})])
    assert kicks == [(hooked_directory.id, "directory")] * 2


# --- batches of global events and of dropped ones ------------------------------------------------------


def test_global_events_drained_as_a_batch_keep_their_rows_with_the_outcome(global_receiver: Receiver) -> None:
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"})
    directory_update(actor=TEST_ACTOR, directory=directory, data={"deactivated": True})
    directory_update(actor=TEST_ACTOR, directory=directory, data={"deactivated": False})
    result = events_batch_deliver(directory_id=directory.id, target="global")
    assert (result.claimed, result.delivered) == (5, 5)
    got = global_receiver.wait_for(6, timeout=0.5)
    assert [r.json["event"] for r in got] == ["dsync.created", *DEACTIVATED_THEN_ACTIVATED]
    rows = WebhookEvent.objects.filter(directory_id=directory.id)
    assert {(e.state, e.finished_at is not None) for e in rows} == {(EventState.DELIVERED, True)}


@pytest.mark.parametrize("log", [True, False])
def test_a_batch_of_a_deactivated_directory_is_dropped_in_one_go(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    log: bool,
) -> None:
    directory = make_hooked_directory(receiver, log=log)
    events_record(directory=directory, events=[("user.created", {"id": str(i)}) for i in range(3)])
    directory_update(actor=TEST_ACTOR, directory=directory, data={"deactivated": True})
    result = events_batch_deliver(directory_id=directory.id, target="directory")
    assert (result.claimed, result.dropped, result.delivered) == (3, 3, 0)
    assert receiver.wait_for(1, timeout=0.3) == []
    if log:
        entries = WebhookDelivery.objects.filter(directory=directory)
        assert [e.error_message for e in entries] == ["not sent: directory deactivated"] * 3
    else:
        assert not WebhookDelivery.objects.exists()
    # Either way the events stay in the feed, dropped with the reason, their payloads whole.
    rows = WebhookEvent.objects.filter(directory_id=directory.id)
    assert {(e.state, e.state_reason, e.attempts) for e in rows} == {(EventState.DROPPED, "directory deactivated", 0)}
    assert all(orjson.loads(e.body)["event"] == "user.created" for e in rows)
