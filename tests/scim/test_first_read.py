"""The first read of a GET by what its URL names (one user, or an unfiltered page) comes with the directory
lookup of the authentication on PostgreSQL (scim.storage.postgres): one query, and nothing read is
answered before the secret is checked. A filter is parsed only after authentication, so a filtered
page is read after the lookup. On SQLite these skip (no LATERAL; two queries there)."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from directories.services import directory_update
from tests.actors import TEST_ACTOR
from tests.scim.conftest import Scim, user_body

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("LATERAL joins are PostgreSQL's (CI runs these)")


def _one_query(call: object) -> tuple[int, dict]:
    with CaptureQueriesContext(connection) as ctx:
        status, body = call()  # type: ignore[operator]
    assert len(ctx.captured_queries) == 1, [q["sql"][:80] for q in ctx.captured_queries]
    return status, body


def test_get_user_is_one_query_and_the_same_document(scim_a: Scim) -> None:
    _, created = scim_a.post("/Users", user_body("ann@x.io", title="Eng"))
    status, body = _one_query(lambda: scim_a.get(f"/Users/{created['id']}"))
    assert status == 200 and body == created


def test_missing_and_foreign_users_are_404_in_one_query(scim_a: Scim, scim_b: Scim) -> None:
    _, theirs = scim_b.post("/Users", user_body("bo@x.io"))
    assert _one_query(lambda: scim_a.get(f"/Users/{theirs['id']}"))[0] == 404
    assert _one_query(lambda: scim_a.get("/Users/7d0f4c44-63c8-4f7e-9d1b-1f2d9b0c1c11"))[0] == 404


def test_wrong_secret_or_deactivated_directory_answers_nothing_read(scim_a: Scim) -> None:
    _, created = scim_a.post("/Users", user_body("cy@x.io"))
    intruder = Scim(scim_a.directory, secret="not-the-secret")
    by_name = quote('userName eq "cy@x.io"')
    for path in (f"/Users/{created['id']}", f"/Users?filter={by_name}"):
        status, body = intruder.get(path)
        assert status == 401 and "cy@x.io" not in str(body) and created["id"] not in str(body)
    directory_update(actor=TEST_ACTOR, directory=scim_a.directory, data={"deactivated": True})
    status, body = scim_a.get(f"/Users/{created['id']}")
    assert status == 403 and "cy@x.io" not in str(body)


def test_equality_filter_pages_are_one_query_after_authentication_when_the_page_is_the_whole_result(
    scim_a: Scim,
) -> None:
    for i in range(3):
        scim_a.post("/Users", user_body(f"u{i}@x.io", externalId="shared"))
    scim_a.post("/Users", user_body("other@x.io", externalId="other"))
    flt = quote('externalId eq "shared"')
    nobody = quote('userName eq "nobody@x.io"')
    for path, queries in ((f"/Users?filter={flt}", 2), (f"/Users?filter={nobody}", 2)):
        with CaptureQueriesContext(connection) as ctx:
            status, body = scim_a.get(path)
        assert len(ctx.captured_queries) == queries  # the directory lookup, then the page (no count needed)
        if "nobody" in path:
            assert status == 200 and body["totalResults"] == 0 and body["Resources"] == []
        else:
            assert status == 200 and body["totalResults"] == 3
            assert [r["userName"] for r in body["Resources"]] == ["u0@x.io", "u1@x.io", "u2@x.io"]
    # A page that is not the whole result needs the count too: three queries, same answer as before.
    with CaptureQueriesContext(connection) as ctx:
        status, body = scim_a.get(f"/Users?filter={flt}&startIndex=2&count=1")
    assert len(ctx.captured_queries) == 3
    assert (body["totalResults"], body["startIndex"], body["itemsPerPage"]) == (3, 2, 1)
    assert [r["userName"] for r in body["Resources"]] == ["u1@x.io"]
