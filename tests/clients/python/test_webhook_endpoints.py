"""roster_client's webhook endpoints (Roster's contract §5.2) against a live Roster, and `verify_webhook` for
both signature formats with several secrets (the standard one also against the official library's signing)."""

from __future__ import annotations

import base64
import datetime
import json
import time

import pytest
from roster_client import BadRequestError, NotFoundError, Roster, WebhookVerificationError, verify_webhook
from standardwebhooks import Webhook

from tests.clients.conftest import TENANT, LiveRoster
from webhooks.signing import signature_header, standard_headers

BODY = json.dumps(
    {"id": "evt_1", "event": "user.created", "created_at": "2026-01-01T00:00:00.000Z", "data": {}}
).encode()


@pytest.fixture
def roster(live_roster: LiveRoster) -> Roster:
    with Roster(base_url=live_roster.url, api_key=live_roster.api_key) as client:
        yield client


@pytest.mark.django_db(transaction=True)
def test_create_list_get_update_rotate_test_deliveries_delete(roster: Roster) -> None:
    created = roster.webhook_endpoints.create(
        url="https://hooks.example.com/roster", events=["user.created"], tenant=TENANT, format="standard"
    )
    assert created.secret.startswith("whsec_") and created.format == "standard" and created.events == ["user.created"]
    other = roster.webhook_endpoints.create(url="https://hooks.example.com/all")
    assert other.events == ["*"] and other.tenant is None
    assert [e.id for e in roster.webhook_endpoints.list(tenant=TENANT)] == [created.id]
    assert len(list(roster.webhook_endpoints.list())) == 2
    got = roster.webhook_endpoints.get(created.id)
    assert got.url == created.url and not hasattr(got, "secret")
    updated = roster.webhook_endpoints.update(created.id, enabled=False, tenant=None)
    assert updated.enabled is False and updated.tenant is None
    rotated = roster.webhook_endpoints.rotate_secret(created.id, grace_seconds=60)
    assert rotated.secret != created.secret and rotated.previous_secret_expires_at
    outcome = roster.webhook_endpoints.test(created.id)  # example.com's answer or a refusal: never delivered here
    assert outcome.delivered in (True, False) and (outcome.error is None) == outcome.delivered
    assert list(roster.webhook_endpoints.deliveries(created.id, failed=True)) == []
    with pytest.raises(BadRequestError):
        roster.webhook_endpoints.create(url="https://hooks.example.com/x", events=["user.nope"])
    roster.webhook_endpoints.delete(created.id)
    with pytest.raises(NotFoundError):
        roster.webhook_endpoints.get(created.id)


def test_verify_webhook_tells_the_format_from_the_headers_and_takes_several_secrets() -> None:
    now = int(time.time())
    old, new = "roster-old-secret", "roster-new-secret"
    roster_headers = {"Roster-Signature": signature_header(BODY, old, now), "Content-Type": "application/json"}
    assert verify_webhook(body=BODY, headers=roster_headers, secret=[new, old]).id == "evt_1"
    with pytest.raises(WebhookVerificationError):
        verify_webhook(body=BODY, headers=roster_headers, secret=[new])

    key_old, key_new = bytes(range(32)), bytes(range(1, 33))
    s_old = "whsec_" + base64.b64encode(key_old).decode()
    s_new = "whsec_" + base64.b64encode(key_new).decode()
    standard = standard_headers(BODY, [s_new, s_old], "evt_1", now)
    for secrets in ([s_old], [s_new], s_new):
        assert verify_webhook(body=BODY, headers=standard, secret=secrets).event == "user.created"
    other = "whsec_" + base64.b64encode(b"x" * 32).decode()
    with pytest.raises(WebhookVerificationError):
        verify_webhook(body=BODY, headers=standard, secret=other)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(body=BODY + b" ", headers=standard, secret=s_new)
    stale = standard_headers(BODY, [s_new], "evt_1", now - 3600)
    with pytest.raises(WebhookVerificationError):
        verify_webhook(body=BODY, headers=stale, secret=s_new)

    # What the official library signs, the client verifies; the header names in any case.
    signed = Webhook(s_new).sign("evt_1", datetime.datetime.fromtimestamp(now, tz=datetime.UTC), BODY.decode())
    official = {"Webhook-Id": "evt_1", "Webhook-Timestamp": str(now), "Webhook-Signature": signed}
    assert verify_webhook(body=BODY, headers=official, secret=[other, s_new]).id == "evt_1"
