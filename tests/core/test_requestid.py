"""Request ids (contract §7.1): kept when sane, replaced otherwise, returned on every surface."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from core.requestid import request_id_from
from directories.models import Directory

NEW_ID = re.compile(r"[0-9a-f]{32}")


@pytest.mark.parametrize("incoming", ["a", "x" * 128, "lb-1234.abc_9", "A.b-C_d"])
def test_a_sane_incoming_id_is_kept(incoming: str) -> None:
    assert request_id_from(incoming) == incoming


@pytest.mark.parametrize(
    "incoming", [None, "", "x" * 129, "a b", "a\nb", "line\n", "é", "a/b", "a;b", "a\x00b", "١٢٣", "ａ"]
)
def test_an_odd_or_overlong_incoming_id_is_replaced_not_echoed(incoming: str | None) -> None:
    replaced = request_id_from(incoming)
    assert replaced != incoming and NEW_ID.fullmatch(replaced)


def _surfaces(directory: Directory) -> list[tuple[str, dict[str, str]]]:
    return [
        ("/api/v1/directory-sync?tenant=acme&product=crm", {}),  # REST, anonymous: 401
        ("/api/v1/directory-sync/not-a-directory", {"HTTP_AUTHORIZATION": "Bearer test-env-api-key"}),  # 404
        ("/auditlog/admin/v1/directories", {}),  # admin API, anonymous: 401
        ("/portal/login", {}),  # a portal page
        ("/portal/directories", {}),  # redirected to sign in
        ("/healthz", {}),
        ("/readyz", {}),
        ("/metrics", {}),  # 404 while METRICS_TOKEN is unset
        (f"/api/scim/v2.0/{directory.id}/Users", {}),  # SCIM, anonymous: 401
        (f"/api/scim/v2.0/{directory.id}/Users", {"HTTP_AUTHORIZATION": f"Bearer {directory.scim_secret}"}),
        ("/api/scim/v2.0/", {}),  # no SCIM route
        ("/nowhere", {}),
    ]


def test_every_surface_returns_the_sane_incoming_id(directory_a: Directory) -> None:
    for path, headers in _surfaces(directory_a):
        response = Client().get(path, HTTP_X_REQUEST_ID="trace-42.a_b", **headers)
        assert response["X-Request-Id"] == "trace-42.a_b", (path, response.status_code)


def test_every_surface_replaces_an_odd_incoming_id_with_a_new_one(directory_a: Directory) -> None:
    for path, headers in _surfaces(directory_a):
        for odd in ("x" * 129, "forged\nline", "semi;colon"):
            response = Client().get(path, HTTP_X_REQUEST_ID=odd, **headers)
            assert NEW_ID.fullmatch(response["X-Request-Id"]), (path, odd)
