"""SCIM secret rotation with a grace window (contract §4.1): the SCIM endpoint's side."""

from __future__ import annotations

import hmac
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, connections
from django.test import Client
from django.utils import timezone

from directories.models import Directory
from directories.services import directory_previous_scim_secret_revoke, directory_scim_secret_rotate
from tests.actors import TEST_ACTOR
from tests.scim.conftest import Scim

pytestmark = pytest.mark.django_db


def status(directory: Directory, secret: str) -> int:
    return Scim(directory, secret=secret).get("/Users")[0]


def test_with_grace_both_secrets_work_until_it_ends_then_only_the_new_one(scim_a: Scim) -> None:
    old = scim_a.directory.scim_secret
    directory = directory_scim_secret_rotate(actor=TEST_ACTOR, directory=scim_a.directory, grace_seconds=3600)
    new = directory.scim_secret
    assert new != old and status(directory, new) == status(directory, old) == 200
    # An hour later (the expiry moved into the past, as time would): the old one is refused at once.
    Directory.objects.filter(pk=directory.pk).update(previous_scim_secret_expires_at=timezone.now())
    assert status(directory, old) == 401 and status(directory, new) == 200


def test_without_grace_the_old_secret_and_any_kept_one_stop_at_once(scim_a: Scim) -> None:
    first = scim_a.directory.scim_secret
    directory = directory_scim_secret_rotate(actor=TEST_ACTOR, directory=scim_a.directory, grace_seconds=600)
    second = directory.scim_secret
    directory = directory_scim_secret_rotate(actor=TEST_ACTOR, directory=directory)
    assert status(directory, first) == status(directory, second) == 401
    assert status(directory, directory.scim_secret) == 200
    row = Directory.objects.get(pk=directory.pk)
    assert row.previous_scim_secret == "" and row.previous_scim_secret_expires_at is None


def test_a_second_rotation_with_grace_keeps_only_the_secret_it_replaced(scim_a: Scim) -> None:
    first = scim_a.directory.scim_secret
    directory = directory_scim_secret_rotate(actor=TEST_ACTOR, directory=scim_a.directory, grace_seconds=600)
    second = directory.scim_secret
    directory = directory_scim_secret_rotate(actor=TEST_ACTOR, directory=directory, grace_seconds=600)
    assert status(directory, first) == 401
    assert status(directory, second) == status(directory, directory.scim_secret) == 200


def test_revoking_the_previous_secret_stops_it_at_once(scim_a: Scim) -> None:
    old = scim_a.directory.scim_secret
    directory = directory_scim_secret_rotate(actor=TEST_ACTOR, directory=scim_a.directory, grace_seconds=604800)
    directory, revoked = directory_previous_scim_secret_revoke(actor=TEST_ACTOR, directory=directory)
    assert revoked and status(directory, old) == 401 and status(directory, directory.scim_secret) == 200
    assert (
        directory_previous_scim_secret_revoke(actor=TEST_ACTOR, directory=directory)[1] is False
    )  # nothing left to stop


def test_a_refused_previous_secret_gets_the_same_401_as_any_other(scim_a: Scim) -> None:
    old = scim_a.directory.scim_secret
    directory = directory_scim_secret_rotate(actor=TEST_ACTOR, directory=scim_a.directory, grace_seconds=60)
    Directory.objects.filter(pk=directory.pk).update(previous_scim_secret_expires_at=timezone.now())
    expired = Client(HTTP_AUTHORIZATION=f"Bearer {old}").get(f"/api/scim/v2.0/{directory.id}/Users")
    wrong = Client(HTTP_AUTHORIZATION="Bearer wrong").get(f"/api/scim/v2.0/{directory.id}/Users")
    assert expired.status_code == wrong.status_code == 401 and expired.content == wrong.content


def test_both_secrets_are_compared_on_every_request_whichever_matches(
    scim_a: Scim, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Timing says nothing about which secret matched: every request compares the presented secret with
    two of the same length (a random stand-in when there is no previous secret), in constant time."""
    from scim import authentication

    compared: list[int] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        compared.append(len(b))
        return real(a, b)

    monkeypatch.setattr(authentication.hmac, "compare_digest", counting)
    old = scim_a.directory.scim_secret
    assert status(scim_a.directory, old) == 200  # no previous secret yet
    directory = directory_scim_secret_rotate(actor=TEST_ACTOR, directory=scim_a.directory, grace_seconds=60)
    for secret in (old, directory.scim_secret, "wrong"):
        status(directory, secret)
    assert len(compared) == 8 and len(set(compared)) == 1


def test_the_previous_secret_is_encrypted_at_rest(scim_a: Scim, settings: Any) -> None:
    settings.DB_ENCRYPTION_KEY = "a-test-key-with-enough-entropy-0123456789"
    old = scim_a.directory.scim_secret
    directory = directory_scim_secret_rotate(actor=TEST_ACTOR, directory=scim_a.directory, grace_seconds=60)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT previous_scim_secret, scim_secret FROM directories_directory WHERE id = %s",
            [directory.id.hex if connection.vendor == "sqlite" else directory.id],
        )
        stored_previous, stored_current = cursor.fetchone()
    assert stored_previous.startswith("enc:v1:") and stored_current.startswith("enc:v1:")
    assert old not in stored_previous and status(directory, old) == 200


@pytest.mark.django_db(transaction=True)
def test_two_rotations_at_once_never_lose_the_secret_one_of_them_showed(directory_a: Directory) -> None:
    """Each rotation answers with the secret it made; with grace, the later one keeps the earlier one's
    as previous (the row is locked), so whichever an administrator pasted still works."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrent rotations need PostgreSQL's row locks (CI runs this)")
    barrier = threading.Barrier(2)
    made: list[str] = []

    def rotate() -> None:
        try:
            barrier.wait()
            copy = Directory.objects.get(pk=directory_a.pk)
            made.append(directory_scim_secret_rotate(actor=TEST_ACTOR, directory=copy, grace_seconds=600).scim_secret)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=rotate) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 2
    row = Directory.objects.get(pk=directory_a.pk)
    assert {row.scim_secret, row.previous_scim_secret} == set(made)
    assert all(status(row, secret) == 200 for secret in made)
    assert row.previous_scim_secret_expires_at > timezone.now() + timedelta(seconds=500)
