"""The changes feed's life (contract §5.1): retention by the purge, and the whole path from a SCIM
write to a numbered event and its attempt's outcome, read back through GET .../changes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import orjson
import pytest
from django.test import Client
from django.utils import timezone

from directories.models import Directory
from tests.webhooks.conftest import Receiver, make_hooked_directory
from tests.webhooks.feedrows import ISO_MS, expired, feed_url, numbered, sequences
from webhooks.models import EventSequence, EventState, WebhookDelivery, WebhookEvent
from webhooks.services import deliveries_purge, events_batch_deliver
from webhooks.services.sweeping import feed_purge

pytestmark = pytest.mark.django_db

SCIM_CT = "application/scim+json"


@pytest.fixture(autouse=True)
def _no_drain_on_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Delivery is driven by the tests (events_batch_deliver), not by the after-commit kick."""
    from webhooks.services import draining

    monkeypatch.setattr(draining, "kick", lambda directory_id, target: None)


# --- retention -------------------------------------------------------------------------------------


def test_the_purge_deletes_old_finished_events_whatever_the_log_switch_and_keeps_the_counter(
    api_client: Client, hooked_directory: Directory, settings: Any
) -> None:
    settings.EVENT_RETENTION_DAYS = 30
    settings.WEBHOOK_LOG_RETENTION_DAYS = 7
    old = timezone.now() - timedelta(days=31)
    numbered(hooked_directory, [1, 2], state=EventState.DELIVERED, created_at=old)
    numbered(hooked_directory, [3], state=EventState.DROPPED, created_at=old)
    numbered(hooked_directory, [4], state=EventState.FAILED, created_at=old)
    # Past the log's retention, within the feed's: kept.
    numbered(hooked_directory, [5, 6], created_at=timezone.now() - timedelta(days=10))
    assert hooked_directory.log_webhook_events  # with the log on, the feed's rule still applies
    result = deliveries_purge()
    assert result.events == 4
    assert list(WebhookEvent.objects.order_by("sequence").values_list("sequence", flat=True)) == [5, 6]
    assert EventSequence.objects.get(directory_id=hooked_directory.id).last == 6
    expired(api_client.get(feed_url(hooked_directory, "after=3")))
    assert sequences(api_client.get(feed_url(hooked_directory, "after=4"))) == [5, 6]


def test_the_purge_never_deletes_a_pending_or_sending_event_nor_anything_after_it(directory_a: Directory) -> None:
    old = timezone.now() - timedelta(days=40)
    numbered(directory_a, [1, 2], created_at=old)
    numbered(directory_a, [3], state=EventState.PENDING, created_at=old)
    numbered(directory_a, [4], created_at=old)
    numbered(directory_a, [5], state=EventState.SENDING, created_at=old)
    numbered(directory_a, [6], created_at=old)
    assert feed_purge(before=timezone.now() - timedelta(days=30)) == 2
    assert list(WebhookEvent.objects.order_by("sequence").values_list("sequence", flat=True)) == [3, 4, 5, 6]


def test_the_purge_deletes_only_a_prefix_when_commit_order_and_creation_order_differ(
    api_client: Client, directory_a: Directory
) -> None:
    """Event 2 was created after event 3 (its transaction started later and committed first): the
    purge stops before 2, so the feed never has a hole above its oldest kept number."""
    cutoff = timezone.now() - timedelta(days=30)
    numbered(directory_a, [1], created_at=cutoff - timedelta(seconds=2))
    numbered(directory_a, [2], created_at=cutoff + timedelta(seconds=1))
    numbered(directory_a, [3], created_at=cutoff - timedelta(seconds=1))
    assert feed_purge(before=cutoff) == 1
    assert sequences(api_client.get(feed_url(directory_a, "after=1"))) == [2, 3]


