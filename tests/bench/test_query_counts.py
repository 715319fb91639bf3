"""SQL statements per SCIM operation must not grow with the directory (issue 7: flat at 100k users).

Seeds the same directory through bench.scale's bulk helpers (so they are tested too) at two sizes and
compares the statement count of each operation; `bench.scale` reports the same counts at 1k/10k/100k.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from bench.scale import seed_group, seed_members, seed_users
from bench.workload import PATCH_SCHEMA, USER_SCHEMA
from directories.models import DirectoryUser, GroupMembership
from directories.services import directory_create
from tests.actors import TEST_ACTOR

pytestmark = pytest.mark.django_db


def _statement_counts(size: int) -> dict[str, int]:
    directory = directory_create(
        actor=TEST_ACTOR, data={"tenant": f"qc{size}", "product": "bench", "type": "okta-scim-v2"}
    )
    group = seed_group(directory, "big")
    users = seed_users(directory, 0, size)
    seed_members(group, users[:-3])  # the last three are spares for the PATCH add
    first = DirectoryUser.objects.get(id=users[0])
    base = f"/api/scim/v2.0/{directory.id}"
    client = Client(HTTP_AUTHORIZATION=f"Bearer {directory.scim_secret}")
    scim = "application/scim+json"

    def patch(path: str, ops: list[dict[str, Any]]) -> Any:
        return client.patch(path, json.dumps({"schemas": [PATCH_SCHEMA], "Operations": ops}), content_type=scim)

    operations = {
        "list first page": lambda: client.get(f"{base}/Users?startIndex=1&count=10"),
        "list last page": lambda: client.get(f"{base}/Users?startIndex={size - 9}&count=10"),
        "filter userName": lambda: client.get(
            f"{base}/Users?filter=" + quote(f'userName eq "{first.user_name}"', safe="")
        ),
        "filter externalId": lambda: client.get(
            f"{base}/Users?filter=" + quote(f'externalId eq "{first.external_id}"', safe="")
        ),
        "get user": lambda: client.get(f"{base}/Users/{first.id}"),
        "create user": lambda: client.post(
            f"{base}/Users", json.dumps({"schemas": [USER_SCHEMA], "userName": f"new{size}@example.com"}), scim
        ),
        "add member": lambda: patch(
            f"{base}/Groups/{group.id}", [{"op": "add", "path": "members", "value": [{"value": str(users[-1])}]}]
        ),
        "get group without members": lambda: client.get(f"{base}/Groups/{group.id}?excludedAttributes=members"),
        "get group with members": lambda: client.get(f"{base}/Groups/{group.id}"),
        "deactivate user": lambda: patch(f"{base}/Users/{first.id}", [{"op": "replace", "value": {"active": False}}]),
        "delete user": lambda: client.delete(f"{base}/Users/{users[1]}"),
    }
    counts: dict[str, int] = {}
    for name, call in operations.items():
        with CaptureQueriesContext(connection) as ctx:
            response = call()
        assert response.status_code < 300, (name, response.status_code, response.content[:200])
        counts[name] = len(ctx.captured_queries)
    assert GroupMembership.objects.filter(group=group, user_id=users[-1]).exists()
    return counts


def test_statements_per_scim_operation_do_not_grow_with_directory_size() -> None:
    small = _statement_counts(12)
    large = _statement_counts(150)
    assert large == small
    # And stay few: a SCIM operation is a handful of round trips, never one per row.
    assert max(large.values()) <= 10, large
