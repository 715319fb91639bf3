from __future__ import annotations

import pytest

from directories.models import Directory
from tests.scim.conftest import Scim


@pytest.fixture
def scim_a(directory_a: Directory) -> Scim:
    return Scim(directory_a)
