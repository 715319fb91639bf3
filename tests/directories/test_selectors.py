"""directories.selectors.directory_get: the one read of a directory by id, optionally scoped."""

from __future__ import annotations

import uuid

import pytest

from directories.models import Directory
from directories.selectors import directory_get

pytestmark = pytest.mark.django_db


def test_directory_get_by_id_and_scoped_to_its_tenant_and_product(directory_a: Directory) -> None:
    tenant, product = directory_a.tenant, directory_a.product
    assert directory_get(directory_id=directory_a.id) == directory_a
    assert directory_get(directory_id=str(directory_a.id), tenant=tenant, product=product) == directory_a
    assert directory_get(directory_id=directory_a.id, tenant=tenant) == directory_a
    # Another tenant's or product's directory reads exactly like a missing one.
    assert directory_get(directory_id=directory_a.id, tenant="someone-else", product=product) is None
    assert directory_get(directory_id=directory_a.id, tenant=tenant, product="other") is None
    assert directory_get(directory_id=uuid.uuid4(), tenant=tenant, product=product) is None
    for malformed in ("", "not-a-uuid", None, 42):
        assert directory_get(directory_id=malformed) is None
