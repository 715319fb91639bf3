"""changes_resend (contract §5.1): what it accepts, what it refuses with nothing queued, and what it
queues: finished events back to pending, marked as a resend, with one drain asked for after commit."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from core.errors import Conflict, NotFound, ValidationFailed
from core.text import INT_MAX
from directories.models import Directory
from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.webhooks.feedrows import feed_events
from webhooks.models import EventState, WebhookEvent
from webhooks.selectors import outbox_backlog
from webhooks.services import RESEND_MAX, changes_resend, changes_resend_input, draining, resend_range_end

pytestmark = pytest.mark.django_db(transaction=True)

F = EventState.FAILED


@pytest.fixture
def kicks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The drains asked for, recorded instead of run: these tests look at the queueing only."""
    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(draining, "kick", lambda directory_id, target: calls.append((str(directory_id), target)))
    return calls


def _hooked(tenant: str = "acme", **data: Any) -> Directory:
    return directory_create(
        actor=TEST_ACTOR, data={"tenant": tenant, "product": "crm", "webhook_url": "http://127.0.0.1:9/hook", **data}
    )


@pytest.fixture
def hooked(private_ok) -> Directory:  # noqa: ANN001
    return _hooked()


def _states(directory: Directory) -> dict[int, tuple[str, bool]]:
    return {
        e.sequence: (e.state, e.resend)
        for e in WebhookEvent.objects.filter(directory_id=directory.id, target="directory").order_by("sequence")
    }


def _resend(directory: Directory, **asked: Any) -> int:
    return changes_resend(directory=directory, actor=TEST_ACTOR, **asked)


OTHER = str(uuid.uuid4())
REFUSED = [
    ("neither", {}),
    ("both", {"first": 1, "last": 2, "event_ids": [OTHER]}),
    ("from without to", {"first": 1}),
    ("to without from", {"last": 2}),
    ("from a bool", {"first": True, "last": 2}),
    ("from a float", {"first": 1.0, "last": 2}),
    ("from a string", {"first": "1", "last": 2}),
    ("from zero", {"first": 0, "last": 2}),
    ("from negative", {"first": -1, "last": 2}),
    ("to past 64 bits", {"first": 1, "last": INT_MAX + 1}),
    ("from after to", {"first": 3, "last": 2}),
    ("over 1000 events", {"first": 1, "last": RESEND_MAX + 1}),
    ("ids empty", {"event_ids": []}),
    ("ids not a list", {"event_ids": OTHER}),
    ("ids not strings", {"event_ids": [1]}),
    ("ids not UUIDs", {"event_ids": ["not-an-id"]}),
    ("ids a UUID in braces", {"event_ids": ["{" + OTHER + "}"]}),
    ("over 1000 ids", {"event_ids": [str(uuid.uuid4()) for _ in range(RESEND_MAX + 1)]}),
    ("an unknown id", {"event_ids": [OTHER]}),
]


@pytest.mark.parametrize(("case", "asked"), REFUSED, ids=[case for case, _ in REFUSED])
def test_bad_input_is_a_400_and_queues_nothing(hooked: Directory, kicks: list, case: str, asked: dict) -> None:
    feed_events(hooked, [F, F, F])
    with pytest.raises(ValidationFailed):
        _resend(hooked, **asked)
    assert _states(hooked) == {1: (F, False), 2: (F, False), 3: (F, False)}
    assert kicks == []


def test_an_id_of_another_directory_or_of_a_dsync_event_is_a_400_naming_it_and_nothing_is_queued(
    hooked: Directory, kicks: list
) -> None:
    own = feed_events(hooked, [F, F])
    other = _hooked("globex")
    foreign = feed_events(other, [F])[0]
    dsync = WebhookEvent.objects.create(
        directory_id=hooked.id, event_type="dsync.activated", target="global", body="{}"
    )
    for strangers in ([foreign.id], [dsync.id]):
        with pytest.raises(ValidationFailed) as refused:
            _resend(hooked, event_ids=[str(own[0].id), *(str(s) for s in strangers)])
        assert str(strangers[0]) in refused.value.message
        assert str(own[0].id) not in refused.value.message
    assert _states(hooked) == {1: (F, False), 2: (F, False)}
    assert _states(other) == {1: (F, False)}
    assert kicks == []


def test_a_deactivated_directory_or_one_without_webhook_is_a_409_and_nothing_is_queued(
    private_ok,  # noqa: ANN001
    kicks: list,
) -> None:
    deactivated = _hooked("acme")
    feed_events(deactivated, [F])
    Directory.objects.filter(pk=deactivated.pk).update(deactivated=True)
    bare = directory_create(actor=TEST_ACTOR, data={"tenant": "globex", "product": "crm"})
    feed_events(bare, [EventState.DROPPED])
    with pytest.raises(Conflict, match="deactivated"):
        _resend(deactivated, first=1, last=1)
    with pytest.raises(Conflict, match="no webhook"):
        _resend(bare, event_ids=[str(WebhookEvent.objects.get(directory_id=bare.id).id)])
    assert _states(deactivated) == {1: (F, False)}
    assert _states(bare) == {1: (EventState.DROPPED, False)}
    assert kicks == []


def test_the_409_is_decided_on_the_directory_as_stored_now(hooked: Directory, kicks: list) -> None:
    feed_events(hooked, [F])
    Directory.objects.filter(pk=hooked.pk).update(webhook_url="")  # removed since the caller read it
    with pytest.raises(Conflict):
        _resend(hooked, first=1, last=1)
    Directory.objects.filter(pk=hooked.pk).delete()
    with pytest.raises(NotFound):
        _resend(hooked, first=1, last=1)


