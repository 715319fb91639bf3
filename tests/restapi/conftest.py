"""Builders for the REST API tests: users, groups and memberships written straight to the models,
since the SCIM server that normally writes them is tested on its own."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from core.comparison import comparison_key
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from directories.services import api_key_create
from tests.actors import TEST_ACTOR, scene_trail_forget


def make_user(directory: Directory, user_name: str, **fields: Any) -> DirectoryUser:
    user = DirectoryUser(directory=directory, user_name=user_name, user_name_key=comparison_key(user_name), **fields)
    user.raw = {"id": str(user.id), "userName": user_name, "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"]}
    user.save()
    return user


def make_group(directory: Directory, name: str, members: list[DirectoryUser] = ()) -> DirectoryGroup:  # type: ignore[assignment]
    group = DirectoryGroup(directory=directory, display_name=name, display_name_key=comparison_key(name))
    group.raw = {"id": str(group.id), "displayName": name}
    group.save()
    for user in members:
        GroupMembership.objects.create(group=group, user=user)
    return group


@pytest.fixture
def db_key(db) -> str:  # noqa: ANN001
    """A key made the way `manage.py apikey create` makes it."""
    key = api_key_create(actor=TEST_ACTOR, name="test app")[1]
    scene_trail_forget()
    return key


@pytest.fixture
def anon_client() -> Client:
    return Client()
