"""A request is authenticated before anything of it is parsed: until the secret is checked it costs the
directory lookup (with what its URL names), never the parsing of its body, its PATCH operations or its
filter (scim.processor). Every parser is made to fail the test if it is called; the answers must be 401."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

import pytest

import scim.processor
import scim.reads
import scim.services.groups
import scim.storage.query.filter
from scim.api import scim_request
from tests.scim.conftest import PATCH_URN, Scim, group_body, user_body

pytestmark = pytest.mark.django_db


def _forbid_parsers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make the body, PATCH and filter parsers record their name and raise, wherever the processor, the read
    handlers and the services reach them; returns the names of those called."""
    called: list[str] = []

    def forbid(module: Any, name: str) -> None:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            called.append(name)
            raise AssertionError(f"{name} ran before authentication")

        monkeypatch.setattr(module, name, refuse)

    for module, name in (
        (scim.processor, "parse_json"),
        (scim.processor, "check_document"),
        (scim.reads, "filter_plan"),
        (scim.reads, "search_query"),
        (scim.storage.query.filter, "parse_filter"),
        (scim.services.groups, "patch_operations"),
        (scim.services.groups, "members_added"),
    ):
        forbid(module, name)
    return called


def test_an_unauthenticated_group_patch_parses_no_body(scim_a: Scim, monkeypatch: pytest.MonkeyPatch) -> None:
    _, user = scim_a.post("/Users", user_body("ann@x.io"))
    _, group = scim_a.post("/Groups", group_body("G"))
    parsers_forbidden = _forbid_parsers(monkeypatch)
    intruder = Scim(scim_a.directory, secret="not-the-secret")
    add = {"schemas": [PATCH_URN], "Operations": [{"op": "add", "path": "members", "value": [{"value": user["id"]}]}]}
    huge_and_invalid = b'{"Operations": [' + b'{"op": "add", "path": "members", "value": [{"value": 1}]},' * 15000
    for body in (add, huge_and_invalid, b"{not json"):
        status, answer = intruder.call("PATCH", f"/Groups/{group['id']}", body)
        assert status == 401, answer
    assert parsers_forbidden == []


def test_an_unauthenticated_filtered_list_parses_no_filter(scim_a: Scim, monkeypatch: pytest.MonkeyPatch) -> None:
    parsers_forbidden = _forbid_parsers(monkeypatch)
    intruder = Scim(scim_a.directory, secret="not-the-secret")
    for flt in ('userName eq "ann@x.io"', 'userName sw "a" and (active eq true or title co "x")', "((("):
        assert intruder.get(f"/Users?filter={quote(flt)}")[0] == 401
        assert intruder.get(f"/Groups?filter={quote(flt)}")[0] == 401
    assert intruder.post("/Users/.search", {"filter": 'userName eq "ann@x.io"'})[0] == 401
    assert parsers_forbidden == []


def test_the_embedding_api_checks_the_secret_before_the_body(scim_a: Scim, monkeypatch: pytest.MonkeyPatch) -> None:
    parsers_forbidden = _forbid_parsers(monkeypatch)
    request = {
        "method": "PATCH",
        "directoryId": str(scim_a.directory.id),
        "apiSecret": "not-the-secret",
        "resourceType": "groups",
        "resourceId": str(uuid.uuid4()),
        "body": {"Operations": [{"op": "add", "path": "members", "value": [{"value": str(uuid.uuid4())}]}]},
    }
    assert scim_request(request)["status"] == 401
    unknown = request | {"directoryId": str(uuid.uuid4()), "body": b"{not json"}
    assert scim_request(unknown)["status"] == 401
    listing = request | {"method": "GET", "resourceType": "users", "resourceId": None, "body": None}
    assert scim_request(listing | {"query": {"filter": 'userName eq "a@b.c"'}})["status"] == 401
    assert parsers_forbidden == []


def test_with_the_right_secret_the_same_requests_are_parsed(scim_a: Scim) -> None:
    # The counterpart: authenticated, the body and the filter are read as before.
    _, group = scim_a.post("/Groups", group_body("G"))
    assert scim_a.call("PATCH", f"/Groups/{group['id']}", b"{not json")[0] == 400
    assert scim_a.get(f"/Users?filter={quote('(((')}")[0] == 400
    _, user = scim_a.post("/Users", user_body("ann@x.io"))
    add = {"op": "add", "path": "members", "value": [{"value": user["id"]}]}
    assert scim_a.ops(f"/Groups/{group['id']}", add)[0] in (200, 204)
    by_name = quote('userName eq "ann@x.io"')
    status, body = scim_a.get(f"/Users?filter={by_name}")
    assert status == 200 and body["totalResults"] == 1
