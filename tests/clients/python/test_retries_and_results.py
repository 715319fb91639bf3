"""Retries on 429 and 503 (and nothing else), against a scripted local server; results that keep what a newer
Roster adds."""

from __future__ import annotations

import email.utils
import time

import pytest
from roster_client import GoneError, Roster, RosterError, User
from roster_client._http import retry_after_seconds

from tests.clients.fakeserver import Scripted, failed, fake_roster, ok
from tests.webhooks.conftest import closed_port

USER = {
    "id": "0b5c4f8e-1111-4f0a-9d0e-2a3b4c5d6e7f",
    "first_name": "Ann",
    "last_name": "Lee",
    "email": "ann@acme.test",
    "active": True,
    "raw": {"id": "0b5c4f8e-1111-4f0a-9d0e-2a3b4c5d6e7f", "userName": "ann"},
    "created_at": "2030-01-01T00:00:00.000Z",
    "updated_at": "2030-01-01T00:00:00.123Z",
    "custom_attributes": {"department": "Eng"},
    "roles": ["admin"],
}


class Naps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _client(url: str, **options: object) -> tuple[Roster, Naps]:
    naps = Naps()
    return Roster(base_url=url, api_key="k", sleep=naps, **options), naps


@pytest.mark.parametrize("status", [429, 503])
def test_429_and_503_are_retried_after_what_retry_after_says(status: int) -> None:
    with fake_roster() as fake:
        fake.script(failed(status, **{"Retry-After": "7"}), failed(status, **{"Retry-After": "2"}), ok(USER))
        roster, naps = _client(fake.url)
        user = roster.users.get(USER["id"], tenant="acme", product="crm")
    assert user.email == "ann@acme.test"
    assert len(fake.requests) == 3 and naps == [7.0, 2.0]


def test_retries_are_bounded_and_the_last_answer_is_raised() -> None:
    with fake_roster() as fake:
        fake.script(failed(503, "database unavailable", **{"Retry-After": "1"}))
        roster, naps = _client(fake.url, max_retries=2)
        with pytest.raises(RosterError) as raised:
            roster.directories.get("d1")
    assert len(fake.requests) == 3 and naps == [1.0, 1.0]
    assert raised.value.status == 503 and raised.value.message == "database unavailable"
    assert raised.value.request_id == "fake-1" and type(raised.value) is RosterError


def test_retry_after_as_a_date_and_its_cap() -> None:
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    with fake_roster() as fake:
        fake.script(failed(429, **{"Retry-After": later}), failed(429, **{"Retry-After": "3600"}), ok(USER))
        roster, naps = _client(fake.url, max_retry_wait=10)
        roster.users.get("u", tenant="acme", product="crm")
    assert naps == [10.0, 10.0]  # 30 s and an hour away: both capped at max_retry_wait
    assert 25 <= retry_after_seconds(later) <= 30
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: at once
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_without_retry_after_the_wait_backs_off() -> None:
    with fake_roster() as fake:
        fake.script(failed(429), failed(429), failed(429), ok(USER))
        roster, naps = _client(fake.url)
        roster.users.get("u", tenant="acme", product="crm")
    assert naps == [0.5, 1.0, 2.0]


@pytest.mark.parametrize("status", [400, 404, 409, 410, 500, 502])
def test_nothing_else_is_retried(status: int) -> None:
    with fake_roster() as fake:
        fake.script(failed(status, "no", **{"Retry-After": "1"}))
        roster, naps = _client(fake.url)
        with pytest.raises(RosterError) as raised:
            roster.directories.get("d1")
    assert len(fake.requests) == 1 and naps == [] and raised.value.status == status
    assert isinstance(raised.value, GoneError) is (status == 410)


def test_no_answer_is_not_retried() -> None:
    roster, naps = _client(f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(RosterError) as raised:
        roster.directories.get("d1")
    assert raised.value.status is None and "no answer" in raised.value.message and naps == []


def test_no_content_is_a_success_without_a_body() -> None:
    with fake_roster() as fake:
        fake.script(Scripted(204))
        roster, _ = _client(fake.url)
        assert roster.directories.delete("d1") is None
    assert fake.requests == [("DELETE", "/api/v1/directory-sync/d1")]


def test_an_answer_that_is_not_the_envelope_is_an_error_not_a_crash() -> None:
    with fake_roster() as fake:
        fake.script(Scripted(200, ["not", "an", "envelope"]))
        roster, _ = _client(fake.url)
        with pytest.raises(RosterError, match="unexpected answer"):
            roster.directories.get("d1")


def test_fields_from_a_newer_roster_are_kept_and_missing_ones_are_none() -> None:
    newer = {**USER, "nickname": "annie", "class": "x"}
    del newer["roles"]
    with fake_roster() as fake:
        fake.script(ok(newer))
        roster, _ = _client(fake.url)
        user = roster.users.get(USER["id"], tenant="acme", product="crm")
    assert isinstance(user, User) and user.roles is None
    assert user.extra == {"nickname": "annie", "class": "x"} and user["nickname"] == "annie"
    assert user.raw == USER["raw"] and user.custom_attributes == {"department": "Eng"}
    assert user.to_dict() == newer and user["email"] == user.email and user.get("missing", 1) == 1
    assert fake.requests == [("GET", f"/api/v1/directory-sync/users/{USER['id']}?tenant=acme&product=crm")]


def test_ids_are_one_path_segment_and_arguments_are_checked() -> None:
    with fake_roster() as fake:
        fake.script(ok(USER))
        roster, _ = _client(fake.url)
        roster.users.get("../directory-sync?x=1", tenant="acme", product="crm")
        assert fake.requests[0][1].startswith("/api/v1/directory-sync/users/..%2Fdirectory-sync%3Fx%3D1?")
        with pytest.raises(ValueError):
            roster.users.list(tenant="acme", product="crm", page_limit=1001)
        with pytest.raises(ValueError):
            roster.changes.list("d", limit=0)
        with pytest.raises(ValueError):
            Roster(base_url="ftp://roster", api_key="k")
