"""The REST routes of history (contract §5.3): points by time or number, `as_of`, paging, the diff's cursor,
and every error: 400 for malformed or future points, 404 for another tenant or an unknown directory, 410
before the oldest kept event."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import quote

import orjson
import pytest
from django.test import Client
from django.utils import timezone

from directories.models import Directory
from history.models import HistoryPoint
from tests.history.kit import REST, last_sequence, rest_view
from tests.scim.conftest import Scim, group_body, user_body

pytestmark = pytest.mark.django_db


def _get(api_client: Client, path: str) -> tuple[int, dict]:
    response = api_client.get(path)
    return response.status_code, orjson.loads(response.content)


@pytest.fixture
def written(directory_a: Directory, scim_a: Scim) -> dict:
    ids = [scim_a.post("/Users", user_body(f"p{i}@example.com"))[1]["id"] for i in range(5)]
    status, group = scim_a.post("/Groups", group_body("Staff", ids[:3]))
    assert status == 201
    middle = rest_view(directory_a)
    scim_a.delete(f"/Users/{ids[0]}")
    scim_a.ops(f"/Users/{ids[1]}", {"op": "replace", "value": {"active": False}})
    return {"ids": ids, "group": group["id"], "middle": middle}


def test_snapshot_routes(api_client: Client, directory_a: Directory, written: dict) -> None:
    base = f"{REST}/{directory_a.id}/history"
    seq = written["middle"]["sequence"]
    status, body = _get(api_client, f"{base}/users?sequence={seq}")
    assert status == 200 and body["as_of"]["sequence"] == seq
    assert body["data"] == written["middle"]["users"]
    when = HistoryPoint.objects.get(directory=directory_a, sequence=seq).created_at
    status, by_time = _get(api_client, f"{base}/users?at={quote(when.isoformat())}")
    assert status == 200 and by_time["as_of"]["sequence"] == seq and by_time["data"] == body["data"]
    status, page = _get(
        api_client, f"/api/v1/dsync/{directory_a.id}/history/users?sequence={seq}&pageOffset=1&pageLimit=2"
    )
    assert [u["id"] for u in page["data"]] == written["ids"][1:3]
    status, now = _get(api_client, f"{base}/users?active=false")
    assert status == 200 and [u["id"] for u in now["data"]] == [written["ids"][1]]
    assert now["as_of"]["sequence"] == last_sequence(directory_a)
    status, groups = _get(api_client, f"{base}/groups?sequence={seq}")
    assert [(g["id"], g["members"]) for g in groups["data"]] == [(written["group"], 3)]
    status, members = _get(api_client, f"{base}/groups/{written['group']}/members?sequence={seq}")
    assert status == 200 and sorted(members["data"]) == sorted(written["ids"][:3])
    status, members = _get(api_client, f"{base}/groups/{written['group']}/members")
    assert sorted(members["data"]) == sorted(written["ids"][1:3])
    assert _get(api_client, f"{base}/groups/{written['group']}/members?sequence=1")[0] == 404


def test_diff_route_and_its_cursor(api_client: Client, directory_a: Directory, written: dict) -> None:
    seq = written["middle"]["sequence"]
    status, body = _get(api_client, f"{REST}/{directory_a.id}/diff?from={seq}")
    assert status == 200, body
    data = body["data"]
    assert [u["id"] for u in data["users"]["deleted"]] == [written["ids"][0]]
    assert data["users"]["updated"] == [
        {
            "id": written["ids"][1],
            "before": {"active": True, "raw": {"active": True}},
            "after": {"active": False, "raw": {"active": False}},
        }
    ]
    assert data["memberships"]["removed"] == [{"group_id": written["group"], "user_id": written["ids"][0]}]
    assert data["next"] is None and body["to"]["sequence"] == last_sequence(directory_a)
    # From the start: everything that exists now is "created", nothing deleted (created and deleted inside).
    items, cursor = [], None
    while True:
        query = f"cursor={cursor}" if cursor else "from=1&pageLimit=2"
        status, page = _get(api_client, f"{REST}/{directory_a.id}/diff?{query}&pageLimit=2")
        assert status == 200, page
        items += [u["id"] for u in page["data"]["users"]["created"]]
        cursor = page["data"]["next"]
        if cursor is None:
            break
    assert items == written["ids"][1:] or items == written["ids"][2:]


def test_errors(api_client: Client, directory_a: Directory, directory_b: Directory, written: dict) -> None:
    base = f"{REST}/{directory_a.id}"
    future = quote((timezone.now() + timedelta(hours=1)).isoformat())
    for path in (
        f"{base}/history/users?at={future}",
        f"{base}/history/users?at=yesterday",
        f"{base}/history/users?sequence=-1",
        f"{base}/history/users?sequence=99999",
        f"{base}/history/users?at=2026-01-01T00:00:00Z&sequence=1",
        f"{base}/history/users?active=maybe",
        f"{base}/diff",
        f"{base}/diff?from=abc",
        f"{base}/diff?from=5&to=2",
        f"{base}/diff?cursor=nonsense",
        f"{base}/history/users?pageLimit=x",
    ):
        status, body = _get(api_client, path)
        assert status == 400, (path, body)
        assert body["data"] is None and body["error"]["code"] == 400
    assert _get(api_client, f"{base}/history/users?tenant=globex")[0] == 404
    assert _get(api_client, f"{REST}/{directory_a.id}/diff?from=1&tenant=globex&product=crm")[0] == 404
    assert _get(api_client, f"{REST}/00000000-0000-0000-0000-000000000000/history/users")[0] == 404
    assert _get(api_client, f"{REST}/not-an-id/diff?from=1")[0] == 404
    status, body = _get(api_client, f"{base}/history/users?at=2020-01-01T00:00:00Z")
    assert status == 410 and "earliest available time" in body["error"]["message"]
    assert _get(api_client, f"{base}/history/users?tenant=acme&product=crm")[0] == 200
    assert Client().get(f"{base}/history/users").status_code == 401
