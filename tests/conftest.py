"""Shared personas: directory A (tenant acme) and directory B (tenant globex), with their clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client

from directories.models import Directory
from directories.services import directory_create

API_KEY = "test-env-api-key"


@pytest.fixture(autouse=True)
def _health_counters_per_test() -> Iterator[None]:
    """Each web process keeps SCIM health counters in memory until they are flushed
    (directories.activity.recorder): a test starts without another test's, which name its directories, and
    leaves none behind for the flush at exit, which runs after the test database is gone."""
    from directories.activity import recorder

    recorder.discard()
    yield
    recorder.discard()


@pytest.fixture
def api_client() -> Client:
    """A REST client carrying a valid API key."""
    return Client(HTTP_AUTHORIZATION=f"Bearer {API_KEY}")


@pytest.fixture
def directory_a(db) -> Directory:  # noqa: ANN001
    return directory_create(data={"name": "Acme Okta", "tenant": "acme", "product": "crm", "type": "okta-scim-v2"})


@pytest.fixture
def directory_b(db) -> Directory:  # noqa: ANN001
    return directory_create(
        data={"name": "Globex Entra", "tenant": "globex", "product": "crm", "type": "azure-scim-v2"}
    )


@pytest.fixture
def scim_client_a(directory_a: Directory) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {directory_a.scim_secret}")


@pytest.fixture
def scim_client_b(directory_b: Directory) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {directory_b.scim_secret}")


# --- the production path under test -------------------------------------------------------------
# Production runs every SCIM and webhook request in autocommit (ATOMIC_REQUESTS is off), which is
# what switches on PostgreSQL's single-statement writes. pytest-django's default wraps each test in a
# transaction, where those writes switch off. So on PostgreSQL every test under these folders runs in
# transaction mode (`django_db(transaction=True)`: real commits, tables flushed after each test).
PRODUCTION_MODE_FOLDERS = ("scim", "webhooks", "faults")


def _on_postgres() -> bool:
    from django.conf import settings

    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _on_postgres():
        return
    tests_root = Path(__file__).parent
    for item in items:
        try:
            folder = Path(str(item.path)).relative_to(tests_root).parts[0]
        except ValueError:
            continue
        if folder not in PRODUCTION_MODE_FOLDERS:
            continue
        marker = item.get_closest_marker("django_db")
        if marker is None and "db" not in getattr(item, "fixturenames", ()):
            continue  # a test that never touches the database stays as it is
        kwargs = dict(marker.kwargs) if marker is not None else {}
        kwargs["transaction"] = True
        item.add_marker(pytest.mark.django_db(*(marker.args if marker else ()), **kwargs), append=False)
