"""The changes feed through roster_client against a live Roster: list (every page, then stops), follow (waits
for new events), resend, and ResyncRequired on a 410 (a purged feed) and on a gap (a fake Roster: a live one
never shows one)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.utils import timezone
from roster_client import Change, ResyncRequired, Roster, verify_webhook

from tests.clients.conftest import PRODUCT, TENANT, LiveRoster
from tests.clients.fakeserver import fake_roster, ok
from tests.faults.stack import wait_for
from tests.webhooks.conftest import Receiver, receiver  # noqa: F401 - the receiver fixture
from webhooks.models import WebhookEvent
from webhooks.services.sweeping import feed_purge

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reads() -> list[httpx.Request]:
    return []


@pytest.fixture
def roster(live_roster: LiveRoster, reads: list[httpx.Request]) -> Iterator[Roster]:
    def count(request: httpx.Request) -> None:
        if request.url.path.endswith("/changes"):
            reads.append(request)

    with httpx.Client(timeout=30, event_hooks={"request": [count]}) as http:
        yield Roster(base_url=live_roster.url, api_key=live_roster.api_key, http_client=http)


def _users(live: LiveRoster, directory: Any, count: int, prefix: str = "u") -> list[str]:
    return [live.scim_user(directory.id, directory.scim.secret, f"{prefix}{n}@acme.test")["id"] for n in range(count)]


def _positions(reads: list[httpx.Request]) -> list[tuple[str, str]]:
    return [(r.url.params["after"], r.url.params["limit"]) for r in reads]


def test_list_reads_every_page_then_stops(roster: Roster, live_roster: LiveRoster, reads: list) -> None:
    directory = roster.directories.create(tenant=TENANT, product=PRODUCT)
    ids = _users(live_roster, directory, 5)
    changes = list(roster.changes.list(directory.id, after=0, limit=2))
    assert [c.sequence for c in changes] == [1, 2, 3, 4, 5]
    assert all(isinstance(c, Change) and c.event == "user.created" for c in changes)
    assert [c.data["id"] for c in changes] == ids and changes[0].directory_id == directory.id
    assert changes[0].delivery.status == "dropped"  # no webhook: never attempted, still in the feed
    assert _positions(reads) == [("0", "2"), ("2", "2"), ("4", "2")]
    assert [c.sequence for c in roster.changes.list(directory.id, after=3)] == [4, 5]
    assert roster.directories.get(directory.id).events.last_sequence == 5


def test_follow_waits_for_new_events_and_never_skips_one(live_roster: LiveRoster, reads: list) -> None:
    naps: list[float] = []
    holder: dict[str, Any] = {}

    def nap(seconds: float) -> None:
        # Called at the feed's head: new changes arrive while the follower waits.
        naps.append(seconds)
        if len(naps) <= 2:
            _users(live_roster, holder["directory"], 2, prefix=f"late{len(naps)}-")

    with httpx.Client(timeout=30, event_hooks={"request": [reads.append]}) as http:
        roster = Roster(base_url=live_roster.url, api_key=live_roster.api_key, http_client=http, sleep=nap)
        holder["directory"] = directory = roster.directories.create(tenant=TENANT, product=PRODUCT)
        _users(live_roster, directory, 3)
        reads.clear()
        seen = []
        for change in roster.changes.follow(directory.id, after=1, poll_interval=0.25, limit=100):
            seen.append(change.sequence)
            if len(seen) == 6:
                break
    assert seen == [2, 3, 4, 5, 6, 7]
    assert naps == [0.25, 0.25]
    assert _positions(reads) == [("1", "100"), ("3", "100"), ("5", "100")]


def test_a_purged_feed_raises_resync_required(roster: Roster, live_roster: LiveRoster) -> None:
    directory = roster.directories.create(tenant=TENANT, product=PRODUCT)
    _users(live_roster, directory, 3)
    # Events 1 and 2 passed EVENT_RETENTION_DAYS: the purge removes them (a prefix only, as it always does).
    long_ago = timezone.now() - timedelta(days=60)
    WebhookEvent.objects.filter(directory_id=directory.id, sequence__lte=2).update(created_at=long_ago)
    assert feed_purge(before=timezone.now() - timedelta(days=30)) == 2

    with pytest.raises(ResyncRequired) as raised:
        list(roster.changes.list(directory.id, after=0))
    assert raised.value.status == 410 and raised.value.directory_id == directory.id and raised.value.after == 0
    assert "resynchronise" in raised.value.message.lower() and raised.value.request_id
    with pytest.raises(ResyncRequired):
        next(roster.changes.follow(directory.id, after=0, poll_interval=0))
    # Resynchronise: the number read before listing, then follow from it.
    last = roster.directories.get(directory.id).events
    assert (last.oldest_sequence, last.last_sequence) == (3, 3)
    assert len(roster.users.list(tenant=TENANT, product=PRODUCT)) == 3
    _users(live_roster, directory, 1, prefix="after-resync")
    assert [c.sequence for c in roster.changes.list(directory.id, after=last.last_sequence)] == [4]


def _feed_item(sequence: int, directory_id: str) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "event": "user.created",
        "created_at": "2030-01-01T00:00:00.000Z",
        "sequence": sequence,
        "directory_id": directory_id,
        "tenant": TENANT,
        "product": PRODUCT,
        "data": {"id": f"user-{sequence}"},
        "delivery": {"status": "delivered", "attempts": 1, "last_attempt_at": None, "status_code": 200},
    }


def test_follow_raises_resync_required_at_a_gap_without_yielding_past_it() -> None:
    directory_id = str(uuid.uuid4())
    with fake_roster() as fake:
        fake.script(ok([_feed_item(n, directory_id) for n in (1, 2, 4, 5)]))
        roster = Roster(base_url=fake.url, api_key="k", sleep=lambda _s: None)
        seen = []
        with pytest.raises(ResyncRequired) as raised:
            for change in roster.changes.follow(directory_id, after=0):
                seen.append(change.sequence)
    assert seen == [1, 2]
    assert raised.value.after == 2 and raised.value.status is None and raised.value.directory_id == directory_id
    assert "from sequence 2 to 4" in raised.value.message


def test_resend_by_range_and_by_ids_reaches_the_webhook_signed(
    roster: Roster,
    live_roster: LiveRoster,
    receiver: Receiver,  # noqa: F811
) -> None:
    secret = "whsec-clients-0123456789abcdef"
    directory = roster.directories.create(
        tenant=TENANT, product=PRODUCT, webhook_url=receiver.url("/ok"), webhook_secret=secret
    )
    _users(live_roster, directory, 2)
    first = receiver.wait_for(2)
    # Each delivery Roster made verifies with the library, against the directory's secret.
    events = [verify_webhook(body=r.body, signature=r.headers["Roster-Signature"], secret=secret) for r in first]
    assert sorted(e.sequence for e in events) == [1, 2]
    assert wait_for(lambda: all(c.delivery.status == "delivered" for c in roster.changes.list(directory.id)), 10)

    assert roster.changes.resend(directory.id, from_sequence=1, to_sequence=2).queued == 2
    again = receiver.wait_for(4)[2:]
    resent = [verify_webhook(body=r.body, signature=r.headers["Roster-Signature"], secret=secret) for r in again]
    assert sorted((e.sequence, e.id) for e in resent) == sorted((e.sequence, e.id) for e in events)

    assert wait_for(lambda: all(c.delivery.attempts == 2 for c in roster.changes.list(directory.id)), 10)
    assert roster.changes.resend(directory.id, event_ids=[events[0].id]).queued == 1
    (last,) = receiver.wait_for(5)[4:]
    assert verify_webhook(body=last.body, signature=last.headers["Roster-Signature"], secret=secret).id == events[0].id
    with pytest.raises(ValueError):
        roster.changes.resend(directory.id, from_sequence=1)
