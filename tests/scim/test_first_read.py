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


def test_an_equality_on_a_unique_key_is_read_without_paging_parameters(scim_a: Scim) -> None:
    """userName (users) and displayName (groups) are unique in a directory: their one row is read whole
    and paged in Python, so the statement has no LIMIT/OFFSET parameters and PostgreSQL keeps one generic
    plan for it (with them it planned every call anew)."""
    from directories.models import DirectoryGroup, DirectoryUser, ScimUser
    from scim.selectors import _unique_per_directory

    assert _unique_per_directory(DirectoryUser) == {"user_name_key"}
    assert _unique_per_directory(DirectoryGroup) == {"display_name_key"}
    assert _unique_per_directory(ScimUser) == frozenset()  # a view: no constraint to rely on
    scim_a.post("/Users", user_body("solo@x.io"))
    scim_a.post("/Groups", {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "Solo"})
    cases = (("", 1, 1), ("&startIndex=2", 1, 0), ("&count=0", 1, 0), ("&startIndex=1&count=1", 1, 1))
    for resource, flt in (("Users", 'userName eq "SOLO@x.io"'), ("Groups", 'displayName eq "solo"')):
        for query, total, returned in cases:
            with CaptureQueriesContext(connection) as ctx:
                status, body = scim_a.get(f"/{resource}?filter={quote(flt)}{query}")
            assert status == 200, body
            assert (body["totalResults"], len(body["Resources"])) == (total, returned), (resource, query)
            # The directory, the page (and a group's members): no count, and nothing paged in SQL.
            statements = [q["sql"] for q in ctx.captured_queries]
            assert len(statements) == (2 if resource == "Users" or not returned else 3), statements
            assert not any("LIMIT" in sql or "OFFSET" in sql for sql in statements), statements
    nobody = quote('userName eq "nobody@x.io"')
    for _ in range(12):
        assert scim_a.get(f"/Users?filter={nobody}")[1]["totalResults"] == 0
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans FROM pg_prepared_statements WHERE statement LIKE %s AND statement NOT LIKE %s",
            ['%"user_name_key" = $2%', "%pg_prepared_statements%"],
        )
        plans = [row[0] for row in cursor.fetchall()]
    assert plans and max(plans) > 0, plans
