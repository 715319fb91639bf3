"""Every recorded outcome is true: a lost database connection around the attempts does not turn a
delivered event into "worker lost", and a killed drain leaves at most about a second's worth of events
claimed.

Transaction mode on both databases (real commits): the drain rides out a lost connection only outside a
caller's transaction, which is how it runs in production. On PostgreSQL the drain's connection is
really terminated (pg_terminate_backend) while the receiver answers; on SQLite, which has no server to
lose, the failing statement is simulated by raising the OperationalError Django would raise.
"""

from __future__ import annotations

import logging
import math
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import OperationalError, connection
from django.utils import timezone

from directories.models import Directory
from tests.actors import TEST_ACTOR
from tests.webhooks.conftest import Received, Receiver, make_hooked_directory
from webhooks import transport
from webhooks.models import EventState, WebhookDelivery, WebhookEvent
from webhooks.services import (
    CLAIM_HOLD,
    RECORD_RETRY,
    BatchResult,
    delivery,
    drain_task,
    draining,
    drains,
    event_deliver,
    events_batch_deliver,
    events_record,
    events_sweep,
    outbox,
    reconnect,
    sending_stale_after,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _no_drain_on_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests below run the drain themselves, in this thread: no after-commit kick to another one."""
    monkeypatch.setattr(draining, "kick", lambda directory_id, target: None)


@pytest.fixture(autouse=True)
def _short_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same tries, with pauses of a few milliseconds (the schedule's length is not under test)."""
    monkeypatch.setattr(reconnect, "BACKOFF", (0.001, 0.005, 0.01))


def _record(directory: Directory, n: int) -> list[uuid.UUID]:
    payloads = events_record(directory=directory, events=[("user.created", {"id": str(i)}) for i in range(n)])
    return [uuid.UUID(p["id"]) for p in payloads]


def _batch(directory: Directory) -> BatchResult:
    return events_batch_deliver(directory_id=directory.id, target="directory")


def _states(ids: list[uuid.UUID]) -> list[str | None]:
    states = dict(WebhookEvent.objects.filter(pk__in=ids).values_list("id", "state"))
    return [states.get(i) for i in ids]


class Flaky:
    """Wraps a function so that its first `failures` calls raise the OperationalError a lost connection
    raises; `before=True` runs the real call first (it committed, its answer was lost)."""

    def __init__(self, real: Any, failures: int, *, before: bool = False) -> None:
        self.real, self.failures, self.before, self.calls = real, failures, before, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls <= self.failures:
            if self.before:
                self.real(*args, **kwargs)
            raise OperationalError("server closed the connection unexpectedly")
        return self.real(*args, **kwargs)


def _lose(monkeypatch: pytest.MonkeyPatch, name: str, failures: int, *, before: bool = False) -> Flaky:
    """Make `delivery.<name>` fail its first `failures` calls as on a lost connection."""
    flaky = Flaky(getattr(delivery, name), failures, before=before)
    monkeypatch.setattr(delivery, name, flaky)
    return flaky


# --- the outcome of an attempt is written even when its connection died -----------------------------


@pytest.mark.postgres
@pytest.mark.parametrize("log", [True, False])
def test_a_connection_terminated_while_the_receiver_answers_200_still_records_delivered(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
    log: bool,
) -> None:
    """The backend is terminated while the receiver answers 200 (the attempts that follow need no
    database), and the server then refuses the next two connections, as a restarting one does."""
    if connection.vendor != "postgresql":
        pytest.skip("terminating the drain's own backend needs PostgreSQL (CI runs it)")
    import psycopg

    directory = make_hooked_directory(receiver, log=log)
    ids = _record(directory, 3)
    connection.ensure_connection()
    drain_pid = connection.connection.info.backend_pid
    terminated: list[bool] = []

    def terminate_the_drains_connection(_request: Received) -> None:
        if terminated:
            return
        from django.db import connection as own  # this server thread's own connection

        try:
            with own.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(%s)", [drain_pid])
                terminated.append(cursor.fetchone()[0])
        finally:
            own.close()

    real_connect = connection.get_new_connection
    refused: list[int] = []

    def connect_unless_restarting(params: dict[str, Any]) -> Any:
        if terminated and len(refused) < 2:
            refused.append(1)
            raise psycopg.OperationalError("connection refused: the database system is starting up")
        return real_connect(params)

    monkeypatch.setattr(connection, "get_new_connection", connect_unless_restarting)
    receiver.on_request = terminate_the_drains_connection
    result = _batch(directory)
    assert terminated == [True] and len(refused) == 2
    assert (result.claimed, result.delivered, result.failed, result.released) == (3, 3, 0, 0)
    assert connection.connection.info.backend_pid != drain_pid  # recorded on a new connection
    assert _states(ids) == [EventState.DELIVERED] * 3  # closed: not `sending`, so never "worker lost"
    entries = WebhookDelivery.objects.filter(directory=directory)
    assert sorted((e.event_id, e.delivered, e.status_code) for e in entries) == (
        sorted((i, True, 200) for i in ids) if log else []
    )
    assert len(receiver.wait_for(4, timeout=0.3)) == 3


@pytest.mark.parametrize("log", [True, False])
def test_a_lost_connection_at_the_first_outcome_writes_is_ridden_out_and_the_event_ends_delivered(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
    log: bool,
) -> None:
    directory = make_hooked_directory(receiver, log=log)
    ids = _record(directory, 2)
    flaky = _lose(monkeypatch, "close_sending", 3)  # an outage spanning three tries
    result = _batch(directory)
    assert flaky.calls == 4
    assert (result.delivered, result.failed) == (2, 0)
    assert _states(ids) == [EventState.DELIVERED, EventState.DELIVERED]
    assert [e.delivered for e in WebhookDelivery.objects.filter(directory=directory)] == ([True, True] if log else [])
    assert events_sweep(pending_age=timedelta(0)).worker_lost == 0


def test_a_global_events_outcome_survives_a_lost_connection(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from directories.services import directory_create

    private_ok.WEBHOOK_URL = receiver.url("/global")
    private_ok.WEBHOOK_SECRET = "global-secret-0123456789"
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"})  # its dsync.created
    # The first write of the outcome commits, and then its answer is lost: the second finds nothing
    # `sending` left to change, and changes nothing.
    flaky = _lose(monkeypatch, "_finish", 1, before=True)
    result = events_batch_deliver(directory_id=directory.id, target="global")
    assert (result.delivered, flaky.calls) == (1, 2)
    assert list(WebhookEvent.objects.values_list("state", flat=True)) == [EventState.DELIVERED]
    assert len(receiver.wait_for(2, timeout=0.3)) == 1


def test_an_outcome_that_cannot_be_written_is_logged_per_event_and_never_becomes_lost_while_retried(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(delivery, "RECORD_RETRY", 0.3)
    directory = make_hooked_directory(receiver)
    ids = _record(directory, 2)
    oldest_while_retried = timezone.now() - timedelta(
        seconds=CLAIM_HOLD + float(django_settings.WEBHOOK_TIMEOUT) + delivery.RECORD_RETRY
    )
    swept: list[int] = []

    def down(_ids: list[uuid.UUID]) -> list[uuid.UUID]:
        # Meanwhile, the sweep runs on a connection that works, against rows as old as a batch's can be
        # while its outcome is still being retried: it must not report them lost.
        WebhookEvent.objects.filter(pk__in=ids).update(claimed_at=oldest_while_retried)
        swept.append(events_sweep(pending_age=timedelta(0)).worker_lost)
        raise OperationalError("could not connect to server")

    monkeypatch.setattr(delivery, "close_sending", down)
    with caplog.at_level(logging.WARNING, logger="roster.webhooks"), pytest.raises(OperationalError):
        _batch(directory)
    assert len(swept) >= 2 and set(swept) == {0}
    assert _states(ids) == [EventState.SENDING, EventState.SENDING]  # the row is left as it was
    assert not WebhookDelivery.objects.exists()
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(lines) == 2
    for event_id, line in zip(ids, lines, strict=True):
        assert line.startswith(f"webhook event {event_id} (user.created) delivered (200)")
    assert len(receiver.wait_for(3, timeout=0.3)) == 2  # sent once each, and never again


def test_the_sweep_waits_longer_than_an_outcome_can_be_retried() -> None:
    longest = CLAIM_HOLD + float(django_settings.WEBHOOK_TIMEOUT) + RECORD_RETRY
    assert sending_stale_after().total_seconds() >= longest + 20
    from webhooks import tasks

    assert tasks.DRAIN_SOFT_TIME_LIMIT > drains.DRAIN_BUDGET + longest
    assert drains.key_ttl() > longest


def test_unattempted_events_are_put_back_through_a_lost_connection(
    hooked_directory: Directory,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids = _record(hooked_directory, 3)
    monkeypatch.setattr(delivery, "CLAIM_HOLD", 0.0)  # one attempt per batch; the rest go back
    flaky = _lose(monkeypatch, "release", 2)
    result = _batch(hooked_directory)
    assert (result.delivered, result.released, flaky.calls) == (1, 2, 3)
    assert _states(ids) == [EventState.DELIVERED, EventState.PENDING, EventState.PENDING]


def test_a_claim_whose_answer_was_lost_is_undone_and_claimed_again(
    hooked_directory: Directory,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids = _record(hooked_directory, 3)
    flaky = _lose(monkeypatch, "claim_batch", 1, before=True)  # committed, then the connection died
    result = _batch(hooked_directory)
    assert (flaky.calls, result.claimed, result.delivered) == (2, 3, 3)
    got = receiver.wait_for(4, timeout=0.3)
    assert [uuid.UUID(r.json["id"]) for r in got] == ids  # each once, in order


def test_a_claim_that_cannot_reach_the_database_leaves_every_event_pending(
    hooked_directory: Directory,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids = _record(hooked_directory, 2)
    flaky = _lose(monkeypatch, "claim_batch", 1000, before=True)
    monkeypatch.setattr(delivery, "RECORD_RETRY", 0.05)
    with pytest.raises(OperationalError):
        _batch(hooked_directory)
    assert flaky.calls >= 2
    assert _states(ids) == [EventState.PENDING, EventState.PENDING]
    assert not WebhookEvent.objects.filter(claimed_at__isnull=False).exists()
    assert receiver.wait_for(1, timeout=0.2) == []


def test_event_deliver_undoes_a_lost_claim_and_delivers_once(
    hooked_directory: Directory,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (event_id,) = _record(hooked_directory, 1)
    flaky = _lose(monkeypatch, "claim_one", 1, before=True)
    assert event_deliver(event_id=event_id) == EventState.DELIVERED
    assert flaky.calls == 2
    assert len(receiver.wait_for(2, timeout=0.3)) == 1


@pytest.mark.parametrize("failures", [2, 1000])
def test_a_target_read_on_a_lost_connection_is_retried_or_puts_the_batch_back(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
    failures: int,
) -> None:
    directory = make_hooked_directory(receiver)
    ids = _record(directory, 2)
    _lose(monkeypatch, "webhook_target_get", failures)
    monkeypatch.setattr(delivery, "RECORD_RETRY", 0.05)
    if failures == 2:
        assert _batch(directory).delivered == 2
        assert _states(ids) == [EventState.DELIVERED, EventState.DELIVERED]
        return
    with pytest.raises(OperationalError):
        _batch(directory)
    assert _states(ids) == [EventState.PENDING, EventState.PENDING]  # nothing sent, nothing lost
    assert receiver.wait_for(1, timeout=0.2) == []


def test_dropped_events_whose_drop_cannot_be_recorded_go_back_to_pending(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from directories.services import directory_update

    directory = make_hooked_directory(receiver, log=False)
    ids = _record(directory, 2)
    directory_update(actor=TEST_ACTOR, directory=directory, data={"deactivated": True})
    _lose(monkeypatch, "_record_drops", 1000)
    monkeypatch.setattr(delivery, "RECORD_RETRY", 0.05)
    with pytest.raises(OperationalError):
        _batch(directory)
    assert _states(ids) == [EventState.PENDING, EventState.PENDING]


# --- a drain claims one event until it knows the receiver's latency ---------------------------------


def _claims(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(limit, events claimed) of every claim the drain makes."""
    seen: list[tuple[int, int]] = []
    real = outbox.claim_batch

    def counted(directory_id: uuid.UUID, target: str, limit: int, claimed_at: Any = None) -> Any:
        events = real(directory_id, target, limit, claimed_at)
        seen.append((limit, len(events)))
        return events

    monkeypatch.setattr(delivery, "claim_batch", counted)
    return seen


def test_a_drain_to_a_fast_receiver_claims_one_then_full_batches(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A generous window, so that even a loaded test machine answers fast enough for full batches.
    monkeypatch.setattr(drains, "BATCH_WINDOW", 5.0)
    claims = _claims(monkeypatch)
    directory = make_hooked_directory(receiver, log=False)
    ids = _record(directory, 60)
    assert drain_task.drain_run(str(directory.id), "directory")["delivered"] == 60
    assert claims == [(1, 1), (25, 25), (25, 25), (25, 9)]
    assert [uuid.UUID(r.json["id"]) for r in receiver.wait_for(61, timeout=0.3)] == ids


def test_a_drain_to_a_slow_receiver_claims_one_then_batches_sized_to_its_latency(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a worker SIGKILLed at any moment would leave `sending` (never finished, never put back) is
    what is claimed while an attempt is under way: counted at every attempt, it stays within
    max(1, ceil(BATCH_WINDOW / latency)), and is exactly one at the first."""
    receiver.slow_seconds = 0.2
    monkeypatch.setattr(drains, "BATCH_WINDOW", 0.5)
    bound = max(1, math.ceil(0.5 / receiver.slow_seconds))
    claims = _claims(monkeypatch)
    directory = make_hooked_directory(receiver, path="/slow", log=False)
    ids = _record(directory, 8)
    sending_at_each_attempt: list[int] = []
    real_post = transport.post

    def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> transport.AttemptResult:
        sending_at_each_attempt.append(WebhookEvent.objects.filter(state=EventState.SENDING).count())
        return real_post(url, body, headers, timeout)

    monkeypatch.setattr(transport, "post", post)
    assert drain_task.drain_run(str(directory.id), "directory")["delivered"] == 8
    assert claims[0] == (1, 1)
    limits = [limit for limit, _n in claims[1:]]
    assert all(1 <= limit <= bound for limit in limits), claims
    assert sum(n for _limit, n in claims) == 8
    assert len(sending_at_each_attempt) == 8
    assert sending_at_each_attempt[0] == 1
    assert max(sending_at_each_attempt) <= bound, sending_at_each_attempt
    assert [uuid.UUID(r.json["id"]) for r in receiver.wait_for(9, timeout=0.3)] == ids
