"""core.surfaces: which surface a path belongs to, and a directory's SCIM base."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from core.surfaces import ADMIN, OTHER, PORTAL, REST, SCIM, STATIC, scim_base_url, scim_path, surface_of


@pytest.mark.parametrize(
    ("path", "surface"),
    [
        ("/api/scim/v2.0/x/Users", SCIM),
        ("/api/scim/", SCIM),
        ("/api/scim", SCIM),
        ("/api/v1/directory-sync", REST),
        ("/api/v1", REST),
        ("/auditlog/admin/v1/tokens", ADMIN),
        ("/auditlog", ADMIN),
        ("/portal/", PORTAL),
        ("/static/roster.css", STATIC),
        ("/", OTHER),
        ("/healthz", OTHER),
        ("/metrics", OTHER),
        ("/api/v1x", OTHER),  # a prefix is a whole segment
        ("/api/scimx/Users", OTHER),
        ("/API/v1/directory-sync", OTHER),  # paths are case-sensitive
        ("/portalx", OTHER),
    ],
)
def test_a_path_belongs_to_the_surface_whose_prefix_is_its_first_segments(path: str, surface: str) -> None:
    assert surface_of(path) == surface


def test_a_directorys_scim_base_is_its_path_under_the_external_url(settings: Any) -> None:
    settings.EXTERNAL_URL = "https://roster.example.com"
    directory_id = uuid.uuid4()
    assert scim_path(directory_id) == f"/api/scim/v2.0/{directory_id}"
    assert scim_base_url(directory_id) == f"https://roster.example.com/api/scim/v2.0/{directory_id}"
    assert surface_of(scim_path(directory_id)) == SCIM
