"""Query counts per SCIM operation stay flat as the directory and the group grow."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from core.comparison import comparison_key
from directories.models import Directory, DirectoryGroup, DirectoryUser, GroupMembership
from tests.scim.conftest import Scim, group_body, user_body


def _grow(directory: Directory, users: int, group: DirectoryGroup | None = None) -> None:
    rows = [
        DirectoryUser(
            id=uuid.uuid4(),
            directory=directory,
            user_name=f"bulk{i}-{uuid.uuid4().hex[:6]}@x.io",
            raw={"userName": "bulk"},
            email="b@x.io",
        )
        for i in range(users)
    ]
    for row in rows:
        row.user_name_key = comparison_key(row.user_name)
    DirectoryUser.objects.bulk_create(rows)
    if group is not None:
        GroupMembership.objects.bulk_create([GroupMembership(group=group, user=row) for row in rows])


def _counts(scim: Scim, group_id: str, user_id: str) -> dict[str, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    n = uuid.uuid4().hex[:8]
    counts: dict[str, int] = {}
    operations = {
        "create user": lambda: scim.post("/Users", user_body(f"new{n}@x.io")),
        "get user": lambda: scim.get(f"/Users/{user_id}"),
        "filter users": lambda: scim.get("/Users?filter=userName%20eq%20%22probe@x.io%22"),
        "list page": lambda: scim.get("/Users?startIndex=2&count=10"),
        "patch user": lambda: scim.ops(f"/Users/{user_id}", {"op": "replace", "path": "title", "value": f"T{n}"}),
        "put user": lambda: scim.put(f"/Users/{user_id}", user_body("probe@x.io", title=f"P{n}")),
        "add member": lambda: scim.ops(
            f"/Groups/{group_id}", {"op": "add", "path": "members", "value": [{"value": user_id}]}
        ),
        "remove member": lambda: scim.ops(
            f"/Groups/{group_id}", {"op": "remove", "path": f'members[value eq "{user_id}"]'}
        ),
        "get group lean": lambda: scim.get(f"/Groups/{group_id}?excludedAttributes=members"),
        "rename group": lambda: scim.ops(
            f"/Groups/{group_id}", {"op": "replace", "path": "displayName", "value": f"G{n}"}
        ),
    }
    for name, operation in operations.items():
        with CaptureQueriesContext(connection) as ctx:
            status, body = operation()
        assert status < 300, (name, body)
        counts[name] = len(ctx.captured_queries)
    return counts


@pytest.mark.django_db
def test_query_counts_do_not_grow_with_directory_or_group_size(scim_hooked: Scim) -> None:
    _, user = scim_hooked.post("/Users", user_body("probe@x.io"))
    _, group = scim_hooked.post("/Groups", group_body("Big"))
    small = _counts(scim_hooked, group["id"], user["id"])
    _grow(scim_hooked.directory, 400, DirectoryGroup.objects.get(pk=group["id"]))
    large = _counts(scim_hooked, group["id"], user["id"])
    assert small == large
    # Budgets (the test database wraps each write in a savepoint: +2 statements per transaction).
    # (The single-statement writes of PostgreSQL run outside transactions only; tests/scim/test_statements.py
    # counts those.)
    postgres = connection.vendor == "postgresql"
    # Users carry their `groups`: on PostgreSQL read in the same statement as the users (a subquery
    # column); elsewhere one more query per answer (directories.selectors.user_groups_attach).
    groups = 0 if postgres else 1
    # On SQLite, every write that records events takes its numbers with one more statement (the directory's
    # sequence counter, docs/events.md): the "+ seq" below. PostgreSQL numbers and inserts the events in one
    # statement (webhooks.services.outbox).
    seq = 0 if postgres else 1
    budgets = {
        "create user": 5 + seq,
        # PostgreSQL: the user comes in the authentication's query (LATERAL join). A filter is parsed only
        # after authentication, so its page is a query of its own.
        "get user": (1 if postgres else 2) + groups,
        "filter users": 2 + groups,
        # PostgreSQL: totalResults from the tally, in the same query as the page and the directory (directories.pages).
        "list page": (1 if postgres else 3) + groups,
        "patch user": 6 + groups + seq,
        "put user": 6 + groups + seq,
        "add member": 8 + seq,
        "remove member": 8 + seq,
        "get group lean": 2,
        "rename group": 6 + seq,
    }
    for name, budget in budgets.items():
        assert large[name] <= budget, (name, large)
