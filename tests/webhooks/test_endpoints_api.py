"""`/api/v1/webhook-endpoints…` (contract §5.2): create with the secret shown once, list with filters, get,
update, delete, rotate, test against a healthy and a failing receiver, the delivery log with failed=true."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEntry
from directories.services import directory_create
from tests.actors import TEST_ACTOR
from tests.adminauth.conftest import admin_session, root  # noqa: F401 - fixtures
from tests.webhooks.conftest import Receiver
from webhooks.models import EndpointDelivery, EventState, WebhookEvent
from webhooks.services.fanout import endpoint_deliveries_send, fanout

pytestmark = pytest.mark.django_db(transaction=True)
BASE = "/api/v1/webhook-endpoints"


def _send(client: Client, method: str, url: str, body: Any = None) -> Any:
    data = json.dumps(body) if body is not None else ""
    return getattr(client, method)(url, data, content_type="application/json")


def test_create_get_list_update_delete(api_client: Client, settings) -> None:  # noqa: ANN001
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"})
    created = _send(
        api_client,
        "post",
        BASE,
        {"url": "https://example.com/a", "events": ["user.created"], "tenant": "acme", "description": "audit"},
    )
    assert created.status_code == 201, created.content
    data = created.json()["data"]
    assert data["secret"].startswith("whsec_") and data["format"] == "roster" and data["enabled"] is True
    assert data["tenant"] == "acme" and data["product"] is None and data["directory_id"] is None
    endpoint_id = data["id"]
    other = _send(api_client, "post", BASE, {"url": "https://example.com/b", "directory_id": str(directory.id)})
    assert other.status_code == 201 and other.json()["data"]["events"] == ["*"]

    got = api_client.get(f"{BASE}/{endpoint_id}").json()["data"]
    assert "secret" not in got and got["description"] == "audit"
    listed = api_client.get(BASE).json()["data"]
    assert [e["id"] for e in listed] == [endpoint_id, other.json()["data"]["id"]]
    assert all("secret" not in e for e in listed)
    assert [e["id"] for e in api_client.get(f"{BASE}?tenant=acme").json()["data"]] == [endpoint_id]
    assert len(api_client.get(f"{BASE}?directory_id={directory.id}").json()["data"]) == 1
    assert api_client.get(f"{BASE}?directory_id=nope").status_code == 400

    patched = _send(api_client, "patch", f"{BASE}/{endpoint_id}", {"enabled": False})
    assert patched.status_code == 200 and patched.json()["data"]["enabled"] is False
    assert [e["id"] for e in api_client.get(f"{BASE}?enabled=false").json()["data"]] == [endpoint_id]
    bad = _send(api_client, "patch", f"{BASE}/{endpoint_id}", {"events": ["user.nope"]})
    assert bad.status_code == 400 and bad.json()["data"] is None and "user.nope" in bad.json()["error"]["message"]
    assert _send(api_client, "patch", f"{BASE}/{endpoint_id}", {"colour": 1}).status_code == 400

    assert api_client.delete(f"{BASE}/{endpoint_id}").status_code == 204
    assert api_client.get(f"{BASE}/{endpoint_id}").status_code == 404
    assert api_client.get(f"{BASE}/not-a-uuid").status_code == 404
    actions = set(AuditEntry.objects.filter(target_type="webhook_endpoint").values_list("action", flat=True))
    assert actions == {"webhook_endpoint.created", "webhook_endpoint.disabled", "webhook_endpoint.deleted"}
    entry = AuditEntry.objects.filter(action="webhook_endpoint.created").first()
    assert entry.details["via"] == "rest-api"


@pytest.mark.parametrize(
    "body",
    [
        {"url": "http://10.0.0.1/x"},
        {"url": "https://example.com/x", "events": ["nope"]},
        {"url": "https://example.com/x", "directory_id": "00000000-0000-0000-0000-000000000009"},
        {"url": "https://example.com/x", "format": "standard", "secret": "not-whsec"},
        [1, 2],
    ],
)
def test_bad_bodies_are_400(api_client: Client, body: Any) -> None:
    response = _send(api_client, "post", BASE, body)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["message"]


def test_rotate_shows_the_new_secret_once(api_client: Client) -> None:
    created = _send(api_client, "post", BASE, {"url": "https://example.com/a", "format": "standard"}).json()["data"]
    rotated = _send(api_client, "post", f"{BASE}/{created['id']}/secret", {"grace_seconds": 3600})
    assert rotated.status_code == 200, rotated.content
    data = rotated.json()["data"]
    assert data["secret"] != created["secret"] and data["secret"].startswith("whsec_")
    assert data["previous_secret_expires_at"] is not None
    no_body = api_client.post(f"{BASE}/{created['id']}/secret", "", content_type="application/json")
    assert no_body.status_code == 200 and no_body.json()["data"]["previous_secret_expires_at"] is None
    assert _send(api_client, "post", f"{BASE}/{created['id']}/secret", {"grace_seconds": -1}).status_code == 400


def test_test_route_reports_the_receivers_outcome(api_client: Client, receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    good = _send(api_client, "post", BASE, {"url": receiver.url("/ok")}).json()["data"]
    bad = _send(api_client, "post", BASE, {"url": receiver.url("/fail")}).json()["data"]
    ok = api_client.post(f"{BASE}/{good['id']}/test").json()["data"]
    assert ok["delivered"] is True and ok["status_code"] == 200 and ok["error"] is None and ok["latency_ms"] >= 0
    failed = api_client.post(f"{BASE}/{bad['id']}/test").json()["data"]
    assert failed["delivered"] is False and failed["status_code"] == 500 and failed["error"]
    assert [r.json["event"] for r in receiver.requests] == ["webhook.test", "webhook.test"]


def test_delivery_log_with_failed_filter(api_client: Client, receiver: Receiver, private_ok, monkeypatch) -> None:  # noqa: ANN001
    from webhooks.services import draining

    monkeypatch.setattr(draining, "kick", lambda directory_id, target: None)
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"})
    ok = _send(api_client, "post", BASE, {"url": receiver.url("/ok")}).json()["data"]
    bad = _send(api_client, "post", BASE, {"url": receiver.url("/fail")}).json()["data"]
    from webhooks.services import event_record

    event_record(directory=directory, event_type="user.created", data={"id": "u1"})
    fanout(directory_id=directory.id)
    endpoint_deliveries_send(directory_id=directory.id)
    assert EndpointDelivery.objects.filter(state=EventState.FAILED).count() == 1
    log = api_client.get(f"{BASE}/{bad['id']}/deliveries?failed=true").json()["data"]
    assert len(log) == 1 and log[0]["status"] == "failed" and log[0]["status_code"] == 500
    assert log[0]["event_id"] == str(WebhookEvent.objects.get(event_type="user.created").id)
    assert api_client.get(f"{BASE}/{ok['id']}/deliveries?failed=true").json()["data"] == []
    assert len(api_client.get(f"{BASE}/{ok['id']}/deliveries").json()["data"]) == 1


def test_feed_items_carry_deliveries_and_a_resend_can_name_one_endpoint(
    api_client: Client,
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from webhooks.services import draining, event_record

    monkeypatch.setattr(draining, "kick", lambda directory_id, target: None)
    directory = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"})
    bad = _send(api_client, "post", BASE, {"url": receiver.url("/fail")}).json()["data"]
    deleted_only = _send(api_client, "post", BASE, {"url": receiver.url("/ok"), "events": ["user.deleted"]}).json()[
        "data"
    ]
    other_tenant = _send(api_client, "post", BASE, {"url": receiver.url("/ok"), "tenant": "globex"}).json()["data"]
    event = event_record(directory=directory, event_type="user.created", data={"id": "u1"})
    fanout(directory_id=directory.id)
    endpoint_deliveries_send(directory_id=directory.id)

    feed = api_client.get(f"/api/v1/directory-sync/{directory.id}/changes").json()["data"]
    assert feed[0]["delivery"]["status"] == "dropped"  # no webhook of its own
    assert feed[0]["deliveries"] == [
        {
            "endpoint_id": bad["id"],
            "status": "failed",
            "status_code": 500,
            "attempted_at": feed[0]["deliveries"][0]["attempted_at"],
        }
    ]
    resend_url = f"/api/v1/directory-sync/{directory.id}/changes/resend"
    # Without endpoint_id: the directory's own webhook, which it has not.
    assert _send(api_client, "post", resend_url, {"event_ids": [event["id"]]}).status_code == 409
    for endpoint in (deleted_only, other_tenant):
        refused = _send(api_client, "post", resend_url, {"event_ids": [event["id"]], "endpoint_id": endpoint["id"]})
        assert refused.status_code == 400, refused.content
    unknown = _send(api_client, "post", resend_url, {"from": 1, "to": 1, "endpoint_id": str(directory.id)})
    assert unknown.status_code == 400
    queued = _send(api_client, "post", resend_url, {"from": 1, "to": 1, "endpoint_id": bad["id"]})
    assert queued.status_code == 202 and queued.json()["data"] == {"queued": 1}
    before = len(receiver.requests)
    endpoint_deliveries_send(directory_id=directory.id)
    assert [r.path for r in receiver.requests[before:]] == ["/fail"]
    delivery = EndpointDelivery.objects.get(endpoint_id=bad["id"])
    assert delivery.attempts == 2 and delivery.state == EventState.FAILED
    entry = AuditEntry.objects.filter(action="directory.events_resent").get()
    assert entry.details["endpoint_id"] == bad["id"] and entry.details["queued"] == 1


def test_the_admin_api_does_the_same_audited_with_the_admin(admin_session, receiver: Receiver, private_ok) -> None:  # noqa: ANN001, F811
    admin = admin_session.client()
    base = "/auditlog/admin/v1/webhook-endpoints"
    assert Client().get(base).status_code == 401
    created = _send(admin, "post", base, {"url": receiver.url("/ok"), "tenant": "acme", "format": "standard"})
    assert created.status_code == 201, created.content
    data = created.json()["data"]
    assert data["secret"].startswith("whsec_")
    assert [e["id"] for e in admin.get(f"{base}?tenant=acme").json()["data"]] == [data["id"]]
    assert admin.get(f"{base}?tenant=globex").json()["data"] == []
    assert _send(admin, "patch", f"{base}/{data['id']}", {"description": "ops"}).json()["data"]["description"] == "ops"
    rotated = _send(admin, "post", f"{base}/{data['id']}/secret", {"grace_seconds": 60}).json()["data"]
    assert rotated["secret"] != data["secret"]
    tested = admin.post(f"{base}/{data['id']}/test").json()["data"]
    assert tested["delivered"] is True and tested["status_code"] == 200
    assert admin.get(f"{base}/{data['id']}/deliveries?failed=true").json()["data"] == []
    assert admin.delete(f"{base}/{data['id']}").status_code == 204
    assert admin.get(f"{base}/{data['id']}").status_code == 404
    entries = AuditEntry.objects.filter(target_type="webhook_endpoint")
    assert entries.count() == 4 and all(e.details["via"] == "admin-api" and e.actor_email for e in entries)
