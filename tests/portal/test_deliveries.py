"""The webhook delivery log page: empty state, failures highlighted, filter, entry details."""

from __future__ import annotations

import json
import re
import uuid
from html import unescape

import pytest
from django.test import Client

from directories.models import Directory
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db


def delivery(directory: Directory, *, ok: bool, **fields: object) -> WebhookDelivery:
    payload = {"event": fields.pop("event_type", "user.created"), "data": {"email": "ann@acme.test"}}
    return WebhookDelivery.objects.create(
        directory=directory,
        event_id=uuid.uuid4(),
        event_type=payload["event"],
        endpoint="https://hooks.acme.test/r",
        payload=json.dumps(payload),
        delivered=ok,
        **fields,
    )


def test_logging_off_explains_itself_and_offers_to_turn_it_on(portal_client: Client, directory_a: Directory) -> None:
    html = portal_client.get(f"/portal/directories/{directory_a.id}/deliveries").content.decode()
    assert "Delivery logging is off" in html
    assert "Turn logging on" in html
    assert f'action="/portal/directories/{directory_a.id}/logging"' in html


def test_logging_on_without_entries_says_none_yet(portal_client: Client, directory_a: Directory) -> None:
    directory_a.log_webhook_events = True
    directory_a.save()
    html = portal_client.get(f"/portal/directories/{directory_a.id}/deliveries").content.decode()
    assert "Delivery logging is off" not in html
    assert "No deliveries logged yet" in html


def test_failed_deliveries_are_highlighted_and_filterable(portal_client: Client, directory_a: Directory) -> None:
    directory_a.log_webhook_events = True
    directory_a.save()
    ok = delivery(directory_a, ok=True, status_code=204, latency_ms=12)
    bad = delivery(
        directory_a,
        ok=False,
        status_code=500,
        latency_ms=33,
        error_class="HTTPStatus",
        error_message="HTTP 500",
        response_excerpt="boom <b>",
        event_type="user.updated",
    )
    url = f"/portal/directories/{directory_a.id}/deliveries"
    html = portal_client.get(url).content.decode()
    assert re.search(rf'class="delivery delivery-failed" data-delivery-id="{bad.id}"', html)
    assert re.search(rf'class="delivery delivery-ok" data-delivery-id="{ok.id}"', html)
    # The failure's details open in place: status, latency, error, response excerpt (escaped), payload.
    assert "HTTP 500" in html and "33 ms" in html and "HTTPStatus" in html and "boom &lt;b&gt;" in html
    assert '"email": "ann@acme.test"' in unescape(html)
    failed_only = portal_client.get(url, {"status": "failed"})
    assert [d["row"].id for d in failed_only.context["entries"]] == [bad.id]
    delivered_only = portal_client.get(url, {"status": "delivered"})
    assert [d["row"].id for d in delivered_only.context["entries"]] == [ok.id]
    assert len(portal_client.get(url, {"status": "bogus"}).context["entries"]) == 2


def test_delivery_detail_page_and_scoping(
    portal_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    bad = delivery(directory_a, ok=False, error_class="Timeout", error_message="no answer within 3 s")
    html = portal_client.get(f"/portal/directories/{directory_a.id}/deliveries/{bad.id}").content.decode()
    assert "Timeout" in html and "no answer within 3 s" in html and "— (no response)" in html
    assert portal_client.get(f"/portal/directories/{directory_b.id}/deliveries/{bad.id}").status_code == 404
    assert portal_client.get(f"/portal/directories/{directory_a.id}/deliveries/xyz").status_code == 404


def test_old_entries_stay_visible_after_logging_is_turned_off(portal_client: Client, directory_a: Directory) -> None:
    delivery(directory_a, ok=False, status_code=502)
    html = portal_client.get(f"/portal/directories/{directory_a.id}/deliveries").content.decode()
    assert "Delivery logging is off" in html and "except the older entries below" in html
    assert "delivery-failed" in html
