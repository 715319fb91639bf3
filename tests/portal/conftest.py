"""Portal personas: a signed-in admin's browser session, and helpers to fill a directory."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from django.test import Client

from adminauth.models import AdminUser
from core.comparison import comparison_key
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

ADMIN_EMAIL = "ops@example.com"
ADMIN_PASSWORD = "correct horse battery staple"


@pytest.fixture
def admin_user(db) -> AdminUser:  # noqa: ANN001
    return AdminUser.objects.create_user(ADMIN_EMAIL, ADMIN_PASSWORD)


@pytest.fixture
def portal_client(admin_user: AdminUser) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def make_user(directory: Directory, user_name: str, **fields: object) -> DirectoryUser:
    raw = {"userName": user_name, "name": {"givenName": fields.get("first_name", "")}, **fields.pop("raw", {})}
    user = DirectoryUser.objects.create(
        directory=directory, user_name=user_name, user_name_key=comparison_key(user_name), raw=raw, **fields
    )
    user.raw["id"] = str(user.id)
    user.save(update_fields=["raw"])
    return user


def make_group(directory: Directory, name: str, members: list[DirectoryUser] = ()) -> DirectoryGroup:
    group = DirectoryGroup.objects.create(
        directory=directory, display_name=name, display_name_key=comparison_key(name), raw={"displayName": name}
    )
    for member in members:
        GroupMembership.objects.create(group=group, user=member)
    return group


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Headless Chromium (Debian's package) through Playwright, for the browser tests of this folder."""
    if not os.path.exists(CHROMIUM):
        message = f"{CHROMIUM} is missing (apt-get install chromium); scripts/test.sh installs it as root"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous
