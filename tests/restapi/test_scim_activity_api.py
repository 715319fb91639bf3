"""The REST API's side of SCIM activity (contract §4.1): the Directory's `health` and secret facts,
`POST …/scim-secret` with grace_seconds, `DELETE …/scim-secret/previous`, and `GET …/scim-requests`."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from audit.models import AuditEntry
from directories.activity import recorder
from directories.models import Directory, ScimLogEntry
from directories.services import directory_create
from tests.actors import TEST_ACTOR

pytestmark = pytest.mark.django_db

PREFIXES = ["/api/v1/directory-sync", "/api/v1/dsync"]


def rotate(client: Client, directory: Directory, body: Any = None, prefix: str = PREFIXES[0]) -> Any:
    raw = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(f"{prefix}/{directory.id}/scim-secret", raw, content_type="application/json")


def scim_status(directory: Directory, secret: str) -> int:
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}").get(f"/api/scim/v2.0/{directory.id}/Users").status_code


def log_entry(directory: Directory, *, status: int, at_offset: int, path: str = "/Users") -> ScimLogEntry:
    return ScimLogEntry.objects.create(
        directory=directory,
        at=timezone.now() - timedelta(seconds=at_offset),
        method="GET",
        path=path,
        status=status,
        latency_ms=3,
        request_id=f"req-{status}-{at_offset}",
    )


# --- the Directory ---------------------------------------------------------------------------------


def test_every_directory_shows_its_health_and_its_secrets_facts(api_client: Client, directory_a: Directory) -> None:
    Client(HTTP_AUTHORIZATION=f"Bearer {directory_a.scim_secret}").get(f"/api/scim/v2.0/{directory_a.id}/Users")
    recorder.flush()
    for data in (
        api_client.get(f"/api/v1/directory-sync/{directory_a.id}").json()["data"],
        api_client.get("/api/v1/directory-sync?tenant=acme&product=crm").json()["data"][0],
    ):
        assert data["log_scim_requests"] is False
        assert data["health"]["state"] == "healthy" and data["health"]["requests_24h"] == 1
        assert data["scim"]["last_used_at"] == data["health"]["last_success_at"] is not None
        assert (
            data["scim"]["previous_secret_expires_at"] is None and data["scim"]["previous_secret_last_used_at"] is None
        )


def test_the_directory_list_reads_every_health_in_the_same_query(api_client: Client) -> None:
    def list_queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert api_client.get("/api/v1/directory-sync?tenant=acme&product=crm").status_code == 200
        return len(ctx.captured_queries)

    directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"})
    one = list_queries()
    for _ in range(5):
        directory = directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"})
        Client(HTTP_AUTHORIZATION=f"Bearer {directory.scim_secret}").get(f"/api/scim/v2.0/{directory.id}/Users")
    recorder.flush()
    assert list_queries() == one


def test_log_scim_requests_is_set_on_create_and_by_patch(api_client: Client) -> None:
    created = api_client.post(
        "/api/v1/directory-sync",
        {"tenant": "acme", "product": "crm", "log_scim_requests": True},
        content_type="application/json",
    ).json()["data"]
    assert created["log_scim_requests"] is True
    url = f"/api/v1/directory-sync/{created['id']}"
    patched = api_client.patch(url, {"log_scim_requests": False}, content_type="application/json").json()["data"]
    assert patched["log_scim_requests"] is False and Directory.objects.get(pk=created["id"]).log_scim_requests is False
    refused = api_client.patch(url, {"log_scim_requests": "yes"}, content_type="application/json")
    assert refused.status_code == 400 and "log_scim_requests" in refused.json()["error"]["message"]


# --- rotation ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", PREFIXES)
def test_rotation_with_grace_keeps_the_old_secret_working_until_it_ends(
    api_client: Client, directory_a: Directory, prefix: str
) -> None:
    old = directory_a.scim_secret
    before = timezone.now()
    response = rotate(api_client, directory_a, {"grace_seconds": 86400}, prefix)
    assert response.status_code == 200
    data = response.json()["data"]
    new = data["scim"]["secret"]
    assert new != old and len(new) >= 43 and data["id"] == str(directory_a.id)
    expires = parse_datetime(data["scim"]["previous_secret_expires_at"])
    assert before + timedelta(seconds=86399) <= expires <= timezone.now() + timedelta(seconds=86400)
    assert scim_status(directory_a, old) == scim_status(directory_a, new) == 200
    entry = AuditEntry.objects.get(action="directory.scim_secret_rotated", directory_id=directory_a.id)
    assert entry.details["grace_seconds"] == 86400 and entry.details["via"] == "rest-api"
    assert old not in json.dumps(entry.details) and new not in json.dumps(entry.details)


def test_rotation_without_a_body_stops_the_old_secret_at_once(api_client: Client, directory_a: Directory) -> None:
    old = directory_a.scim_secret
    data = rotate(api_client, directory_a).json()["data"]
    assert data["scim"]["previous_secret_expires_at"] is None
    assert scim_status(directory_a, old) == 401 and scim_status(directory_a, data["scim"]["secret"]) == 200
    assert rotate(api_client, directory_a, {"grace_seconds": 0}).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {"grace_seconds": -1},
        {"grace_seconds": 604801},
        {"grace_seconds": 1.5},
        {"grace_seconds": 60.0},
        {"grace_seconds": "60"},
        {"grace_seconds": True},
        {"grace_seconds": None},
        {"grace_seconds": [60]},
        {"grace_seconds": 2**64},
        {"grace_seconds": 60, "secret": "mine"},
        [60],
        "60",
        b'{"grace_seconds": 1e3}',
        b'{"grace_seconds": 1' + b"0" * 400 + b"}",  # beyond a double: refused as a body (core.apiinput)
        b'{"grace_seconds": 60',
        b'{"grace_seconds": "\\u0000"}',
    ],
)
def test_bad_grace_seconds_is_a_400_naming_it_and_rotates_nothing(
    api_client: Client, directory_a: Directory, body: Any
) -> None:
    old = directory_a.scim_secret
    response = rotate(api_client, directory_a, body)
    assert response.status_code == 400, response.content
    error = response.json()
    assert error["data"] is None and error["error"]["code"] == 400
    if isinstance(body, dict):
        assert ("grace_seconds" if "secret" not in body else "secret") in error["error"]["message"]
    row = Directory.objects.get(pk=directory_a.pk)
    assert row.scim_secret == old and row.previous_scim_secret == ""
    assert not AuditEntry.objects.exists()


def test_the_largest_grace_is_seven_days(api_client: Client, directory_a: Directory) -> None:
    assert rotate(api_client, directory_a, {"grace_seconds": 604800}).status_code == 200


def test_revoking_the_previous_secret_stops_it_and_is_audited_once(api_client: Client, directory_a: Directory) -> None:
    old = directory_a.scim_secret
    rotate(api_client, directory_a, {"grace_seconds": 600})
    url = f"/api/v1/dsync/{directory_a.id}/scim-secret/previous"
    data = api_client.delete(url).json()["data"]
    assert data["scim"]["previous_secret_expires_at"] is None and scim_status(directory_a, old) == 401
    assert api_client.delete(url).status_code == 200  # nothing left to stop: the same answer
    assert AuditEntry.objects.filter(action="directory.previous_scim_secret_revoked").count() == 1


@pytest.mark.parametrize(
    ("method", "suffix"), [("post", "scim-secret"), ("delete", "scim-secret/previous"), ("get", "scim-requests")]
)
def test_the_new_routes_need_an_api_key_and_a_real_directory(
    anon_client: Client, api_client: Client, directory_a: Directory, method: str, suffix: str
) -> None:
    old = directory_a.scim_secret
    for client, path, expected in (
        (anon_client, f"/api/v1/directory-sync/{directory_a.id}/{suffix}", 401),
        (Client(HTTP_AUTHORIZATION=f"Bearer {old}"), f"/api/v1/directory-sync/{directory_a.id}/{suffix}", 401),
        (api_client, f"/api/v1/directory-sync/{uuid.uuid4()}/{suffix}", 404),
        (api_client, f"/api/v1/directory-sync/not-a-uuid/{suffix}", 404),
    ):
        response = getattr(client, method)(path)
        assert response.status_code == expected
        assert response.json()["data"] is None and response.json()["error"]["code"] == expected
    assert Directory.objects.get(pk=directory_a.pk).scim_secret == old


# --- the request log --------------------------------------------------------------------------------


def test_the_request_log_is_newest_first_and_filtered_by_failed_and_status(
    api_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    log_entry(directory_a, status=200, at_offset=30)
    log_entry(directory_a, status=404, at_offset=20)
    log_entry(directory_a, status=401, at_offset=10)
    log_entry(directory_b, status=500, at_offset=5)  # another tenant's directory: never in A's log
    base = f"/api/v1/directory-sync/{directory_a.id}/scim-requests"

    def statuses(query: str = "") -> list[int]:
        response = api_client.get(base + query)
        assert response.status_code == 200, response.content
        return [entry["status"] for entry in response.json()["data"]]

    assert statuses() == [401, 404, 200]
    assert statuses("?failed=true") == [401, 404] and statuses("?failed=false") == [200]
    assert statuses("?status=404") == [404] and statuses("?status=404&failed=false") == []
    assert statuses("?pageOffset=1&pageLimit=1") == [404] and statuses("?pageLimit=0") == []
    entry = api_client.get(base + "?status=401").json()["data"][0]
    assert (
        entry["failed"] is True and entry["request_id"] == "req-401-10" and entry["directory_id"] == str(directory_a.id)
    )
    assert set(entry) >= {"id", "at", "method", "path", "query", "scim_type", "detail", "latency_ms", "client_ip"}
    assert set(entry) >= {"user_agent", "request_body", "response_body", "request_truncated", "response_truncated"}


@pytest.mark.parametrize(
    "query",
    [
        "status=abc",
        "status=99",
        "status=600",
        "status=4O4",
        "status=1e3",
        "status=-404",
        "status=",
        "status=" + "9" * 30,
        "failed=yes",
        "failed=",
        "pageLimit=-1",
        "pageOffset=18446744073709551616",
        "status=%00",
    ],
)
def test_junk_in_the_log_query_is_a_400(api_client: Client, directory_a: Directory, query: str) -> None:
    response = api_client.get(f"/api/v1/directory-sync/{directory_a.id}/scim-requests?{query}")
    assert response.status_code == 400
    assert response.json()["data"] is None and response.json()["error"]["code"] == 400
