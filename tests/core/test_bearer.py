"""core.bearer: the one reading of `Authorization: Bearer <token>`, used by SCIM, the REST API, the admin
API and /metrics. A header it cannot read is no token, and every surface answers it with its own 401."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from core.bearer import bearer_token
from directories.models import Directory


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),  # RFC 7235 §2.1: the scheme is case-insensitive
        ("BEARER abc", "abc"),
        ("  Bearer   abc  ", "abc"),
        ("Bearer a.b-c_d~e+f/g==", "a.b-c_d~e+f/g=="),
    ],
)
def test_a_bearer_header_gives_its_token(header: str, token: str) -> None:
    assert bearer_token(header) == token


@pytest.mark.parametrize(
    "header",
    [None, "", " ", "Bearer", "Bearer ", "Bearer a b", "Bearer  a b", "Basic dXNlcjpwYXNz", "Token abc", "Bearerabc"],
)
def test_a_header_without_one_token_gives_none(header: str | None) -> None:
    assert bearer_token(header) is None


MALFORMED = ["Bearer", "Bearer ", "Bearer a b", "Bearer \x00", "Bearer \xe9\xff", "bearer", "Token x", "\x00"]


@pytest.mark.django_db
@pytest.mark.parametrize("header", MALFORMED)
def test_every_surface_answers_a_malformed_bearer_header_with_its_401(
    header: str, directory_a: Directory, settings: Any
) -> None:
    settings.METRICS_TOKEN = "a-metrics-token-for-this-test"
    settings.ADMIN_ROOT_TOKEN = "a-root-token-for-this-test"
    client = Client(HTTP_AUTHORIZATION=header)
    for path in (
        f"/api/scim/v2.0/{directory_a.id}/Users",
        f"/api/v1/directory-sync/{directory_a.id}",
        "/auditlog/admin/v1/directories",
        "/metrics",
    ):
        response = client.get(path)
        assert response.status_code == 401, (path, response.content)
