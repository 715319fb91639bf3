"""Every portal answer carries the portal's Content-Security-Policy (portal/middleware.py), whatever made it:
a page, a redirect, a 404, a 405, a CSRF refusal; other surfaces keep their own headers."""

from __future__ import annotations

import pytest
from django.test import Client

from directories.models import Directory
from portal.middleware import POLICY

pytestmark = pytest.mark.django_db


def test_the_policy_allows_only_roster_s_own_scripts_and_styles() -> None:
    directives = dict(part.strip().split(" ", 1) for part in POLICY.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == directives["style-src"] == "'self'"
    assert directives["form-action"] == "'self'" and directives["frame-ancestors"] == "'none'"
    assert "unsafe-inline" not in POLICY and "unsafe-eval" not in POLICY


@pytest.mark.parametrize("path", ["/portal/", "/portal/directories/{id}", "/portal/audit", "/portal/nothing-here"])
def test_signed_in_pages_and_errors_carry_it(portal_client: Client, directory_a: Directory, path: str) -> None:
    response = portal_client.get(path.format(id=directory_a.id))
    assert response["Content-Security-Policy"] == POLICY


def test_signed_out_answers_carry_it(db: None) -> None:
    assert Client().get("/portal/audit")["Content-Security-Policy"] == POLICY  # the redirect to sign in
    assert Client().get("/portal/login")["Content-Security-Policy"] == POLICY
    assert Client().get("/portal/logout")["Content-Security-Policy"] == POLICY  # 405: POST only
    refused = Client(enforce_csrf_checks=True).post("/portal/login", {"email": "a@b.c", "password": "x"})
    assert refused.status_code == 403 and refused["Content-Security-Policy"] == POLICY


def test_other_surfaces_are_left_alone(api_client: Client) -> None:
    assert "Content-Security-Policy" not in api_client.get("/api/v1/directory-sync?tenant=a&product=b")
    assert "frame-ancestors 'none'" in Client().get("/setup/not-a-token")["Content-Security-Policy"]
