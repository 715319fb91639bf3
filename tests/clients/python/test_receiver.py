"""The receiver of roster_client against a fake Roster: deliveries signed by Roster's signer, and a fake changes
feed (an httpx mock transport under the library's own client) that answers `GET …/changes?after=&limit=` from
a list of events, with a retention cut."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from roster_client import ResyncRequired, Roster, RosterError, WebhookEvent
from roster_client.receiver import APPLIED, CAUGHT_UP, DUPLICATE, STALE, MemoryState, Receiver
from roster_client.webhooks import MalformedSignatureHeader, SignatureMismatch

from webhooks.signing import signature_header

SECRET = "whsec-receiver-test"
API_KEY = "key-123"
BASE = "https://roster.example.com"
DIRECTORY = str(uuid.uuid4())


class FakeRoster:
    """A directory's events, numbered 1, 2, 3…; `oldest` is the first one the feed still keeps."""

    def __init__(self, count: int, directory_id: str = DIRECTORY) -> None:
        self.directory_id = directory_id
        self.events = [self._event(n) for n in range(1, count + 1)]
        self.oldest = 1
        self.reads: list[tuple[int, int]] = []
        self.status: int | None = None  # force this status on every read

    def _event(self, n: int) -> dict[str, Any]:
        return {
            "id": str(uuid.uuid4()),
            "event": "user.updated",
            "created_at": "2026-01-01T00:00:00.000Z",
            "sequence": n,
            "directory_id": self.directory_id,
            "tenant": "acme",
            "product": "crm",
            "data": {"id": f"user-{n}", "first_name": f"v{n}"},
            "previous_attributes": {},
        }

    def add(self, count: int) -> None:
        self.events += [self._event(len(self.events) + 1) for _ in range(count)]

    def delivery(self, n: int, secret: str = SECRET) -> tuple[bytes, dict[str, str]]:
        body = json.dumps(self.events[n - 1]).encode()
        return body, {"Roster-Signature": signature_header(body, secret), "Roster-Event-Sequence": str(n)}

    def answer(self, request: httpx.Request) -> httpx.Response:
        assert f"{request.url.scheme}://{request.url.host}" == BASE
        assert request.url.path == f"/api/v1/directory-sync/{self.directory_id}/changes"
        assert request.headers["Authorization"] == f"Bearer {API_KEY}"
        after, limit = int(request.url.params["after"]), int(request.url.params["limit"])
        self.reads.append((after, limit))
        if self.status is not None:
            return httpx.Response(self.status, json={"data": None, "error": {"message": "boom", "code": self.status}})
        if after < self.oldest - 1:
            message = "These events are no longer kept: resynchronise from the user and group lists."
            return httpx.Response(410, json={"data": None, "error": {"message": message, "code": 410}})
        page = [
            e | {"delivery": {"status": "failed", "attempts": 1, "last_attempt_at": None, "status_code": 500}}
            for e in self.events
            if e["sequence"] > after and e["sequence"] >= self.oldest
        ][:limit]
        return httpx.Response(200, json={"data": page, "error": None})

    def client(self) -> Roster:
        http = httpx.Client(transport=httpx.MockTransport(self.answer))
        return Roster(base_url=BASE, api_key=API_KEY, http_client=http, max_retries=0)


@pytest.fixture
def roster() -> FakeRoster:
    return FakeRoster(10)


@pytest.fixture
def applied() -> list[dict[str, Any]]:
    return []


def _receiver(roster: FakeRoster, applied: list[WebhookEvent], **kwargs: Any) -> Receiver:
    return Receiver(roster=roster.client(), secret=SECRET, apply=applied.append, **kwargs)


def _sequences(applied: list[WebhookEvent]) -> list[int]:
    return [event.sequence for event in applied]


def _payloads(applied: list[WebhookEvent]) -> list[dict[str, Any]]:
    return [event.to_dict() for event in applied]


def test_events_in_order_are_applied_as_delivered(roster: FakeRoster, applied: list) -> None:
    receiver = _receiver(roster, applied)
    assert [receiver.handle(*roster.delivery(n)) for n in (1, 2, 3)] == [APPLIED] * 3
    assert _payloads(applied) == roster.events[:3]
    assert roster.reads == []  # no gap, no read of the feed


def test_a_repeated_delivery_is_applied_once(roster: FakeRoster, applied: list) -> None:
    receiver = _receiver(roster, applied)
    receiver.handle(*roster.delivery(1))
    assert receiver.handle(*roster.delivery(1)) == DUPLICATE  # a fresh signature, the same event id
    assert _sequences(applied) == [1]


def test_a_gap_is_filled_from_the_feed_in_order(roster: FakeRoster, applied: list) -> None:
    receiver = _receiver(roster, applied)
    receiver.handle(*roster.delivery(1))
    assert receiver.handle(*roster.delivery(4)) == CAUGHT_UP
    assert _sequences(applied) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]  # up to the feed's head
    assert all("delivery" not in event.to_dict() for event in applied)  # as delivered, without the feed's field
    assert _payloads(applied)[3] == roster.events[3]
    assert roster.reads == [(1, 1000)]
    # Pushes of what the catch-up already applied are repeats; the next new one follows on.
    assert receiver.handle(*roster.delivery(5)) == DUPLICATE
    roster.add(1)
    assert receiver.handle(*roster.delivery(11)) == APPLIED
    assert _sequences(applied)[-1] == 11


