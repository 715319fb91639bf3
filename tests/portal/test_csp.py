"""Every portal page under its Content-Security-Policy (portal/middleware.py) in a real browser: headless
Chromium visits each route of portal/urls.py (a route added later is visited too, or this test asks for a
value of its new argument), signs in, copies a value with the page's script and saves a form, and no
policy violation is reported, neither as a `securitypolicyviolation` event nor on the console. A control
first shows that a violation would be seen."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from adminauth.models import AdminUser
from directories.models import Directory, ScimLogEntry
from directories.services import directory_create
from portal.urls import urlpatterns
from tests.actors import TEST_ACTOR
from tests.portal.conftest import make_group, make_user
from webhooks.models import WebhookDelivery
from webhooks.services.endpoints import endpoint_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EMAIL, PASSWORD = "csp@example.com", "a long enough passphrase"
# Run in every page before its own scripts (through the browser's protocol, which the policy does not
# govern): each violation the page reports is kept for the test to read.
LISTEN = (
    "window.__violations = [];"
    "document.addEventListener('securitypolicyviolation', function (e) {"
    "  window.__violations.push(e.violatedDirective + ' ' + e.blockedURI);"
    "});"
)


def filled_directory() -> tuple[Directory, dict[str, str]]:
    """A directory with something on every page, and the value of each route argument."""
    directory = directory_create(
        actor=TEST_ACTOR, data={"name": "Acme Okta", "tenant": "acme", "product": "crm", "type": "okta-scim-v2"}
    )
    user = make_user(directory, "ann@acme.test", first_name="Ann")
    group = make_group(directory, "Engineering", [user])
    delivery = WebhookDelivery.objects.create(
        directory=directory,
        event_id=uuid.uuid4(),
        event_type="user.created",
        endpoint="https://hooks.acme.test/r",
        payload=json.dumps({"event": "user.created", "data": {"email": "ann@acme.test"}}),
        delivered=False,
    )
    entry = ScimLogEntry.objects.create(
        directory=directory,
        at=timezone.now(),
        method="POST",
        path="/Users",
        status=400,
        scim_type="invalidValue",
        detail="userName is required.",
        latency_ms=3,
        request_id="csp-test",
        request_body='{"schemas": []}',
        response_body='{"status": "400"}',
    )
    values = {
        "directory_id": str(directory.id),
        "user_id": str(user.id),
        "group_id": str(group.id),
        "delivery_id": str(delivery.id),
        "entry_id": str(entry.id),
        "link_id": str(uuid.uuid4()),  # its one route is a POST: the GET answers 405 under the policy
        "secret_id": str(uuid.uuid4()),  # the same: revoking an OAuth secret is a POST
        "endpoint_id": str(
            endpoint_create(actor=TEST_ACTOR, data={"url": "https://hooks.acme.test/all", "tenant": "acme"}).id
        ),
    }
    return directory, values


def portal_paths(values: dict[str, str]) -> list[str]:
    """The path of every route of the portal, its arguments filled from `values`."""
    paths = []
    for route in urlpatterns:
        names = list(route.pattern.converters)
        missing = [name for name in names if name not in values]
        assert not missing, f"portal:{route.name} takes {missing}: give this test a value for it"
        paths.append(reverse(f"portal:{route.name}", kwargs={name: values[name] for name in names}))
    return paths


class Watch:
    """What a browser page reports about the policy: events and console lines."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.console: list[str] = []
        page.add_init_script(LISTEN)
        page.on("console", lambda message: self.console.append(message.text))

    def violations(self) -> list[str]:
        events = self.page.evaluate("window.__violations || []")
        lines = [text for text in self.console if "Content Security Policy" in text or "Refused to" in text]
        return [*events, *lines]


def test_no_portal_page_breaks_its_content_security_policy(browser: Any, live_server: Any, settings: Any) -> None:
    settings.EXTERNAL_URL = live_server.url
    AdminUser.objects.create_user(EMAIL, PASSWORD)
    directory, values = filled_directory()
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(10_000)
    watch = Watch(page)

    # The control: what the policy forbids is reported, so silence below means something.
    page.goto("/portal/login")
    page.evaluate("var s = document.createElement('style'); s.textContent = 'body {}'; document.head.appendChild(s)")
    page.wait_for_function("window.__violations.length > 0")
    assert "style-src" in watch.violations()[0]
    page.reload()
    watch.console.clear()

    # Signed out, then signed in through the form (form-action 'self').
    response = page.goto("/portal/login")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "unsafe-inline" not in policy
    page.fill("#id_email", EMAIL)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/portal/")
    assert watch.violations() == []

    visited: dict[str, int] = {}
    paths = portal_paths(values)
    logout = reverse("portal:logout")
    for path in [p for p in paths if p != logout] + ["/portal/?health=throttled", "/portal/directories/not-a-uuid"]:
        # An action's route takes POST only: its 405 has no page to show (Chromium does not render an empty
        # error answer), only the header to check.
        probe = page.request.get(path, max_redirects=0)
        assert probe.headers.get("content-security-policy") == policy, path
        visited[path] = probe.status
        if probe.status == 405:
            continue
        if probe.headers.get("content-disposition", "").startswith("attachment"):
            continue  # a download (the history's CSV): no page to render, only the header checked above
        response = page.goto(path)
        assert response is not None and response.headers.get("content-security-policy") == policy, path
        assert watch.violations() == [], (path, watch.violations())
    assert set(visited.values()) <= {200, 302, 404, 405}, visited  # 302: the sign-in page, signed in
    assert sum(status == 200 for status in visited.values()) >= 15, visited

    # The page's own script (the copy buttons) and a form saved and answered with a redirect.
    page.goto(reverse("portal:directory", kwargs={"directory_id": values["directory_id"]}))
    page.click("button[data-copy=scim-endpoint]")
    page.goto(reverse("portal:directory_edit", kwargs={"directory_id": values["directory_id"]}))
    page.fill("#id_scim_rate_limit", "2400")
    page.click("text=Save")
    page.wait_for_selector("text=Directory saved")
    directory.refresh_from_db()
    assert directory.scim_rate_limit == 2400
    page.click("form.signout button[type=submit]")  # the last route: signing out
    page.wait_for_url(f"{live_server.url}/portal/login")
    assert watch.violations() == []
    context.close()
