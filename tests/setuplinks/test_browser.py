"""The setup link in a real browser: headless Chromium (Debian's package) driven by Playwright against
pytest-django's live server, at a phone's width and a desktop's. An admin invites the IT admin from the
portal, the IT admin opens the link, picks a provider, generates the secret, the identity provider pushes
a user with it, and a reload shows the connection. Screenshots go to test-artifacts/screenshots/
(git-ignored): setup-phone-*.png and setup-desktop-*.png.

The browser fixture and its flags are the portal's (tests/portal/conftest.py), the SCIM helper too
(tests/portal/test_browser.py).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from adminauth.models import AdminUser
from audit.models import AuditEntry
from directories.services import directory_create
from setuplinks.models import SetupLink
from tests.actors import TEST_ACTOR
from tests.portal.conftest import browser  # noqa: F401 - the browser fixture
from tests.portal.test_browser import SCREENSHOTS, scim
from tests.scim.conftest import user_body

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
EMAIL, PASSWORD = "admin@example.com", "a long enough passphrase"
VIEWPORTS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 900}}
NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= window.innerWidth"
# WCAG 2.1 contrast of an element's text against the background it sits on (the first opaque one up).
CONTRAST = """el => {
  const rgb = s => s.match(/[\\d.]+/g).map(Number);
  const channel = x => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; };
  const lum = c => { const v = c.map(channel); return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
  let node = el, back = null;
  while (node) {
    const c = rgb(getComputedStyle(node).backgroundColor);
    if (c.length < 4 || c[3] > 0) { back = c; break; }
    node = node.parentElement;
  }
  back = back || [255, 255, 255];
  const a = lum(rgb(getComputedStyle(el).color)), b = lum(back.slice(0, 3));
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""


@pytest.fixture
def live(live_server, settings) -> str:  # noqa: ANN001
    settings.EXTERNAL_URL = live_server.url
    AdminUser.objects.create_user(EMAIL, PASSWORD)
    return live_server.url


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def _invite(context: Any, base: str, directory_id: str) -> str:
    """The admin's part: sign in, press "Invite IT admin", copy the link shown once."""
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(f"/portal/login?next=/portal/directories/{directory_id}")
    page.fill("#id_email", EMAIL)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/portal/directories/{directory_id}")
    page.click("#invite-submit")
    url = page.locator("#setup-link-url").inner_text()
    page.click("button[data-copy=setup-link-url]")
    expect(page.locator("button[data-copy=setup-link-url]")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == url
    page.close()
    return url


@pytest.mark.parametrize("width", ["phone", "desktop"])
def test_an_it_admin_connects_okta_then_entra_through_the_link(browser, live: str, width: str) -> None:  # noqa: ANN001, F811
    directory = directory_create(
        actor=TEST_ACTOR, data={"name": "Acme Okta", "tenant": "acme", "product": "crm", "type": "okta-scim-v2"}
    )
    mobile = width == "phone"
    context = browser.new_context(viewport=VIEWPORTS[width], base_url=live, is_mobile=mobile, has_touch=mobile)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live)
    url = _invite(context, live, str(directory.id))
    assert url.startswith(f"{live}/setup/")

    page = context.new_page()
    page.set_default_timeout(10_000)
    csp_errors: list[str] = []
    page.on("console", lambda m: csp_errors.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(url)
    assert page.evaluate("document.documentElement.lang") == "en"
    assert page.locator("h1").count() == 1
    # The provider of the directory's type is chosen; its base URL has no Entra flag.
    assert page.locator(".provider-choice a[aria-current=true]").inner_text() == "Okta"
    okta_url = page.locator("#scim-base-url").inner_text()
    assert okta_url == f"{live}/api/scim/v2.0/{directory.id}"
    assert page.locator("#state-words").inner_text() == "Waiting for the first request"
    assert page.evaluate(NO_SIDEWAYS_SCROLL), "the page scrolls sideways"
    shot(page, f"setup-{width}-1-opened")

    # Pick another provider: a plain link, the page reloads with its steps and its URL.
    page.click(".provider-choice >> text=Microsoft Entra ID")
    page.wait_for_url(re.compile(r".*\?provider=entra#provider$"))
    assert page.locator(".provider-choice a[aria-current=true]").inner_text() == "Microsoft Entra ID"
    assert page.locator("#scim-base-url").inner_text() == f"{okta_url}?aadOptscim062020"
    assert "Provision on demand" in page.locator(".provider-steps").inner_text()
    page.click("button[data-copy=scim-base-url]")
    expect(page.locator("button[data-copy=scim-base-url]")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == f"{okta_url}?aadOptscim062020"

    # Generate the secret: shown once, on the answer page, with a copy button.
    page.click("#generate-secret")
    page.wait_for_selector("#scim-secret")
    secret = page.locator("#scim-secret").inner_text()
    directory.refresh_from_db()
    assert secret == directory.scim_secret
    assert page.locator(".provider-choice a[aria-current=true]").inner_text() == "Microsoft Entra ID"
    page.click("button[data-copy=scim-secret]")
    expect(page.locator("button[data-copy=scim-secret]")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == secret
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    shot(page, f"setup-{width}-2-secret")

    # The identity provider pushes a user with that secret; a reload shows the connection.
    created = scim(okta_url, secret, "POST", "/Users", json=user_body("ann.lee@acme.test"))
    assert created.status_code == 201, created.text
    page.goto(f"{url}?provider=entra#status")
    assert page.locator("#state-words").inner_text() == "Connected"
    assert page.locator("#user-count").inner_text() == "1"
    assert page.locator("#last-request").inner_text() != "none yet"
    assert secret not in page.content()  # shown once only
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    shot(page, f"setup-{width}-3-connected")

    # Readable and usable by keyboard: labels, contrast, a visible focus.
    for selector in (".help", ".lead", ".provider-choice a", "#state-words", "#refresh"):
        ratio = page.locator(selector).first.evaluate(CONTRAST)
        assert ratio >= 4.5, (selector, ratio)
    page.goto(url)  # from the top of the page (not the #status fragment), the first Tab skips to the content
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    assert page.locator(".skip").bounding_box()["x"] >= 0  # shown while it has the focus
    page.focus("#generate-secret")
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
    assert csp_errors == [], csp_errors
    link = SetupLink.objects.get(directory=directory)
    assert link.opened_count >= 3
    assert AuditEntry.objects.filter(action="setup_link.opened", directory_id=directory.id).count() == 1
    context.close()


def test_the_page_works_without_javascript_and_refreshes_with_it(browser, live: str) -> None:  # noqa: ANN001, F811
    directory = directory_create(
        actor=TEST_ACTOR, data={"name": "JumpCloud", "tenant": "acme", "product": "hr", "type": "jumpcloud-scim-v2"}
    )
    directory.attribute_map = {"department": "title"}
    directory.role_map = {"Engineering": "developer", "IT": "admin"}
    directory.save()
    from tests.setuplinks.conftest import make_link

    _link, token = make_link(directory, allow_mapping=True, return_url="https://app.example.com/done")
    context = browser.new_context(viewport=VIEWPORTS["phone"], base_url=live, java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(f"/setup/{token}")
    assert page.locator(".provider-choice a[aria-current=true]").inner_text() == "JumpCloud"
    assert not page.locator("button.copy").first.is_visible()  # copy buttons need the script
    page.click(".provider-choice >> text=Other SCIM 2.0 client")
    assert "Authorization: Bearer" in page.locator(".provider-steps").inner_text()
    page.click("#generate-secret")
    assert page.locator("#scim-secret").inner_text()
    # The mapping form: a bad path is marked next to its field, a good one is saved.
    page.fill("#id_attr-department", "not a path!")
    page.click("#save-mapping")
    assert "SCIM attribute path" in page.locator("#id_attr-department-error").inner_text()
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    shot(page, "setup-phone-4-mapping-error")
    page.fill("#id_attr-department", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department")
    # The rows follow the map's order as stored (PostgreSQL's jsonb orders keys its own way): find IT's.
    row = page.locator("input[name^=group-][value=IT]").get_attribute("name").removeprefix("group-")
    page.select_option(f"#id_role-{row}", "developer")
    page.click("#save-mapping")
    page.wait_for_selector("#mapping-saved")
    directory.refresh_from_db()
    assert directory.role_map == {"Engineering": "developer", "IT": "developer"}
    assert page.locator("#done").get_attribute("href") == "https://app.example.com/done"
    context.close()

    # With the script, the status part refreshes in place, without a reload.
    context = browser.new_context(viewport=VIEWPORTS["desktop"], base_url=live)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.clock.install()
    page.goto(f"/setup/{token}")
    assert page.locator("#state-words").inner_text() == "Waiting for the first request"
    directory.refresh_from_db()
    base = page.locator("#scim-base-url").inner_text()
    assert scim(base, directory.scim_secret, "POST", "/Users", json=user_body("bo@acme.test")).status_code == 201
    page.clock.run_for(11_000)
    expect(page.locator("#state-words")).to_have_text("Connected")
    expect(page.locator("#user-count")).to_have_text("1")
    context.close()


def test_an_it_admin_sets_up_entra_with_oauth_through_the_link_at_a_phone_s_width(browser, live: str) -> None:  # noqa: ANN001, F811
    """With OAuth on and the SCIM secret off: the page says so, shows the token endpoint and client id to
    copy, generates a client secret once, and that secret gets a token that pushes a user."""
    import requests

    from directories.services import directory_update
    from tests.scim.conftest import oauth_on
    from tests.setuplinks.conftest import make_link

    directory = directory_create(
        actor=TEST_ACTOR, data={"name": "Acme Entra", "tenant": "acme", "product": "crm", "type": "azure-scim-v2"}
    )
    oauth_on(directory)
    directory_update(actor=TEST_ACTOR, directory=directory, data={"scim": {"static_secret_enabled": False}})
    _link, token = make_link(directory)
    context = browser.new_context(viewport=VIEWPORTS["phone"], base_url=live, is_mobile=True, has_touch=True)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(f"/setup/{token}")
    assert page.locator("#method-static").inner_text() == "SCIM secret (bearer token): off"
    assert page.locator("#method-oauth").inner_text() == "OAuth 2.0 client credentials: on"
    assert page.locator("#generate-secret").count() == 0 and page.locator("#static-off").is_visible()
    endpoint = page.locator("#oauth-token-endpoint").inner_text()
    assert endpoint == f"{live}/api/scim/v2.0/{directory.id}/oauth/token"
    page.click("button[data-copy=oauth-client-id]")
    expect(page.locator("button[data-copy=oauth-client-id]")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == str(directory.id)
    assert page.evaluate(NO_SIDEWAYS_SCROLL), "the page scrolls sideways"
    shot(page, "setup-phone-5-oauth")

    page.click("#generate-oauth-secret")
    page.wait_for_selector("#oauth-client-secret")
    secret = page.locator("#oauth-client-secret").inner_text()
    assert page.evaluate(NO_SIDEWAYS_SCROLL)
    shot(page, "setup-phone-6-oauth-secret")
    granted = requests.post(
        endpoint, data={"grant_type": "client_credentials"}, auth=(str(directory.id), secret), timeout=10
    )
    assert granted.status_code == 200, granted.text
    base = f"{live}/api/scim/v2.0/{directory.id}"
    assert (
        scim(base, granted.json()["access_token"], "POST", "/Users", json=user_body("oauth@acme.test")).status_code
        == 201
    )
    page.goto(f"/setup/{token}#status")
    assert page.locator("#state-words").inner_text() == "Connected" and secret not in page.content()
    context.close()
