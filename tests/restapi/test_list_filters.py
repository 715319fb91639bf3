"""The REST lists' filters (contract §3): active, email, group and updatedAfter on users, name on groups."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from core.comparison import comparison_key
from directories.models import Directory, DirectoryUser
from directories.selectors import after_shown_instant
from tests.restapi.conftest import make_group, make_user
from tests.restapi.test_users_groups_api import ACME, BASE, get


@pytest.fixture
def people(directory_a: Directory, directory_b: Directory) -> dict[str, DirectoryUser]:
    users = {
        "ann": make_user(directory_a, "ann", email="Ann@Acme.test", email_key=comparison_key("Ann@Acme.test")),
        "bob": make_user(directory_a, "bob", active=False, email="bob@acme.test", email_key="bob@acme.test"),
        "cy": make_user(directory_a, "cy", email="STRAẞE@acme.test", email_key=comparison_key("STRAẞE@acme.test")),
        "carl": make_user(directory_b, "carl", email="ann@acme.test", email_key="ann@acme.test"),
    }
    make_group(directory_a, "Engineering", [users["ann"], users["cy"]])
    make_group(directory_a, "Empty")
    make_group(directory_b, "Engineering", [users["carl"]])
    old = timezone.now() - timedelta(days=2)
    DirectoryUser.objects.filter(pk=users["bob"].pk).update(updated_at=old)
    return users


def _names(client: Client, query: dict[str, str], path: str = "users") -> list[str]:
    status, body = get(client, f"{BASE}/{path}", {**ACME, **query})
    assert status == 200, body
    key = "raw" if path == "users" else "name"
    return [item["raw"]["userName"] if key == "raw" else item["name"] for item in body["data"]]


def test_user_filters_each_and_together(api_client: Client, people: dict[str, DirectoryUser]) -> None:
    eng = next(g for g in people["ann"].groups.all())
    yesterday = (timezone.now() - timedelta(days=1)).isoformat().replace("+00:00", "Z")
    assert _names(api_client, {"active": "true"}) == ["ann", "cy"]
    assert _names(api_client, {"active": "false"}) == ["bob"]
    assert _names(api_client, {"email": "ANN@acme.TEST"}) == ["ann"]
    assert _names(api_client, {"email": "strasse@acme.test"}) == ["cy"]
    assert _names(api_client, {"group": str(eng.id)}) == ["ann", "cy"]
    assert _names(api_client, {"group": str(uuid.uuid4())}) == []
    assert _names(api_client, {"updatedAfter": yesterday}) == ["ann", "cy"]
    assert _names(api_client, {"updatedAfter": yesterday, "active": "true", "group": str(eng.id)}) == ["ann", "cy"]
    assert _names(api_client, {"group": str(eng.id), "pageOffset": "1", "pageLimit": "1"}) == ["cy"]
    directory = str(people["ann"].directory_id)
    assert _names(api_client, {"email": "ann@acme.test", "directoryId": directory}) == ["ann"]


def test_group_name_filter_is_exact_and_case_insensitive(api_client: Client, people: dict[str, DirectoryUser]) -> None:
    assert _names(api_client, {"name": "ENGINEERING"}, "groups") == ["Engineering"]
    assert _names(api_client, {"name": "Engineer"}, "groups") == []


@pytest.mark.parametrize(
    "query",
    [
        {"active": "yes"},
        {"active": ""},
        {"email": ""},
        {"email": "x" * 600},
        {"group": "not-a-uuid"},
        {"group": "0" * 32},
        {"updatedAfter": "yesterday"},
        {"updatedAfter": "2026-01-01"},
        {"updatedAfter": "2026-01-01T00:00:00"},
        {"updatedAfter": "2026-13-01T00:00:00Z"},
        {"updatedAfter": "２０２６-01-01T00:00:00Z"},
    ],
)
def test_malformed_user_filters_are_400_naming_the_parameter(
    api_client: Client, people: dict[str, DirectoryUser], query: dict[str, str]
) -> None:
    status, body = get(api_client, f"{BASE}/users", {**ACME, **query})
    assert status == 400 and body["data"] is None
    assert next(iter(query)) in body["error"]["message"]


def test_group_name_filter_refuses_an_empty_name(api_client: Client, people: dict[str, DirectoryUser]) -> None:
    status, body = get(api_client, f"{BASE}/groups", {**ACME, "name": " "})
    assert status == 400 and "name" in body["error"]["message"]


def test_filters_need_an_api_key(people: dict[str, DirectoryUser]) -> None:
    assert Client().get(f"{BASE}/users", {**ACME, "active": "true"}).status_code == 401


# --- updatedAfter compares at the precision every surface shows (milliseconds) ------------------------


def _set_updated_at(user: DirectoryUser, moment: datetime) -> None:
    DirectoryUser.objects.filter(pk=user.pk).update(updated_at=moment)


def test_updated_after_a_users_shown_updated_at_leaves_that_user_out(
    api_client: Client, people: dict[str, DirectoryUser]
) -> None:
    """The stored instant has microseconds past the shown one: the shown value as the bound must not give
    the user back, so an application can pass the newest updated_at it saw as its next updatedAfter."""
    base = datetime(2030, 5, 1, 12, 0, 0, tzinfo=UTC)
    _set_updated_at(people["ann"], base + timedelta(microseconds=123_456))
    _set_updated_at(people["cy"], base + timedelta(microseconds=124_000))
    status, body = get(api_client, f"{BASE}/users", {**ACME, "email": "ann@acme.test"})
    shown = body["data"][0]["updated_at"]
    assert status == 200 and shown == "2030-05-01T12:00:00.123Z"
    assert _names(api_client, {"updatedAfter": shown}) == ["cy"]
    # One millisecond earlier, the shown instant is strictly after: ann comes back.
    assert _names(api_client, {"updatedAfter": "2030-05-01T12:00:00.122Z"}) == ["ann", "cy"]
    # Exactly on a millisecond: the same rule.
    assert _names(api_client, {"updatedAfter": "2030-05-01T12:00:00.124Z"}) == []
    # The same moment written with an offset.
    assert _names(api_client, {"updatedAfter": "2030-05-01T14:00:00.123+02:00"}) == ["cy"]


def test_updated_after_with_a_finer_bound_compares_the_shown_milliseconds(
    api_client: Client, people: dict[str, DirectoryUser]
) -> None:
    base = datetime(2030, 5, 1, 12, 0, 0, tzinfo=UTC)
    _set_updated_at(people["ann"], base + timedelta(microseconds=123_999))  # shown .123
    _set_updated_at(people["cy"], base + timedelta(microseconds=124_000))  # shown .124
    assert _names(api_client, {"updatedAfter": "2030-05-01T12:00:00.1235Z"}) == ["cy"]
    assert _names(api_client, {"updatedAfter": "2030-05-01T12:00:00.122999Z"}) == ["ann", "cy"]


def test_updated_after_the_last_representable_millisecond_is_empty_not_an_error(
    api_client: Client, people: dict[str, DirectoryUser]
) -> None:
    assert _names(api_client, {"updatedAfter": "9999-12-31T23:59:59.999Z"}) == []
    assert after_shown_instant(datetime.max.replace(tzinfo=UTC)) is None
    moment = datetime(2030, 1, 1, 0, 0, 0, 999_999, tzinfo=UTC)
    assert after_shown_instant(moment) == datetime(2030, 1, 1, 0, 0, 1, tzinfo=UTC)
