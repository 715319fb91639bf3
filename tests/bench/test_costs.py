"""bench.costs: the credential check alone, static secret and access token, with the lookup taken out."""

from __future__ import annotations

import pytest

import scim.authentication as authentication
from bench.costs import credential_checks
from directories.models import Directory
from directories.services import directory_scim_oauth_secret_rotate
from tests.actors import TEST_ACTOR

pytestmark = pytest.mark.django_db


def test_the_credential_checks_time_both_credentials_and_put_the_lookup_back(directory_a: Directory) -> None:
    lookup = authentication.directory_get
    directory, _secret, _first = directory_scim_oauth_secret_rotate(actor=TEST_ACTOR, directory=directory_a)
    checks = credential_checks(directory, rounds=2, calls=50)
    assert set(checks) == {"static secret", "access token", "access token, first use"}
    assert all(v > 0 for v in checks.values())
    assert authentication.directory_get is lookup


@pytest.mark.django_db(transaction=True)  # a request closes the connection when it finishes, as in production
def test_the_harness_drives_the_production_application(settings) -> None:  # noqa: ANN001
    """Harness.call hands requests to what granian serves (an answer that is a list, or Django's with close())."""
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True  # its directory's webhook goes to 127.0.0.1
    from bench.costs import Harness

    harness = Harness("baseline")
    try:
        assert harness.create_user()[0].startswith("201")
        assert harness.list_page()[0].startswith("200")
        assert harness.get_404()[0].startswith("404")
        assert harness.healthz()[0].startswith("200")  # not SCIM: Django's handler, whose answer has close()
    finally:
        harness.restore()
