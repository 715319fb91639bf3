"""Who the audit trail says made a change over the REST API: the API key, named the same on every route,
and the client's address decided as on every other surface, behind TRUSTED_PROXY_COUNT proxies too."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEntry
from directories.models import Directory
from tests.conftest import API_KEY

pytestmark = pytest.mark.django_db

BASE = "/api/v1/directory-sync"
CLIENT = "198.51.100.23"
PROXY = "10.0.0.5"


def _behind_proxy() -> Client:
    """A client whose request reaches Roster through one reverse proxy: the proxy is REMOTE_ADDR and has
    appended the client's address to X-Forwarded-For (after one the client sent itself)."""
    return Client(
        HTTP_AUTHORIZATION=f"Bearer {API_KEY}",
        REMOTE_ADDR=PROXY,
        HTTP_X_FORWARDED_FOR=f"203.0.113.66, {CLIENT}",
    )


def _post(client: Client, path: str, body: Any) -> Any:
    return client.post(path, json.dumps(body), content_type="application/json")


def test_behind_a_trusted_proxy_a_rest_change_records_the_client_s_address(settings: Any) -> None:
    settings.TRUSTED_PROXY_COUNT = 1
    client = _behind_proxy()
    created = _post(client, BASE, {"tenant": "acme", "product": "crm"})
    assert created.status_code == 201, created.content
    directory_id = created.json()["data"]["id"]
    assert (
        client.patch(f"{BASE}/{directory_id}", json.dumps({"name": "Renamed"}), "application/json").status_code == 200
    )
    assert _post(client, f"{BASE}/{directory_id}/scim-secret", {}).status_code == 200
    assert _post(client, f"{BASE}/{directory_id}/setup-links", {}).status_code == 201
    assert client.delete(f"{BASE}/{directory_id}").status_code == 200
    entries = AuditEntry.objects.order_by("id")
    assert [e.action for e in entries] == [
        "directory.created",
        "directory.updated",
        "directory.scim_secret_rotated",
        "setup_link.created",
        "directory.deleted",
    ]
    assert {e.client_ip for e in entries} == {CLIENT}  # never the proxy's, nor the address the client made up
    assert not Directory.objects.filter(pk=directory_id).exists()


def test_without_a_trusted_proxy_the_forwarded_header_is_not_believed(settings: Any) -> None:
    settings.TRUSTED_PROXY_COUNT = 0
    assert _post(_behind_proxy(), BASE, {"tenant": "acme", "product": "crm"}).status_code == 201
    assert AuditEntry.objects.get(action="directory.created").client_ip == PROXY


def test_every_rest_entry_names_the_api_key_as_actor_and_credential(db_key: str) -> None:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {db_key}")
    directory_id = _post(client, BASE, {"tenant": "acme", "product": "crm"}).json()["data"]["id"]
    assert _post(client, f"{BASE}/{directory_id}/held-changes/approve", {}).status_code == 200
    name = f"api key test app ({db_key[:10]}…)"
    entries = list(AuditEntry.objects.order_by("id"))
    assert [e.action for e in entries] == ["directory.created", "directory.held_changes_approved"]
    for entry in entries:
        assert entry.actor is None and entry.directory_id is not None
        assert (entry.details["via"], entry.details["actor"], entry.details["credential"]) == ("rest-api", name, name)
