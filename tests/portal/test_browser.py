"""The portal in a real browser: headless Chromium (Debian's package) driven by Playwright against
pytest-django's live server. One scenario walks what an admin does on day one, saving screenshots of
the main pages under test-artifacts/screenshots/ (git-ignored) for a person to look at.

Playwright's sync API runs an event loop in this thread, which makes Django refuse ORM calls from
it; DJANGO_ALLOW_ASYNC_UNSAFE is set for these tests only (the ORM calls here are plain sync code).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from django.conf import settings as django_settings
from playwright.sync_api import expect

from adminauth.models import AdminUser
from audit.models import AuditEntry
from directories.models import Directory
from tests.actors import TEST_ACTOR
from webhooks.services import drain_pool

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(django_settings.BASE_DIR) / "test-artifacts" / "screenshots"
EMAIL, PASSWORD = "admin@example.com", "a long enough passphrase"
FAIL_RED = "rgb(180, 35, 24)"  # --fail in static/portal/portal.css


class _FailingReceiver(BaseHTTPRequestHandler):
    """A webhook endpoint that is down: reads the event, answers 500."""

    received: list[bytes] = []

    def do_POST(self) -> None:
        self.received.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        body = b'{"error":"receiver exploded"}'
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def failing_receiver() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FailingReceiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hooks/roster"
    server.shutdown()
    server.server_close()


@pytest.fixture
def portal_env(live_server, settings, failing_receiver: str):  # noqa: ANN001, ANN201
    settings.EXTERNAL_URL = live_server.url
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True  # the receiver is on loopback
    AdminUser.objects.create_user(EMAIL, PASSWORD)
    return live_server.url, failing_receiver


def shot(page, name: str) -> None:  # noqa: ANN001
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def scim(endpoint: str, secret: str, method: str, path: str, **kwargs: object) -> requests.Response:
    return requests.request(
        method,
        endpoint + path,
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/scim+json"},
        timeout=10,
        **kwargs,
    )


def test_admin_day_one_in_a_real_browser(browser, portal_env) -> None:  # noqa: ANN001
    base, receiver_url = portal_env
    context = browser.new_context(viewport={"width": 1280, "height": 860}, base_url=base)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
    page = context.new_page()
    page.set_default_timeout(10_000)

    # Signed out: any page leads to sign-in.
    page.goto("/portal/audit")
    assert page.url.startswith(f"{base}/portal/login?next=/portal/audit")
    page.fill("#id_email", EMAIL)
    page.fill("#id_password", "wrong password")
    page.click("button[type=submit]")
    assert page.locator(".alert-error").inner_text() == "Email or password is incorrect."
    shot(page, "01-login-error")
    page.fill("#id_email", EMAIL.upper())
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/portal/audit")

    # Create a directory; a validation message lands next to its field first.
    page.click("text=Directories")
    shot(page, "02-directories-empty")
    page.click("text=New directory")
    page.fill("#id_tenant", "acme:eu")
    page.fill("#id_product", "crm")
    page.select_option("#id_type", "okta-scim-v2")
    page.fill("#id_webhook_url", receiver_url)
    page.click("text=Create directory")
    assert page.locator("#id_tenant-error").inner_text() == "tenant must not contain ':'."
    shot(page, "03-create-validation")
    page.fill("#id_tenant", "acme")
    page.fill("#id_name", "Acme Okta")
    page.click("text=Create directory")
    page.wait_for_selector("text=Directory created")
    directory = Directory.objects.get(tenant="acme")
    assert page.url == f"{base}/portal/directories/{directory.id}"

    # The SCIM endpoint and secret, ready to paste; the copy button really copies.
    endpoint = page.locator("#scim-endpoint").inner_text()
    assert endpoint == f"{base}/api/scim/v2.0/{directory.id}"
    assert not page.locator("#scim-secret").is_visible()  # hidden until asked for
    page.click("details.secret >> text=Show secret")
    old_secret = page.locator("#scim-secret").inner_text()
    assert old_secret == directory.scim_secret
    page.click("button[data-copy=scim-endpoint]")
    expect(page.locator("button[data-copy=scim-endpoint]")).to_have_text("Copied")  # set once the copy resolved
    assert page.evaluate("navigator.clipboard.readText()") == endpoint
    assert page.locator("details.setup[open] summary").inner_text().startswith("Okta")
    shot(page, "04-directory-detail")

    # Turn on the delivery log.
    page.click("#logging-toggle")
    page.wait_for_selector("text=Webhook deliveries are now logged.")
    assert page.locator("#logging-state").inner_text() == "On"
    directory.refresh_from_db()
    assert directory.log_webhook_events is True

    # The identity provider provisions a user over SCIM.
    created = scim(
        endpoint,
        old_secret,
        "POST",
        "/Users",
        json={
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
            "userName": "ann.lee@acme.test",
            "name": {"givenName": "Ann", "familyName": "Lee"},
            "emails": [{"value": "ann.lee@acme.test", "type": "work", "primary": True}],
            "active": True,
        },
    )
    assert created.status_code == 201, created.text
    user_id = created.json()["id"]

    page.click("nav.tabs >> text=Users")
    page.click("text=ann.lee@acme.test")
    page.wait_for_url(f"{base}/portal/directories/{directory.id}/users/{user_id}")
    assert "Ann" in page.locator("dl.facts").inner_text()
    assert '"givenName": "Ann"' in page.locator("#raw-json").inner_text()
    shot(page, "05-user-detail")

    # Its user.created webhook went to a receiver answering 500: a failed delivery, highlighted.
    assert drain_pool.drain(timeout=15)
    page.click("nav.tabs >> text=Webhook deliveries")
    failed = page.locator("li.delivery-failed")
    deadline = time.monotonic() + 10
    while failed.count() == 0 and time.monotonic() < deadline:  # the attempt is async; give it a moment
        time.sleep(0.3)
        page.reload()
    assert failed.count() == 1
    assert failed.evaluate("el => getComputedStyle(el).borderLeftColor") == FAIL_RED
    failed.locator("summary").click()
    body = failed.locator(".delivery-body").inner_text()
    assert "500" in body and "receiver exploded" in body and "user.created" in body and "ann.lee@acme.test" in body
    shot(page, "06-deliveries-failed")
    page.click("nav.segmented >> text=Failed")
    assert page.locator("li.delivery").count() == 1

    # Rotate the SCIM secret (after a confirmation step): the old one is refused at once.
    page.click("nav.tabs >> text=Overview")
    page.click("text=Rotate SCIM secret…")
    shot(page, "07-rotate-confirm")
    page.click("button.btn-danger")
    page.wait_for_selector("text=New SCIM secret created")
    page.click("details.secret >> text=Show secret")
    new_secret = page.locator("#scim-secret").inner_text()
    assert new_secret != old_secret
    refused = scim(endpoint, old_secret, "GET", "/Users")
    assert refused.status_code == 401
    assert scim(endpoint, new_secret, "GET", "/Users").json()["totalResults"] == 1

    # Everything the admin did is in the audit trail, once each.
    page.click("text=Audit trail")
    trail = page.locator("table.audit tbody").inner_text()
    for action in ("directory.created", "directory.webhook_logging_toggled", "directory.scim_secret_rotated"):
        assert trail.count(action) == 1, action
    assert AuditEntry.objects.filter(action="directory.created").count() == 1
    shot(page, "08-audit")

    page.click("text=Directories")
    assert "1" in page.locator("td[data-label=Users]").inner_text()
    shot(page, "09-directories")

    # The same pages on a phone.
    phone = browser.new_context(viewport={"width": 390, "height": 844}, base_url=base, is_mobile=True)
    phone.add_cookies(context.cookies())
    mobile = phone.new_page()
    for path, name in (
        ("/portal/", "10-phone-directories"),
        (f"/portal/directories/{directory.id}", "11-phone-directory"),
        (f"/portal/directories/{directory.id}/deliveries", "12-phone-deliveries"),
    ):
        mobile.goto(path)
        # Nothing may force sideways scrolling of the whole page on a phone.
        assert mobile.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), path
        shot(mobile, name)
    phone.close()

    # Sign out ends the session.
    page.click("text=Sign out")
    page.wait_for_selector("text=You are signed out.")
    page.goto("/portal/")
    assert "/portal/login" in page.url
    context.close()


def recorded_requests(directory: Directory) -> int:
    """The requests of the directory written to its health row, after writing what was recorded so far."""
    from directories.activity import recorder
    from directories.models import ScimHealth

    recorder.flush()
    health = ScimHealth.objects.filter(directory=directory).first()
    return sum(counts[0] for counts in health.hours.values()) if health else 0


def test_scim_health_and_the_request_log_in_a_real_browser(browser, portal_env) -> None:  # noqa: ANN001
    """A directory whose identity provider fails: its badge in the list (and the list filtered by it), the
    health panel, and the SCIM requests tab with the failures in red, one opened to its bodies. The
    screenshot scim-failing-directory.png is the one to show someone."""
    from directories.services import directory_create

    base, _receiver_url = portal_env
    healthy = directory_create(
        actor=TEST_ACTOR, data={"name": "Okta prod", "tenant": "acme", "product": "crm", "type": "okta-scim-v2"}
    )
    failing = directory_create(
        actor=TEST_ACTOR, data={"name": "Entra flaky", "tenant": "acme", "product": "hr", "type": "azure-scim-v2"}
    )
    okta, entra = (f"{base}/api/scim/v2.0/{d.id}" for d in (healthy, failing))
    assert scim(okta, healthy.scim_secret, "GET", "/Users").status_code == 200
    user = {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
        "userName": "bo@acme.test",
        "password": "s3cret!",
    }
    assert scim(entra, failing.scim_secret, "POST", "/Users", json=user).status_code == 201
    assert scim(entra, "an-expired-secret", "GET", "/Users").status_code == 401
    patch = {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [{"op": "replace"}]}
    for method, path, body in (
        ("POST", "/Users", user),  # 409 uniqueness: the IdP lost track of a user it made
        ("POST", "/Users", {"userName": 7}),
        ("GET", f"/Users/{failing.id}", None),
        ("PATCH", f"/Groups/{failing.id}", patch),
        ("GET", "/Users?filter=title%20zz%20%22x%22", None),
    ):
        assert scim(entra, failing.scim_secret, method, path, json=body).status_code >= 400, (method, path)
    # What the web process's background thread does every few seconds. The live server records each
    # request once its answer is sent, on the request's own thread: the last ones may not be in yet.
    deadline = time.monotonic() + 10
    while recorded_requests(healthy) < 1 or recorded_requests(failing) < 7:
        assert time.monotonic() < deadline, "the live server did not record every request"
        time.sleep(0.05)

    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=base)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto("/portal/login")
    page.fill("#id_email", EMAIL)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/portal/")

    # The list: each directory's health as a badge, failing in red, and a filter by state.
    row = page.locator("tr", has_text="Entra flaky")
    badge = row.locator("[data-health]")
    assert badge.inner_text() == "Failing"
    assert badge.evaluate("el => getComputedStyle(el).color") == FAIL_RED
    assert page.locator("tr", has_text="Okta prod").locator("[data-health]").inner_text() == "Healthy"
    shot(page, "13-directories-health")
    page.select_option("#health-filter", "failing")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(f"{base}/portal/?*health=failing*")
    assert page.locator("tbody tr").count() == 1 and "Entra flaky" in page.locator("tbody").inner_text()

    # The health panel, then the SCIM requests tab: six failures in red, newest first.
    page.click("text=Entra flaky")
    panel = page.locator("#health")
    assert panel.locator("[data-health]").inner_text() == "Failing"
    assert "7 requests, 6 failed, 1 with a wrong secret" in panel.inner_text()
    shot(page, "15-directory-health-panel")
    page.click("nav.tabs >> text=SCIM requests")
    entries = page.locator("li.scim-request")
    assert entries.count() == 6 and page.locator("li.scim-request.delivery-failed").count() == 6
    assert entries.first.evaluate("el => getComputedStyle(el).borderLeftColor") == FAIL_RED
    assert [entries.nth(i).get_attribute("data-status") for i in range(6)] == ["400", "400", "404", "400", "409", "401"]
    conflict = page.locator("li.scim-request[data-status='409']")
    conflict.locator("summary").click()
    opened = conflict.locator(".delivery-body").inner_text()
    assert "uniqueness" in opened and '"userName": "bo@acme.test"' in opened and '"password": "***"' in opened
    assert "s3cret!" not in page.content()
    shot(page, "scim-failing-directory")

    # On a phone, the tab reads without sideways scrolling.
    phone = browser.new_context(viewport={"width": 390, "height": 844}, base_url=base, is_mobile=True)
    phone.add_cookies(context.cookies())
    mobile = phone.new_page()
    mobile.goto(f"/portal/directories/{failing.id}/scim-requests")
    assert mobile.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    shot(mobile, "14-phone-scim-requests")
    phone.close()
    context.close()
