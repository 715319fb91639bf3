"""Helpers of the deprovision guard's tests (contract §4.2): a directory with a chosen setting, users made
over SCIM, the guard's clock, what the application sees (REST) and what was recorded (the outbox)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import orjson
from django.test import Client

from directories.models import Directory, HeldChange
from directories.services import directory_update
from tests.actors import TEST_ACTOR, scene_trail_forget
from tests.conftest import API_KEY
from tests.scim.conftest import PATCH_URN, Scim, user_body
from webhooks.models import WebhookEvent

DEACTIVATE_OKTA = {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "value": {"active": False}}]}


def guard_set(directory: Directory, **setting: Any) -> Directory:
    directory_update(actor=TEST_ACTOR, directory=directory, data={"deprovision_guard": setting})
    scene_trail_forget()
    directory.refresh_from_db()
    return directory


def users_make(scim: Scim, count: int, prefix: str = "user") -> list[str]:
    ids = []
    for i in range(count):
        status, body = scim.post("/Users", user_body(f"{prefix}{i}@guard.example"))
        assert status == 201, body
        ids.append(body["id"])
    return ids


class Clock:
    """The guard's clock (directories.guard.rules.now), moved by hand."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


def rest() -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {API_KEY}")


def rest_user(directory: Directory, user_id: str) -> tuple[int, Any]:
    """The user as the application reads it (GET /api/v1/directory-sync/users/<id>)."""
    answer = rest().get(
        f"/api/v1/directory-sync/users/{user_id}", {"tenant": directory.tenant, "product": directory.product}
    )
    return answer.status_code, answer.json()["data"]


def rest_directory(directory: Directory) -> dict[str, Any]:
    answer = rest().get(f"/api/v1/directory-sync/{directory.id}")
    assert answer.status_code == 200, answer.content
    return answer.json()["data"]


def events(directory: Directory, *types: str) -> list[dict[str, Any]]:
    """The directory's own events (its changes feed), in sequence order; only `types` when given."""
    rows = WebhookEvent.objects.filter(directory_id=directory.id, target="directory").order_by("sequence")
    if types:
        rows = rows.filter(event_type__in=types)
    return [orjson.loads(row.body) for row in rows]


def held_kinds(directory: Directory) -> list[tuple[str, str]]:
    """(user id, change) of each held change, in order."""
    return [(str(u), c) for u, c in HeldChange.objects.filter(directory=directory).values_list("user_id", "change")]