def test_the_purge_keeps_dsync_events_on_the_log_retention(directory_a: Directory, settings: Any) -> None:
    settings.WEBHOOK_LOG_RETENTION_DAYS = 7
    settings.EVENT_RETENTION_DAYS = 30
    moment = timezone.now() - timedelta(days=8)
    WebhookEvent.objects.create(
        directory_id=directory_a.id,
        event_type="dsync.created",
        target="global",
        body="{}",
        state=EventState.DELIVERED,
        created_at=moment,
        finished_at=moment,
    )
    assert deliveries_purge().events == 1
    assert not WebhookEvent.objects.exists()


# --- the whole path: SCIM writes, numbering, delivery ---------------------------------------------


def _scim_user(client: Client, directory: Directory, user_name: str) -> str:
    body = {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": user_name, "active": True}
    response = client.post(f"/api/scim/v2.0/{directory.id}/Users", data=orjson.dumps(body), content_type=SCIM_CT)
    assert response.status_code == 201, response.content
    return response.json()["id"]


def _scim_rename(client: Client, directory: Directory, user_id: str, given: str) -> None:
    body = {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "replace", "path": "name.givenName", "value": given}],
    }
    response = client.patch(
        f"/api/scim/v2.0/{directory.id}/Users/{user_id}", data=orjson.dumps(body), content_type=SCIM_CT
    )
    assert response.status_code == 200, response.content


def test_a_directory_without_a_webhook_has_a_feed_of_dropped_events(
    api_client: Client, directory_a: Directory, scim_client_a: Client
) -> None:
    assert not directory_a.has_webhook
    user_id = _scim_user(scim_client_a, directory_a, "ann@acme.example")
    _scim_rename(scim_client_a, directory_a, user_id, "Annie")
    body = api_client.get(feed_url(directory_a)).json()
    assert [(i["sequence"], i["event"]) for i in body["data"]] == [(1, "user.created"), (2, "user.updated")]
    assert {(i["delivery"]["status"], i["delivery"]["attempts"]) for i in body["data"]} == {("dropped", 0)}
    assert body["data"][1]["data"]["first_name"] == "Annie"
    assert body["events"] == {"last_sequence": 2, "oldest_sequence": 1}
    directory = api_client.get(f"/api/v1/directory-sync/{directory_a.id}").json()["data"]
    assert directory["events"] == {"last_sequence": 2, "oldest_sequence": 1}


def test_the_feed_shows_delivered_and_failed_attempts_with_the_log_switched_off(
    api_client: Client, receiver: Receiver, private_ok: Any
) -> None:
    ok = make_hooked_directory(receiver, path="/ok", log=False, tenant="acme")
    failing = make_hooked_directory(receiver, path="/fail", log=False, tenant="globex")
    for directory in (ok, failing):
        client = Client(HTTP_AUTHORIZATION=f"Bearer {directory.scim_secret}")
        _scim_user(client, directory, f"bob@{directory.tenant}.example")
        events_batch_deliver(directory_id=directory.id, target="directory")
    assert not WebhookDelivery.objects.exists()  # the log is off; the feed keeps the outcome anyway
    (delivered,) = api_client.get(feed_url(ok)).json()["data"]
    (failed,) = api_client.get(feed_url(failing)).json()["data"]
    assert delivered["sequence"] == failed["sequence"] == 1
    assert (delivered["delivery"]["status"], delivered["delivery"]["status_code"]) == ("delivered", 200)
    assert (failed["delivery"]["status"], failed["delivery"]["status_code"]) == ("failed", 500)
    for item in (delivered, failed):
        assert item["delivery"]["attempts"] == 1
        assert ISO_MS.fullmatch(item["delivery"]["last_attempt_at"])
    sent = {r.json["id"]: r for r in receiver.wait_for(2)}
    assert set(sent) == {delivered["id"], failed["id"]}
    for item in (delivered, failed):
        request = sent[item["id"]]
        assert request.headers["Roster-Event-Sequence"] == "1"
        assert item["deliveries"] == []  # no webhook endpoint (contract §5.2)
        assert {k: v for k, v in item.items() if k not in ("delivery", "deliveries")} == request.json  # the payload