def test_finished_events_go_back_to_pending_as_a_resend_and_those_still_waiting_are_left_alone(
    hooked: Directory, kicks: list
) -> None:
    feed_events(hooked, [EventState.DELIVERED, F, EventState.DROPPED, EventState.PENDING, EventState.SENDING])
    before = {e.sequence: e for e in WebhookEvent.objects.filter(directory_id=hooked.id)}
    assert _resend(hooked, first=1, last=5) == 3  # the pending and the sending one are not counted
    after = {e.sequence: e for e in WebhookEvent.objects.filter(directory_id=hooked.id)}
    for sequence in (1, 2, 3):
        event = after[sequence]
        assert (event.state, event.resend, event.claimed_at, event.finished_at, event.state_reason) == (
            EventState.PENDING,
            True,
            None,
            None,
            "",
        )
        # The same event: id, number, body and the outcome of the attempts so far are kept.
        old = before[sequence]
        assert (event.id, event.body, event.created_at, event.attempts, event.status_code) == (
            old.id,
            old.body,
            old.created_at,
            old.attempts,
            old.status_code,
        )
    assert (after[4].state, after[4].resend) == (EventState.PENDING, False)
    assert (after[5].state, after[5].resend, after[5].claimed_at) == (EventState.SENDING, False, before[5].claimed_at)
    assert kicks == [(str(hooked.id), "directory")]  # one drain for the request, after commit


def test_a_range_queues_what_exists_and_touches_no_other_directory(hooked: Directory, kicks: list) -> None:
    feed_events(hooked, [F, F, F], start=3)  # 1 and 2 were purged
    other = _hooked("globex")
    feed_events(other, [F, F, F, F, F])
    assert _resend(hooked, first=1, last=RESEND_MAX) == 3  # exactly 1000 numbers is allowed
    assert _states(hooked) == {
        3: (EventState.PENDING, True),
        4: (EventState.PENDING, True),
        5: (EventState.PENDING, True),
    }
    assert set(_states(other).values()) == {(F, False)}
    assert _resend(hooked, first=6, last=50) == 0  # not given yet: nothing to queue, and no drain asked
    assert kicks == [(str(hooked.id), "directory")]


def test_event_ids_are_queued_once_each_and_a_second_request_queues_nothing_new(hooked: Directory, kicks: list) -> None:
    rows = feed_events(hooked, [F, EventState.DELIVERED, F])
    ids = [str(rows[2].id), str(rows[0].id).upper(), str(rows[2].id)]
    assert _resend(hooked, event_ids=ids) == 2
    assert _states(hooked) == {
        1: (EventState.PENDING, True),
        2: (EventState.DELIVERED, False),
        3: (EventState.PENDING, True),
    }
    assert _resend(hooked, event_ids=ids) == 0  # already waiting for their attempt
    assert kicks == [(str(hooked.id), "directory")]


def test_a_resend_in_a_transaction_that_rolls_back_queues_nothing_and_asks_for_no_drain(
    hooked: Directory, kicks: list
) -> None:
    from django.db import transaction

    feed_events(hooked, [F])
    with pytest.raises(RuntimeError), transaction.atomic():
        assert _resend(hooked, first=1, last=1) == 1
        raise RuntimeError("the caller's audit entry failed")
    assert _states(hooked) == {1: (F, False)}
    assert kicks == []


BODIES = [
    ("not an object", [1, 2], "JSON object"),
    ("unknown field", {"from": 1, "to": 2, "force": True}, "Unknown field"),
    ("both", {"from": 1, "to": 2, "event_ids": []}, "not both"),
    ("neither", {}, "Send"),
    ("from alone", {"from": 1}, "to is required"),
    ("to alone", {"to": 1}, "from is required"),
]


@pytest.mark.parametrize(("case", "body", "said"), BODIES, ids=[case for case, _, _ in BODIES])
def test_the_body_reader_refuses_every_other_shape(case: str, body: Any, said: str) -> None:
    with pytest.raises(ValidationFailed, match=said):
        changes_resend_input(body)


def test_the_body_reader_passes_the_values_on_for_the_service_to_check() -> None:
    assert changes_resend_input({"from": "1", "to": 2}).first == "1"
    assert changes_resend_input({"event_ids": ["x"]}).event_ids == ["x"]


def test_a_range_that_names_only_its_start_runs_to_the_newest_event_at_most_1000() -> None:
    assert resend_range_end(5, 40) == 40
    assert resend_range_end(5, 5000) == 5 + RESEND_MAX - 1
    assert resend_range_end(50, 40) == 50  # past the newest: a range that queues nothing
    assert resend_range_end(0, 40) == 0  # not a sequence number: left for the service to refuse
    assert resend_range_end("x", 40) == "x"


def test_the_backlog_age_of_a_resent_event_counts_from_the_resend(hooked: Directory, kicks: list) -> None:
    """/metrics and `manage.py doctor` read the age of the oldest pending event: resending week-old
    events must not read as a week-old backlog, while an event waiting since it was recorded still does."""
    week = timedelta(days=7)
    feed_events(hooked, [EventState.DELIVERED, F], age=week)
    assert outbox_backlog().oldest_pending_at is None
    asked = timezone.now()
    assert _resend(hooked, first=1, last=2) == 2
    resent = list(WebhookEvent.objects.filter(directory_id=hooked.id))
    assert len(resent) == 2
    assert all(asked <= event.pending_since <= timezone.now() for event in resent)
    assert all(event.created_at < asked - week + timedelta(minutes=1) for event in resent)  # kept as recorded
    backlog = outbox_backlog()
    assert backlog.pending == 2
    assert asked <= backlog.oldest_pending_at <= timezone.now()
    # An event pending since it was recorded, an hour ago, is now the oldest wait.
    waiting = feed_events(hooked, [EventState.PENDING], start=3)
    assert outbox_backlog().oldest_pending_at == waiting[0].created_at