def test_catch_up_reads_page_by_page_until_the_head(roster: FakeRoster, applied: list) -> None:
    receiver = _receiver(roster, applied, page_limit=3)
    receiver.start(DIRECTORY, 2)
    assert receiver.catch_up(DIRECTORY) == 8
    assert _sequences(applied) == [3, 4, 5, 6, 7, 8, 9, 10]
    assert roster.reads == [(2, 3), (5, 3), (8, 3)]  # the third page is short: the head
    assert receiver.catch_up(DIRECTORY) == 0


def test_past_retention_asks_for_a_resync_and_applies_nothing(roster: FakeRoster, applied: list) -> None:
    receiver = _receiver(roster, applied)
    receiver.handle(*roster.delivery(1))
    roster.oldest = 6  # events 1..5 were purged while the endpoint was down
    with pytest.raises(ResyncRequired) as raised:
        receiver.handle(*roster.delivery(8))
    assert raised.value.directory_id == DIRECTORY and raised.value.after == 1
    assert "resynchronise" in str(raised.value)
    assert _sequences(applied) == [1]
    assert receiver.state.last_sequence(DIRECTORY) == 1
    # After the full resynchronisation, following resumes at the number read before listing.
    receiver.start(DIRECTORY, 9)
    assert receiver.handle(*roster.delivery(10)) == APPLIED
    assert _sequences(applied) == [1, 10]


@pytest.mark.parametrize(
    ("tamper", "error"),
    [
        (
            lambda body, headers: (body, headers | {"Roster-Signature": signature_header(body, "wrong")}),
            SignatureMismatch,
        ),
        (lambda body, headers: (body.replace(b"acme", b"evil"), headers), SignatureMismatch),
        (lambda body, headers: (body, {}), MalformedSignatureHeader),
    ],
)
def test_a_bad_signature_is_rejected_before_anything_happens(
    roster: FakeRoster, applied: list, tamper: Any, error: type
) -> None:
    receiver = _receiver(roster, applied)
    receiver.handle(*roster.delivery(1))
    with pytest.raises(error):
        receiver.handle(*tamper(*roster.delivery(5)))
    assert _sequences(applied) == [1] and roster.reads == []


def test_header_names_are_case_insensitive(roster: FakeRoster, applied: list) -> None:
    body, headers = roster.delivery(1)
    assert _receiver(roster, applied).handle(body, {k.lower(): v for k, v in headers.items()}) == APPLIED


def test_an_older_event_arriving_late_is_ignored(roster: FakeRoster, applied: list) -> None:
    receiver = _receiver(roster, applied, state=MemoryState(seen_max=1))
    for n in (1, 2, 3):
        receiver.handle(*roster.delivery(n))
    # Event 2's id is forgotten (seen_max=1): its number still tells it is old.
    assert receiver.handle(*roster.delivery(2)) == STALE
    assert _sequences(applied) == [1, 2, 3]


def test_a_failing_apply_is_read_again_from_the_feed(roster: FakeRoster) -> None:
    applied: list[WebhookEvent] = []
    failing = {2}

    def apply(event: WebhookEvent) -> None:
        if event.sequence in failing:
            failing.discard(event.sequence)
            raise RuntimeError("database down")
        applied.append(event)

    receiver = Receiver(roster=roster.client(), secret=SECRET, apply=apply)
    receiver.handle(*roster.delivery(1))
    with pytest.raises(RuntimeError):
        receiver.handle(*roster.delivery(2))
    assert receiver.state.last_sequence(DIRECTORY) == 1
    assert receiver.handle(*roster.delivery(3)) == CAUGHT_UP
    assert _sequences(applied)[:3] == [1, 2, 3]


def test_directory_events_have_no_sequence_and_are_deduplicated(roster: FakeRoster, applied: list) -> None:
    receiver = _receiver(roster, applied)
    event = {"id": "d1", "event": "dsync.activated", "created_at": "…", "directory_id": DIRECTORY, "data": {}}
    body = json.dumps(event).encode()
    headers = {"Roster-Signature": signature_header(body, SECRET)}
    assert receiver.handle(body, headers) == APPLIED
    assert receiver.handle(body, headers) == DUPLICATE
    assert _payloads(applied) == [event] and receiver.state.last_sequence(DIRECTORY) is None


def test_a_feed_error_is_raised_and_nothing_moves(roster: FakeRoster, applied: list) -> None:
    receiver = _receiver(roster, applied)
    receiver.handle(*roster.delivery(1))
    roster.status = 503
    with pytest.raises(RosterError) as raised:
        receiver.handle(*roster.delivery(3))
    assert raised.value.status == 503 and raised.value.message == "boom"
    assert receiver.state.last_sequence(DIRECTORY) == 1


def test_a_feed_with_a_hole_is_refused(roster: FakeRoster, applied: list) -> None:
    del roster.events[4]  # the feed skips 5: never applied past a hole
    receiver = _receiver(roster, applied)
    receiver.start(DIRECTORY, 0)
    with pytest.raises(ResyncRequired) as raised:
        receiver.catch_up(DIRECTORY)
    assert raised.value.after == 4 and raised.value.status is None
    assert _sequences(applied) == [1, 2, 3, 4]


def test_settings_are_checked(roster: FakeRoster) -> None:
    with pytest.raises(ValueError):
        Receiver(roster=roster.client(), secret=SECRET, apply=print, page_limit=1001)
    with pytest.raises(ValueError):
        Roster(base_url="file:///etc", api_key=API_KEY)
