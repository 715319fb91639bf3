"""The setup page and OAuth client credentials (contract §3.1, §4.3): it shows which ways in the directory
takes, and with OAuth on the token endpoint and the client id, never a client secret but one it just
generated (while OAuth is on; the first one is the application's to make); with the SCIM secret off it
generates no SCIM secret."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEntry
from directories.models import Directory
from directories.services import directory_update
from tests.actors import TEST_ACTOR
from tests.scim.conftest import OAuth, Scim, oauth_on
from tests.setuplinks.conftest import csrf_of, make_link

pytestmark = pytest.mark.django_db

SHOWN = re.compile(r'<code id="oauth-client-secret" class="value">([^<]+)</code>')


def generate(token: str, what: str = "oauth-secret", provider: str = "") -> Any:
    """Post the page's form for `what` (oauth-secret or secret) as a browser does, CSRF token included."""
    browser = Client(enforce_csrf_checks=True)
    page = browser.get(f"/setup/{token}")
    return browser.post(f"/setup/{token}/{what}", {"csrfmiddlewaretoken": csrf_of(page.content), "provider": provider})


def test_without_oauth_the_page_says_it_is_off_and_offers_no_client_secret(directory_a: Directory) -> None:
    _link, token = make_link(directory_a)
    html = Client().get(f"/setup/{token}").content.decode()
    assert '<li id="method-static">SCIM secret (bearer token): <strong>on</strong></li>' in html
    assert '<li id="method-oauth">OAuth 2.0 client credentials: <strong>off</strong></li>' in html
    assert "oauth/token" not in html and 'id="generate-oauth-secret"' not in html
    assert 'id="generate-secret"' in html
    # The route refuses too: the first client secret is the application's to make.
    response = generate(token)
    assert response.status_code == 409 and "OAuth is not on" in response.content.decode()
    assert not Directory.objects.get(pk=directory_a.pk).scim_oauth_enabled


def test_with_oauth_on_the_page_shows_the_endpoint_and_client_id_but_no_secret(directory_a: Directory) -> None:
    oauth = oauth_on(directory_a)
    _link, token = make_link(directory_a)
    html = Client().get(f"/setup/{token}?provider=entra").content.decode()
    assert '<li id="method-oauth">OAuth 2.0 client credentials: <strong>on</strong></li>' in html
    assert f'<code id="oauth-client-id" class="value">{directory_a.id}</code>' in html
    assert f"/api/scim/v2.0/{directory_a.id}/oauth/token</code>" in html
    assert "OAuth2 Client Credentials Grant" in html and "Client Identifier" in html  # Entra's own words
    assert oauth.secret not in html and directory_a.scim_secret not in html
    assert 'id="generate-oauth-secret"' in html


def test_a_client_secret_generated_through_the_link_is_shown_once_and_ends_earlier_tokens(
    directory_a: Directory, directory_b: Directory
) -> None:
    oauth = oauth_on(directory_a)
    other = oauth_on(directory_b)
    earlier = oauth.token()
    link, token = make_link(directory_a)
    response = generate(token, provider="entra")
    assert response.status_code == 200
    secret = SHOWN.search(response.content.decode()).group(1)
    assert secret != oauth.secret
    row = Directory.objects.get(pk=directory_a.pk)
    assert Scim(row, secret=earlier).get("/Users")[0] == 401
    assert Scim(row, secret=OAuth(row, secret).token()).get("/Users")[0] == 200
    assert secret not in Client().get(f"/setup/{token}").content.decode()  # never shown again
    assert other.token()  # the other directory's client is untouched
    [entry] = AuditEntry.objects.filter(action="directory.scim_oauth_secret_rotated")
    assert entry.details["actor"] == f"setup-link:{link.id}" and entry.details["via"] == "setup-link"
    assert entry.directory_id == directory_a.id and secret not in str(entry.details)


def test_with_the_scim_secret_off_the_page_offers_only_oauth(directory_a: Directory) -> None:
    oauth_on(directory_a)
    directory_update(actor=TEST_ACTOR, directory=directory_a, data={"scim": {"static_secret_enabled": False}})
    _link, token = make_link(directory_a)
    html = Client().get(f"/setup/{token}?provider=entra").content.decode()
    assert '<li id="method-static">SCIM secret (bearer token): <strong>off</strong></li>' in html
    assert 'id="static-off"' in html and 'id="generate-secret"' not in html and "Secret Token" not in html
    old = Directory.objects.get(pk=directory_a.pk).scim_secret
    response = generate(token, what="secret")
    assert response.status_code == 409 and "turned off" in response.content.decode()
    assert Directory.objects.get(pk=directory_a.pk).scim_secret == old
    assert not AuditEntry.objects.filter(action="directory.scim_secret_rotated").exists()


def test_the_client_secret_is_generated_by_post_with_csrf_only(directory_a: Directory) -> None:
    oauth = oauth_on(directory_a)
    _link, token = make_link(directory_a)
    assert Client().get(f"/setup/{token}/oauth-secret").status_code == 405
    assert Client(enforce_csrf_checks=True).post(f"/setup/{token}/oauth-secret").status_code == 403
    assert oauth.token()  # unchanged: the secret still gets a token


def test_an_unknown_or_revoked_link_cannot_generate_a_client_secret(directory_a: Directory) -> None:
    from setuplinks.services import setup_link_revoke
    from tests.setuplinks.conftest import APP

    oauth = oauth_on(directory_a)
    link, token = make_link(directory_a)
    browser = Client(enforce_csrf_checks=True)
    csrf = csrf_of(browser.get(f"/setup/{token}").content)
    setup_link_revoke(link=link, actor=APP)
    assert browser.post(f"/setup/{token}/oauth-secret", {"csrfmiddlewaretoken": csrf}).status_code == 404
    assert browser.post(f"/setup/{'z' * 43}/oauth-secret", {"csrfmiddlewaretoken": csrf}).status_code == 404
    assert oauth.token()
