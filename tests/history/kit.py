"""What the history tests share: what the REST API shows of a directory at one moment, recorded, and
history's own view of the same point, in the same shape."""

from __future__ import annotations

from typing import Any

import orjson
from django.test import Client

from directories.models import Directory
from history.selectors import history_point, snapshot_groups, snapshot_users
from history.services import history_catch_up
from tests.conftest import API_KEY
from webhooks.models import EventSequence

REST = "/api/v1/directory-sync"


def rest(path: str, client: Client | None = None) -> Any:
    response = (client or Client(HTTP_AUTHORIZATION=f"Bearer {API_KEY}")).get(path)
    assert response.status_code == 200, (path, response.content)
    return orjson.loads(response.content)


def last_sequence(directory: Directory) -> int:
    return EventSequence.objects.filter(directory_id=directory.id).values_list("last", flat=True).first() or 0


def rest_view(directory: Directory) -> dict[str, Any]:
    """The users (each with its groups' ids) and groups (each with its member count) that the REST API
    shows now, with the directory's last event number."""
    scope = f"tenant={directory.tenant}&product={directory.product}"
    users = rest(f"{REST}/{directory.id}/users?pageLimit=1000")["data"]
    for user in users:
        groups = rest(f"{REST}/users/{user['id']}/groups?{scope}&pageLimit=1000")["data"]
        user["groups"] = [g["id"] for g in groups]
    groups = rest(f"{REST}/{directory.id}/groups?pageLimit=1000")["data"]
    for group in groups:
        detail = rest(f"{REST}/groups/{group['id']}?{scope}")["data"]
        group["members"] = len(detail["members"])
        group["member_ids"] = [m["user_id"] for m in detail["members"]]
    return {"sequence": last_sequence(directory), "users": users, "groups": groups}


def history_view(directory: Directory, sequence: int) -> dict[str, Any]:
    history_catch_up(directory=directory)
    directory.refresh_from_db()
    point = history_point(directory=directory, sequence=sequence)
    return {
        "sequence": point.sequence,
        "users": snapshot_users(directory=directory, point=point, offset=0, limit=1000),
        "groups": snapshot_groups(directory=directory, point=point, offset=0, limit=1000),
    }
