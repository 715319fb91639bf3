"""Portal personas: a signed-in admin's browser session, and helpers to fill a directory."""

from __future__ import annotations

import pytest
from django.test import Client

from adminauth.models import AdminUser
from core.comparison import comparison_key
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership

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
