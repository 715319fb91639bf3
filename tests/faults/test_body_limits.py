"""Bodies over the app's 1 MiB cap answer 413 in the surface's format, through the production server."""

from __future__ import annotations

import json

import pytest

from tests.faults.conftest import Stack
from tests.faults.stack import scim_client

pytestmark = [pytest.mark.faults, pytest.mark.timeout(60)]

BIG = {"name": "x" * (2 * 1024 * 1024)}


def test_rest_body_too_large(stack: Stack) -> None:
    client = stack.roster.client()
    resp = client.request("POST", "/api/v1/directory-sync", BIG)
    client.close()
    assert resp.status == 413
    assert resp.headers["content-type"].startswith("application/json")
    document = json.loads(resp.body)
    assert document["data"] is None and document["error"]["code"] == 413


def test_scim_body_too_large(stack: Stack) -> None:
    directory_id, secret = stack.roster.directory_create("bodylimit", "http://127.0.0.1:9/hook")
    client = scim_client(stack.roster, secret)
    resp = client.request("POST", f"/api/scim/v2.0/{directory_id}/Users", BIG, content_type="application/scim+json")
    client.close()
    assert resp.status == 413
    assert resp.headers["content-type"].startswith("application/scim+json")
    document = json.loads(resp.body)
    assert document["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"] and document["status"] == "413"
