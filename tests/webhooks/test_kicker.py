"""The web server's kicker thread (webhooks.kicker): kicks leave the request, none is lost or repeated
for nothing, and a SCIM write through a real broker still gets its event delivered."""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.webhooks.conftest import Receiver, TaskCounter, make_hooked_directory
from webhooks.kicker import Kicker
from webhooks.models import WebhookDelivery
from webhooks.services import draining


def test_keys_handed_over_while_a_kick_runs_are_kicked_once_each_in_the_order_handed() -> None:
    kicked: list[str] = []
    inside_first = threading.Event()
    release_first = threading.Event()

    def kick(key: Any) -> None:
        if not kicked:
            inside_first.set()
            release_first.wait(5)
        kicked.append(key)

    kicker = Kicker(kick)
    kicker.hand("a")
    assert inside_first.wait(5)  # the thread is inside the first kick
    for key in ("b", "c", "b", "b", "a"):  # handed again while queued: one kick each
        kicker.hand(key)
    release_first.set()
    assert kicker.flush(5)
    assert kicked == ["a", "b", "c", "a"]  # "a" again: handed after its first kick had started


def test_a_kick_that_raises_does_not_stop_the_thread(caplog: pytest.LogCaptureFixture) -> None:
    kicked: list[str] = []

    def kick(key: Any) -> None:
        if key == "bad":
            raise RuntimeError("bug")
        kicked.append(key)

    kicker = Kicker(kick)
    kicker.hand("bad")
    assert kicker.flush(5)
    kicker.hand("good")
    assert kicker.flush(5)
    assert kicked == ["good"]
    assert "stay pending for the sweep" in caplog.text


def test_flush_in_a_process_that_never_handed_a_key_returns_at_once() -> None:
    assert Kicker(lambda key: None).flush(0.1) is True


@pytest.fixture
def background_kicks() -> Iterator[None]:
    previous = draining._kicker
    draining.kicks_in_background()
    try:
        yield
    finally:
        assert draining._kicker is not None
        assert draining._kicker.flush(10)
        draining._kicker = previous


@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_with_the_web_servers_kicker_a_scim_write_is_delivered_through_the_broker(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    celery_worker,  # noqa: ANN001
    delivered_tasks: TaskCounter,
    background_kicks: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kicked_in: list[str] = []
    real = draining._kick_now
    kicker = draining._kicker
    assert kicker is not None
    monkeypatch.setattr(kicker, "_kick", lambda key: kicked_in.append(threading.current_thread().name) or real(key))
    directory = make_hooked_directory(receiver)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {directory.scim_secret}")
    body = {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
        "userName": "kicker@example.com",
        "emails": [{"value": "kicker@example.com", "primary": True}],
        "active": True,
    }
    response = client.post(
        f"/api/scim/v2.0/{directory.id}/Users", json.dumps(body), content_type="application/scim+json"
    )
    assert response.status_code == 201
    (request,) = receiver.wait_for(1, timeout=20)
    assert request.json["data"]["id"] == response.json()["id"]
    assert delivered_tasks.wait_for(1)
    assert WebhookDelivery.objects.filter(directory=directory, delivered=True).count() == 1
    assert kicked_in == ["roster-kicker"]  # not in the request's thread


def _child_hands_a_key_and_returns(marker: str) -> None:
    def kick(key: Any) -> None:
        time.sleep(0.3)  # a kick under way (the SET done, the publish not yet) when the worker's run ends
        Path(marker).write_text(str(key))

    Kicker(kick).hand("directory-1")


def test_a_multiprocessing_child_kicks_what_it_was_handed_before_it_exits(tmp_path: Path) -> None:
    """granian's workers are multiprocessing children, which leave through os._exit and never run atexit:
    the kick handed over just before a worker stops still happens."""
    marker = tmp_path / "kicked"
    child = multiprocessing.get_context("fork").Process(target=_child_hands_a_key_and_returns, args=(str(marker),))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert marker.read_text() == "directory-1"
