"""Resending from the portal (contract §5.1): a "Resend" button on each failed delivery, and "resend from
sequence n"; each posts with CSRF, goes through the audited service and says what happened."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from django.test import Client

from adminauth.models import AdminUser
from audit.models import AuditEntry
from directories.models import Directory
from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.webhooks.feedrows import feed_events
from webhooks.models import EventState, WebhookDelivery, WebhookEvent

pytestmark = pytest.mark.django_db

F = EventState.FAILED


@pytest.fixture
def hooked(settings) -> Directory:  # noqa: ANN001
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    return directory_create(
        actor=TEST_ACTOR,
        data={
            "tenant": "acme",
            "product": "crm",
            "name": "Acme",
            "webhook_url": "http://127.0.0.1:9/hook",
            "log_webhook_events": True,
        },
    )


def _logged(directory: Directory, event: WebhookEvent, *, ok: bool) -> WebhookDelivery:
    return WebhookDelivery.objects.create(
        directory=directory,
        event_id=event.id,
        event_type=event.event_type,
        endpoint=directory.webhook_url,
        payload=event.body,
        delivered=ok,
        status_code=200 if ok else 500,
        error_class="" if ok else "HTTPStatus",
        sequence=event.sequence,
    )


def _messages(response) -> list[str]:  # noqa: ANN001
    return [str(m) for m in response.context["messages"]]


def _queued(directory: Directory) -> list[int]:
    return sorted(
        WebhookEvent.objects.filter(directory_id=directory.id, state=EventState.PENDING, resend=True).values_list(
            "sequence", flat=True
        )
    )


def test_a_failed_delivery_has_a_resend_button_and_a_delivered_one_has_none(
    portal_client: Client, hooked: Directory
) -> None:
    ok_event, bad_event = feed_events(hooked, [EventState.DELIVERED, F])
    ok, bad = _logged(hooked, ok_event, ok=True), _logged(hooked, bad_event, ok=False)
    html = portal_client.get(f"/portal/directories/{hooked.id}/deliveries").content.decode()
    forms = re.findall(
        r'<form method="post" action="/portal/directories/[^"]+/changes/resend" class="resend">(.*?)</form>', html, re.S
    )
    assert len(forms) == 1
    assert f'name="event_id" value="{bad.event_id}"' in forms[0] and "csrfmiddlewaretoken" in forms[0]
    assert f'value="{ok.event_id}"' not in html
    assert "Resend from sequence" in html and "the newest is 2" in html
    detail = portal_client.get(f"/portal/directories/{hooked.id}/deliveries/{bad.id}").content.decode()
    assert f'name="event_id" value="{bad.event_id}"' in detail


def test_the_resend_button_queues_that_event_and_says_so(
    portal_client: Client, hooked: Directory, admin_user: AdminUser
) -> None:
    _ok_event, bad_event = feed_events(hooked, [EventState.DELIVERED, F])
    url = f"/portal/directories/{hooked.id}/changes/resend"
    response = portal_client.post(url, {"event_id": str(bad_event.id)}, follow=True)
    assert response.redirect_chain == [(f"/portal/directories/{hooked.id}/deliveries", 302)]
    assert _messages(response) == ["Queued 1 event(s) for one more attempt."]
    assert _queued(hooked) == [2]
    entry = AuditEntry.objects.get(action="directory.events_resent")
    assert entry.actor == admin_user and entry.details["via"] == "portal"
    assert entry.details["event_ids"] == [str(bad_event.id)]
    # Pressed again before the attempt: nothing more to queue, and it says why.
    again = portal_client.post(url, {"event_id": str(bad_event.id)}, follow=True)
    assert _messages(again)[0].startswith("Queued 0 event(s) for one more attempt. Events still waiting")


def test_resend_from_sequence_runs_to_the_newest_event(portal_client: Client, hooked: Directory) -> None:
    feed_events(hooked, [F, F, F, EventState.DELIVERED])
    response = portal_client.post(f"/portal/directories/{hooked.id}/changes/resend", {"from": "2"}, follow=True)
    assert _messages(response) == ["Queued 3 event(s) from sequence 2 to 4 for one more attempt."]
    assert _queued(hooked) == [2, 3, 4]
    entry = AuditEntry.objects.get(action="directory.events_resent")
    assert (entry.details["from"], entry.details["to"]) == (2, 4)


@pytest.mark.parametrize(
    ("posted", "said"),
    [
        ({"from": "0"}, "from must be an integer"),
        ({"from": "two"}, "from must be an integer"),
        ({"from": ""}, "from must be an integer"),
        ({"event_id": "not-an-id"}, "event_ids must hold event ids"),
        ({"event_id": str(uuid.uuid4())}, "Not events of this directory"),
    ],
)
def test_bad_input_shows_the_services_message_and_queues_nothing(
    portal_client: Client, hooked: Directory, posted: dict, said: str
) -> None:
    feed_events(hooked, [F])
    response = portal_client.post(f"/portal/directories/{hooked.id}/changes/resend", posted, follow=True)
    [message] = _messages(response)
    assert message.startswith("Nothing was resent: ") and said in message
    assert _queued(hooked) == []
    assert not AuditEntry.objects.filter(action="directory.events_resent").exists()


def test_a_directory_that_cannot_resend_says_why_on_the_page_and_on_post(
    portal_client: Client, hooked: Directory
) -> None:
    feed_events(hooked, [F])
    Directory.objects.filter(pk=hooked.pk).update(deactivated=True)
    html = portal_client.get(f"/portal/directories/{hooked.id}/deliveries").content.decode()
    assert "The directory is deactivated" in html
    response = portal_client.post(f"/portal/directories/{hooked.id}/changes/resend", {"from": "1"}, follow=True)
    assert _messages(response) == [
        "Nothing was resent: The directory is deactivated: activate it before resending its events."
    ]
    assert _queued(hooked) == []


def test_resend_needs_a_signed_in_admin_csrf_and_post(hooked: Directory, admin_user: AdminUser) -> None:
    feed_events(hooked, [F])
    url = f"/portal/directories/{hooked.id}/changes/resend"
    anonymous = Client().post(url, {"from": "1"})
    assert anonymous.status_code == 302 and "/portal/login" in anonymous["Location"]
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin_user)
    assert strict.post(url, {"from": "1"}).status_code == 403
    signed_in = Client()
    signed_in.force_login(admin_user)
    assert signed_in.get(url).status_code == 405
    assert signed_in.post(f"/portal/directories/{uuid.uuid4()}/changes/resend", {"from": "1"}).status_code == 404
    assert _queued(hooked) == []
    assert json.loads(WebhookEvent.objects.get(directory_id=hooked.id).body)["sequence"] == 1
