"""Setup-link personas: links to directory A made through the service, and a browser-like client of the page
(it keeps cookies, and reads a form's CSRF token from the page as a browser does)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from audit.actors import Actor
from directories.models import Directory
from setuplinks.models import SetupLink
from setuplinks.services import SetupLinkInput, setup_link_create
from tests.adminauth.conftest import admin_client, admin_session, root  # noqa: F401 - the admin API's personas
from tests.portal.conftest import admin_user, portal_client  # noqa: F401 - the portal's

APP = Actor(name="api key test app (rk_test…)", via="rest-api")
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def make_link(directory: Directory, **asked: object) -> tuple[SetupLink, str]:
    """A link made as the REST API makes one; returns it and its token."""
    return setup_link_create(directory=directory, actor=APP, asked=SetupLinkInput(**asked))  # type: ignore[arg-type]


def expire(link: SetupLink) -> None:
    SetupLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))


def csrf_of(html: bytes | str) -> str:
    text = html.decode() if isinstance(html, bytes) else html
    found = _CSRF.search(text)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


@pytest.fixture
def browser() -> Client:
    """A client that, like a browser, must send the CSRF token of the page it posts from."""
    return Client(enforce_csrf_checks=True)


@pytest.fixture
def link_a(directory_a: Directory) -> tuple[SetupLink, str]:
    return make_link(directory_a)
