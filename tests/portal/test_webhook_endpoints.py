"""The portal's "Webhook endpoints" page (contract §5.2): list, create with the secret shown once, edit,
enable/disable, rotate, "Send test event" with its outcome, delete, failed deliveries; all audited."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEntry
from tests.actors import TEST_ACTOR
from webhooks.models import EndpointDelivery, WebhookEndpoint
from webhooks.services.endpoints import endpoint_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def failing_receiver(settings) -> Iterator[str]:  # noqa: ANN001
    """A local receiver that answers 503 to everything."""
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    server.shutdown()
    server.server_close()


def test_create_shows_the_secret_once_then_list_and_edit(portal_client: Client) -> None:
    assert "No webhook endpoints yet" in portal_client.get("/portal/webhook-endpoints").content.decode()
    bad = portal_client.post(
        "/portal/webhook-endpoints/new",
        {"url": "https://hooks.example.com/a", "events": "user.nope", "format": "roster"},
    )
    assert bad.status_code == 400 and "user.nope" in bad.content.decode()
    created = portal_client.post(
        "/portal/webhook-endpoints/new",
        {
            "url": "https://hooks.example.com/a",
            "events": "user.created, user.deleted",
            "tenant": "acme",
            "format": "roster",
            "enabled": "on",
        },
    )
    assert created.status_code == 200
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret in created.content.decode()
    assert (
        endpoint.events == ["user.created", "user.deleted"] and endpoint.tenant == "acme" and endpoint.product is None
    )
    listing = portal_client.get("/portal/webhook-endpoints").content.decode()
    assert "https://hooks.example.com/a" in listing and endpoint.secret not in listing
    page = portal_client.get(f"/portal/webhook-endpoints/{endpoint.id}").content.decode()
    assert endpoint.secret not in page and "Send test event" in page
    saved = portal_client.post(
        f"/portal/webhook-endpoints/{endpoint.id}",
        {"url": "https://hooks.example.com/b", "events": "*", "format": "roster", "enabled": "on"},
    )
    assert saved.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.url == "https://hooks.example.com/b" and endpoint.events == ["*"] and endpoint.tenant is None
    actions = list(
        AuditEntry.objects.filter(target_type="webhook_endpoint")
        .order_by("created_at", "id")
        .values_list("action", "details")
    )
    assert [a for a, _ in actions] == ["webhook_endpoint.created", "webhook_endpoint.updated"]
    assert all(d["via"] == "portal" for _, d in actions)


def test_disable_rotate_test_and_delete(portal_client: Client, failing_receiver: str) -> None:
    endpoint = endpoint_create(actor=TEST_ACTOR, data={"url": failing_receiver, "format": "standard"})
    old = endpoint.secret
    base = f"/portal/webhook-endpoints/{endpoint.id}"
    assert portal_client.post(f"{base}/enabled", {"value": "off"}).status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.enabled is False
    rotated = portal_client.post(f"{base}/secret", {"grace_seconds": "600"})
    endpoint.refresh_from_db()
    assert endpoint.secret != old and endpoint.secret in rotated.content.decode()
    assert endpoint.previous_secret == old
    tested = portal_client.post(f"{base}/test", follow=True).content.decode()
    assert "Test event not delivered" in tested and "HTTP 503" in tested
    assert not EndpointDelivery.objects.exists()
    assert portal_client.post(f"{base}/delete").status_code == 302
    assert portal_client.get(base).status_code == 404
    assert "No webhook endpoints yet" in portal_client.get("/portal/webhook-endpoints").content.decode()
