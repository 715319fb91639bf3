"""Versions (RFC 7644 §3.14): meta.version and ETag, If-Match → 412 with nothing changed, If-None-Match → 304."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from directories.models import DirectoryGroup, DirectoryUser
from tests.scim.conftest import PATCH_URN, Scim, assert_scim_error, group_body, rows_of, user_body

STALE = 'W/"1"'


def _user(scim: Scim) -> dict[str, Any]:
    status, body = scim.post("/Users", user_body("ver@x.io"))
    assert status == 201, body
    assert scim.last["ETag"] == body["meta"]["version"]
    assert body["meta"]["version"].startswith('W/"')
    return body


def test_every_resource_answer_carries_its_version_as_etag(scim_a: Scim) -> None:
    user = _user(scim_a)
    status, body = scim_a.get(f"/Users/{user['id']}")
    assert status == 200 and scim_a.last["ETag"] == body["meta"]["version"] == user["meta"]["version"]
    status, body = scim_a.get(f"/Users/{user['id']}?attributes=userName")
    assert "meta" not in body and scim_a.last["ETag"] == user["meta"]["version"]  # the header still says it
    status, group = scim_a.post("/Groups", group_body("Versioned"))
    assert scim_a.last["ETag"] == group["meta"]["version"]
    status, listing = scim_a.get("/Users")
    assert listing["Resources"][0]["meta"]["version"] == user["meta"]["version"]
    assert not scim_a.last.has_header("ETag")  # a list is not one resource


def test_a_write_moves_the_version(scim_a: Scim) -> None:
    user = _user(scim_a)
    status, patched = scim_a.ops(f"/Users/{user['id']}", {"op": "replace", "path": "title", "value": "New"})
    assert status == 200 and patched["meta"]["version"] != user["meta"]["version"]
    assert scim_a.last["ETag"] == patched["meta"]["version"]


def test_if_none_match_with_the_current_version_is_304_without_a_body(scim_a: Scim) -> None:
    user = _user(scim_a)
    version = user["meta"]["version"]
    for header in (version, version.removeprefix("W/"), f'"other", {version}', "*"):
        status, body = scim_a.get(f"/Users/{user['id']}", HTTP_IF_NONE_MATCH=header)
        assert (status, body) == (304, None), header
        assert scim_a.last["ETag"] == version
    status, body = scim_a.get(f"/Users/{user['id']}", HTTP_IF_NONE_MATCH=STALE)
    assert status == 200 and body["id"] == user["id"]
    status, group = scim_a.post("/Groups", group_body("G304"))
    assert scim_a.get(f"/Groups/{group['id']}", HTTP_IF_NONE_MATCH=group["meta"]["version"])[0] == 304


@pytest.mark.parametrize("method", ["PATCH", "PUT", "DELETE"])
def test_if_match_with_another_version_is_412_and_changes_nothing(scim_hooked: Scim, method: str) -> None:
    user = _user(scim_hooked)
    before = rows_of(scim_hooked.directory)
    body: Any = None
    if method == "PATCH":
        body = {"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "title", "value": "X"}]}
    elif method == "PUT":
        body = user_body("ver@x.io", title="X")
    status, answer = scim_hooked.call(method, f"/Users/{user['id']}", body, HTTP_IF_MATCH=STALE)
    assert_scim_error(status, answer, 412)
    assert rows_of(scim_hooked.directory) == before
    status, _ = scim_hooked.call(method, f"/Users/{user['id']}", body, HTTP_IF_MATCH=user["meta"]["version"])
    assert status in (200, 204)
    assert rows_of(scim_hooked.directory) != before


def test_group_writes_honour_if_match_too(scim_hooked: Scim) -> None:
    user = _user(scim_hooked)
    status, group = scim_hooked.post("/Groups", group_body("Cond"))
    before = rows_of(scim_hooked.directory)
    add = {"op": "add", "path": "members", "value": [{"value": user["id"]}]}
    status, body = scim_hooked.ops(f"/Groups/{group['id']}", add, HTTP_IF_MATCH=STALE)
    assert_scim_error(status, body, 412)
    assert rows_of(scim_hooked.directory) == before
    status, _ = scim_hooked.ops(f"/Groups/{group['id']}", add, HTTP_IF_MATCH=group["meta"]["version"])
    assert status == 204
    new_version = scim_hooked.last["ETag"]
    assert new_version != group["meta"]["version"]
    assert DirectoryGroup.objects.get(pk=group["id"]).memberships.count() == 1
    assert scim_hooked.delete(f"/Groups/{group['id']}", HTTP_IF_MATCH=group["meta"]["version"])[0] == 412
    assert scim_hooked.delete(f"/Groups/{group['id']}", HTTP_IF_MATCH=new_version)[0] == 204


@pytest.mark.parametrize("header", ["", "abc", 'W/"unterminated', '"a" "b"', '"a";"b"', "W/", '"\x01"', "**"])
def test_a_malformed_precondition_is_400_and_changes_nothing(scim_hooked: Scim, header: str) -> None:
    user = _user(scim_hooked)
    before = rows_of(scim_hooked.directory)
    status, body = scim_hooked.ops(
        f"/Users/{user['id']}", {"op": "replace", "path": "title", "value": "X"}, HTTP_IF_MATCH=header
    )
    assert_scim_error(status, body, 400, "invalidVers")
    status, body = scim_hooked.get(f"/Users/{user['id']}", HTTP_IF_NONE_MATCH=header)
    assert_scim_error(status, body, 400, "invalidVers")
    assert rows_of(scim_hooked.directory) == before


def test_if_match_on_an_unknown_user_is_404(scim_a: Scim) -> None:
    status, body = scim_a.delete("/Users/00000000-0000-0000-0000-000000000000", HTTP_IF_MATCH="*")
    assert_scim_error(status, body, 404)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_writers_with_the_same_if_match_one_wins_the_other_gets_412(scim_a: Scim) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's (CI runs this)")
    user = _user(scim_a)
    version = user["meta"]["version"]
    results: list[int] = []
    barrier = threading.Barrier(4)

    def write(n: int) -> None:
        try:
            barrier.wait()
            client = Scim(scim_a.directory)
            status, _ = client.ops(
                f"/Users/{user['id']}", {"op": "replace", "path": "title", "value": f"T{n}"}, HTTP_IF_MATCH=version
            )
            results.append(status)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [200, 412, 412, 412]
    title = DirectoryUser.objects.get(pk=user["id"]).raw["title"]
    assert title in {"T0", "T1", "T2", "T3"}
