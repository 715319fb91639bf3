"""Resent events end to end (contract §5.1): SCIM writes number and deliver them, a resend gets each
chosen one exactly one more attempt (same id, sequence and bytes, a valid fresh signature), logged as a
resend, and then nothing more; with the broker down the request still succeeds and the sweep delivers.

Real commits (transaction=True): the drains run on other threads with their own connections.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from directories.models import Directory
from tests.actors import TEST_ACTOR
from tests.webhooks.conftest import (
    Receiver,
    closed_port,
    make_hooked_directory,
    running_worker,
    single_drain_thread_on_sqlite,
    use_broker,
)
from webhooks.models import EventState, WebhookDelivery, WebhookEvent
from webhooks.services import changes_resend, drain_pool, events_sweep

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "whsec-acme-0123456789abcdef"
SCIM_CT = "application/scim+json"


@pytest.fixture(autouse=True)
def one_pool_thread_on_sqlite() -> Iterator[None]:
    with single_drain_thread_on_sqlite():
        yield


def _users(directory: Directory, count: int) -> None:
    scim = Client(HTTP_AUTHORIZATION=f"Bearer {directory.scim_secret}")
    for i in range(count):
        body = {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
            "userName": f"user{i}@example.com",
            "name": {"givenName": "Ann", "familyName": f"Lee{i}"},
            "emails": [{"value": f"user{i}@example.com", "primary": True}],
            "active": True,
        }
        response = scim.post(f"/api/scim/v2.0/{directory.id}/Users", json.dumps(body), content_type=SCIM_CT)
        assert response.status_code == 201, response.content
        assert drain_pool.drain(timeout=15)


def _signature_time(request: Any) -> int:
    return int(request.headers["Roster-Signature"].split(",")[0].removeprefix("t="))


def test_resent_events_get_exactly_one_more_attempt_with_the_same_id_sequence_and_bytes(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
) -> None:
    directory = make_hooked_directory(receiver)
    _users(directory, 3)
    first = receiver.wait_for(3)
    assert [r.json["sequence"] for r in first] == [1, 2, 3]

    assert changes_resend(directory=directory, first=2, last=3, actor=TEST_ACTOR) == 2
    assert drain_pool.drain(timeout=15)
    got = receiver.wait_for(5)
    assert len(got) == 5
    again = got[3:]
    for original, resent in zip(first[1:], again, strict=True):
        assert resent.body == original.body  # same id, sequence, created_at and data, byte for byte
        assert resent.headers["Roster-Event-Sequence"] == original.headers["Roster-Event-Sequence"]
        receiver.assert_signed(resent, SECRET)
        assert _signature_time(resent) >= _signature_time(original)  # signed at the attempt, not reused
    # The attempt log says which attempts were resends; the events are back to their outcome.
    logged = WebhookDelivery.objects.filter(directory=directory).order_by("created_at", "id")
    assert [(str(d.event_id), d.sequence, d.resend) for d in logged] == [
        (r.json["id"], r.json["sequence"], False) for r in first
    ] + [(r.json["id"], r.json["sequence"], True) for r in again]
    events = {e.sequence: e for e in WebhookEvent.objects.filter(directory_id=directory.id, target="directory")}
    assert [(events[n].state, events[n].attempts, events[n].resend) for n in (1, 2, 3)] == [
        (EventState.DELIVERED, 1, False),
        (EventState.DELIVERED, 2, False),
        (EventState.DELIVERED, 2, False),
    ]
    # And then nothing: no sweep or drain attempts them again by itself.
    assert events_sweep(pending_age=timedelta(0)).enqueued == 0
    assert drain_pool.drain(timeout=15)
    assert len(receiver.wait_for(6, timeout=0.5)) == 5

    # A second request asks again, and gets one more attempt again.
    assert changes_resend(directory=directory, event_ids=[first[1].json["id"]], actor=TEST_ACTOR) == 1
    assert drain_pool.drain(timeout=15)
    got = receiver.wait_for(6)
    assert len(got) == 6 and got[5].body == first[1].body
    assert WebhookDelivery.objects.filter(directory=directory, resend=True).count() == 3


def test_a_resent_event_whose_attempt_fails_again_is_failed_again_and_not_retried(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
) -> None:
    directory = make_hooked_directory(receiver, path="/fail")
    _users(directory, 1)
    assert len(receiver.wait_for(1)) == 1
    assert changes_resend(directory=directory, first=1, last=1, actor=TEST_ACTOR) == 1
    assert drain_pool.drain(timeout=15)
    assert len(receiver.wait_for(2)) == 2
    event = WebhookEvent.objects.get(directory_id=directory.id, target="directory")
    assert (event.state, event.attempts, event.status_code, event.resend) == (EventState.FAILED, 2, 500, False)
    assert events_sweep(pending_age=timedelta(0)).enqueued == 0
    assert len(receiver.wait_for(3, timeout=0.5)) == 2


@pytest.mark.parametrize("recovery", ["in-process", pytest.param("celery", marks=pytest.mark.broker)])
def test_broker_down_the_resend_still_succeeds_and_the_sweep_delivers_the_old_events_later(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    api_client: Client,
    request: pytest.FixtureRequest,
    recovery: str,
) -> None:
    directory = make_hooked_directory(receiver)
    _users(directory, 2)
    first = receiver.wait_for(2)
    # Recorded long ago: the sweep finds pending events by their recording time, so a resent event is
    # due at the first sweep after the resend.
    WebhookEvent.objects.filter(directory_id=directory.id).update(created_at=timezone.now() - timedelta(days=2))

    dead = f"redis://127.0.0.1:{closed_port()}/15"
    private_ok.CELERY_BROKER_URL = dead
    use_broker(dead)
    try:
        response = api_client.post(
            f"/api/v1/directory-sync/{directory.id}/changes/resend",
            json.dumps({"from": 1, "to": 2}),
            content_type="application/json",
        )
        assert response.status_code == 202, response.content
        assert response.json()["data"] == {"queued": 2}
        pending = WebhookEvent.objects.filter(directory_id=directory.id, state=EventState.PENDING, resend=True)
        assert pending.count() == 2
        assert len(receiver.wait_for(3, timeout=0.5)) == 2  # nothing sent while the broker is down
    finally:
        private_ok.CELERY_BROKER_URL = ""
        use_broker(None)

    # The broker is back: the sweep, with its usual minimum age, hands the directory to a drain, which
    # sends each resent event once, in sequence order.
    if recovery == "celery":
        request.getfixturevalue("broker_url")  # points settings and the Celery app at the test broker
        tasks = request.getfixturevalue("delivered_tasks")
        with running_worker():
            assert events_sweep().enqueued == 2
            assert tasks.wait_for(1)
    else:
        assert events_sweep().enqueued == 2
        assert drain_pool.drain(timeout=15)
    got = receiver.wait_for(4)
    assert [r.body for r in got[2:]] == [r.body for r in first]
    assert WebhookDelivery.objects.filter(directory=directory, resend=True).count() == 2
    assert events_sweep(pending_age=timedelta(0)).enqueued == 0
    assert len(receiver.wait_for(5, timeout=0.5)) == 4
