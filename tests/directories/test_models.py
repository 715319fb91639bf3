from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from core.comparison import comparison_key
from directories.models import DirectoryGroup, DirectoryUser, GroupMembership
from tests.actors import TEST_ACTOR

pytestmark = pytest.mark.django_db


def _user(directory, name: str) -> DirectoryUser:  # noqa: ANN001
    return DirectoryUser.objects.create(directory=directory, user_name=name, user_name_key=comparison_key(name))


def test_user_name_is_unique_per_directory_ignoring_case(directory_a) -> None:  # noqa: ANN001
    _user(directory_a, "Ann@Example.com")
    with pytest.raises(IntegrityError), transaction.atomic():
        _user(directory_a, "ann@example.COM")
    assert DirectoryUser.objects.filter(directory=directory_a).count() == 1


def test_same_user_name_is_allowed_in_two_directories(directory_a, directory_b) -> None:  # noqa: ANN001
    _user(directory_a, "ann@example.com")
    _user(directory_b, "ann@example.com")
    assert DirectoryUser.objects.count() == 2


def test_membership_goes_with_either_side(directory_a) -> None:  # noqa: ANN001
    user = _user(directory_a, "ann")
    group = DirectoryGroup.objects.create(directory=directory_a, display_name="Eng", display_name_key="eng")
    GroupMembership.objects.create(group=group, user=user)
    with pytest.raises(IntegrityError), transaction.atomic():
        GroupMembership.objects.create(group=group, user=user)
    user.delete()
    assert GroupMembership.objects.count() == 0


def test_secrets_are_sealed_at_rest_when_a_key_is_set(settings, db) -> None:  # noqa: ANN001
    from django.db import connection

    from directories.services import directory_create

    settings.DB_ENCRYPTION_KEY = "a-test-encryption-key-with-entropy"
    directory = directory_create(
        actor=TEST_ACTOR, data={"tenant": "t", "product": "p", "webhook_url": "https://example.com/h"}
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT scim_secret, webhook_secret FROM directories_directory WHERE id = %s", [directory.id.hex]
        )
        row = cursor.fetchone() if connection.vendor == "sqlite" else None
    if row is None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT scim_secret, webhook_secret FROM directories_directory WHERE id = %s", [directory.id]
            )
            row = cursor.fetchone()
    assert row[0].startswith("enc:v1:") and directory.scim_secret not in row[0]
    assert row[1].startswith("enc:v1:")
    from directories.models import Directory

    assert Directory.objects.get(id=directory.id).scim_secret == directory.scim_secret
