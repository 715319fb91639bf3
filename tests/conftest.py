"""Shared personas: directory A (tenant acme) and directory B (tenant globex), with their clients."""

from __future__ import annotations

import pytest
from django.test import Client

from directories.models import Directory
from directories.services import directory_create

API_KEY = "test-env-api-key"


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
