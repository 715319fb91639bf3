"""Every class of input that used to reach the database or the encoder unchecked, and the error funnel:
each answers a SCIM error (never a 500) and changes nothing; the funnel answers SCIM JSON with the
request id, 503 with Retry-After while the database is unavailable, and recovers on the next request."""

from __future__ import annotations

import json
import logging
import urllib.parse
from typing import Any

import orjson
import pytest
from django.db import InterfaceError, OperationalError, connection
from hypothesis import given, settings
from hypothesis import strategies as st

from directories.models import Directory, DirectoryGroup, DirectoryUser
from scim.protocol.paging import MAX_START_INDEX
from tests.scim.conftest import (
    ENTERPRISE_URN,
    LIST_URN,
    PATCH_URN,
    SCIM_CT,
    USER_URN,
    Scim,
    assert_scim_error,
    group_body,
    handler_failing,
    rows_of,
    user_body,
    wsgi_run,
)

SEARCH_URN = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"


def _user_json_with(extra: str) -> bytes:
    """A user body with `extra` (raw JSON text, e.g. a number orjson cannot write) as attribute `x`."""
    return b'{"schemas": ["%s"], "userName": "big@x.io", "x": %s}' % (USER_URN.encode(), extra.encode())


def _filter(text: str) -> str:
    return "?filter=" + urllib.parse.quote(text)


# numbers


@pytest.mark.parametrize(
    "number", ["18446744073709551616", "9223372036854775808", "-9223372036854775809", "1e19", "-2.5e30", "1e400"]
)
def test_a_number_outside_64_bits_is_refused_everywhere_and_stores_nothing(scim_hooked: Scim, number: str) -> None:
    status, user = scim_hooked.post("/Users", user_body("ann@x.io"))
    assert status == 201
    status, group = scim_hooked.post("/Groups", group_body("Ops"))
    assert status == 201
    before = rows_of(scim_hooked.directory)
    expected = "invalidValue"
    assert_scim_error(*scim_hooked.post("/Users", _user_json_with(number)), 400, expected)
    assert_scim_error(*scim_hooked.post("/Groups", b'{"displayName": "G", "x": [%s]}' % number.encode()), 400, expected)
    put = b'{"userName": "ann@x.io", "name": {"givenName": "A", "x": {"y": %s}}}' % number.encode()
    assert_scim_error(*scim_hooked.put(f"/Users/{user['id']}", put), 400, expected)
    patch = b'{"schemas": ["%s"], "Operations": [{"op": "add", "path": "x", "value": %s}]}' % (
        PATCH_URN.encode(),
        number.encode(),
    )
    assert_scim_error(*scim_hooked.patch(f"/Users/{user['id']}", patch), 400, expected)
    assert_scim_error(*scim_hooked.patch(f"/Groups/{group['id']}", patch), 400, expected)
    assert rows_of(scim_hooked.directory) == before


@pytest.mark.parametrize(
    ("body", "scim_type"),
    [
        (b'{"userName": "\\ud800"}', "invalidValue"),
        (b'{"userName": "a\\udc00b"}', "invalidValue"),
        (b'{"userName": "a@x.io", "x": "\\u0000"}', "invalidValue"),
        (b'{"userName": "a@x.io", "x": NaN}', "invalidSyntax"),
        (b'{"userName": "a@x.io", "x": Infinity}', "invalidSyntax"),
        (b'{"userName": "a@x.io", "x": "\xff"}', "invalidSyntax"),
        (b"[" * 100_000 + b"]" * 100_000, "invalidSyntax"),
        (b'{"userName": "a@x.io", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}", "invalidSyntax"),
    ],
)
def test_a_body_with_text_that_cannot_be_stored_is_invalid_value_and_broken_json_invalid_syntax(
    scim_a: Scim, body: bytes, scim_type: str
) -> None:
    before = rows_of(scim_a.directory)
    assert_scim_error(*scim_a.post("/Users", body), 400, scim_type)
    assert rows_of(scim_a.directory) == before


def test_numbers_inside_64_bits_and_ids_that_look_like_exponents_are_kept(scim_a: Scim) -> None:
    body = user_body("nums@x.io", x=[9223372036854775807, -9223372036854775808, 1.5e18, 0.1], externalId="4e12-9e99")
    status, created = scim_a.post("/Users", body)
    assert status == 201, created
    assert scim_a.get(f"/Users/{created['id']}")[1]["x"] == [9223372036854775807, -9223372036854775808, 1.5e18, 0.1]


def test_a_number_a_row_already_holds_beyond_64_bits_does_not_break_any_read(scim_a: Scim) -> None:
    status, user = scim_a.post("/Users", user_body("old@x.io"))
    status, group = scim_a.post("/Groups", group_body("Old"))
    # Rows written before the input gate existed: the encoder refuses these numbers.
    row = DirectoryUser.objects.get(id=user["id"])
    DirectoryUser.objects.filter(id=row.id).update(raw={**row.raw, "big": 2**64})
    group_row = DirectoryGroup.objects.get(id=group["id"])
    DirectoryGroup.objects.filter(id=group_row.id).update(raw={**group_row.raw, "big": -(2**70)})
    for path in ("/Users", "/Users" + _filter('userName co "old"'), f"/Users/{user['id']}", "/Groups"):
        response = scim_a.client.get(scim_a.base + path)
        assert response.status_code == 200 and response["Content-Type"] == SCIM_CT, path
        document = json.loads(response.content)
        resource = document["Resources"][0] if "Resources" in document else document
        assert float(resource["big"]) == float(2**64 if path != "/Groups" else -(2**70)), path


# names that grow when normalised


@pytest.mark.parametrize("grows", ["ß" * 300, "ﬃ" * 200, "İ" * 300])
def test_a_name_within_the_limit_whose_normalised_form_is_not_is_refused(scim_a: Scim, grows: str) -> None:
    status, user = scim_a.post("/Users", user_body("keep@x.io"))
    status, group = scim_a.post("/Groups", group_body("Keep"))
    before = rows_of(scim_a.directory)
    assert_scim_error(*scim_a.post("/Users", user_body(grows)), 400, "invalidValue")
    assert_scim_error(*scim_a.put(f"/Users/{user['id']}", user_body(grows)), 400, "invalidValue")
    replace = {"op": "replace", "path": "userName", "value": grows}
    assert_scim_error(*scim_a.ops(f"/Users/{user['id']}", replace), 400, "invalidValue")
    assert_scim_error(*scim_a.post("/Groups", group_body(grows)), 400, "invalidValue")
    assert_scim_error(*scim_a.put(f"/Groups/{group['id']}", group_body(grows)), 400, "invalidValue")
    rename = {"op": "replace", "path": "displayName", "value": grows}
    assert_scim_error(*scim_a.ops(f"/Groups/{group['id']}", rename), 400, "invalidValue")
    assert rows_of(scim_a.directory) == before


def test_a_name_whose_normalised_form_just_fits_is_stored(scim_a: Scim) -> None:
    status, user = scim_a.post("/Users", user_body("ß" * 256))
    assert status == 201, user
    assert DirectoryUser.objects.get(id=user["id"]).user_name_key == "ss" * 256


# filters


@pytest.mark.parametrize("escape", ["\\u0000", "\\ud800", "a\\udc00b", "\\u0000\\ud800"])
def test_an_escape_in_a_filter_string_that_cannot_be_stored_is_invalid_filter(scim_a: Scim, escape: str) -> None:
    scim_a.post("/Users", user_body())
    for path in ("/Users", "/Groups"):
        for text in (f'userName eq "{escape}"', f'displayName co "{escape}"', f'emails[value eq "{escape}"]'):
            assert_scim_error(*scim_a.get(path + _filter(text)), 400, "invalidFilter")
        search = {"schemas": [SEARCH_URN], "filter": f'externalId eq "{escape}"'}
        assert_scim_error(*scim_a.post(f"{path}/.search", search), 400, "invalidFilter")


def test_a_raw_nul_or_a_number_beyond_64_bits_in_a_filter_is_invalid_filter(scim_a: Scim) -> None:
    for text in ("userName eq \x00", "meta.created gt 18446744073709551616", "externalId eq 1e400"):
        assert_scim_error(*scim_a.get("/Users" + _filter(text)), 400, "invalidFilter")


# query parameters


@pytest.mark.parametrize("start", ["18446744073709551616", "9" * 200, str(2**63), str(MAX_START_INDEX + 1)])
def test_a_start_index_beyond_any_directory_gives_an_empty_page(scim_a: Scim, start: str) -> None:
    scim_a.post("/Users", user_body())
    scim_a.post("/Groups", group_body())
    for path in ("/Users", "/Groups"):
        status, page = scim_a.get(f"{path}?startIndex={start}")
        assert status == 200, page
        assert page["schemas"] == [LIST_URN] and page["Resources"] == [] and page["itemsPerPage"] == 0
        assert page["totalResults"] == 1 and page["startIndex"] == MAX_START_INDEX
    status, page = scim_a.get("/Users" + _filter('userName eq "jane@example.com"') + f"&startIndex={start}")
    assert status == 200 and page["Resources"] == [] and page["totalResults"] == 1


@pytest.mark.parametrize("count", ["18446744073709551616", "9" * 200, str(2**63)])
def test_a_huge_count_is_capped_at_the_advertised_maximum(scim_a: Scim, count: str, settings: Any) -> None:
    settings.SCIM_MAX_RESULTS = 2
    for name in ("a@x.io", "b@x.io", "c@x.io"):
        scim_a.post("/Users", user_body(name))
    for path in ("/Users", "/Groups"):
        status, page = scim_a.get(f"{path}?count={count}")
        assert status == 200
    assert scim_a.get(f"/Users?count={count}")[1]["itemsPerPage"] == 2
    assert scim_a.get(f"/Users?count=-{count}")[1]["itemsPerPage"] == 0


@pytest.mark.parametrize("value", ["1_000", "١٢", "1.5", "0x10", " ", "+-1"])
def test_a_start_index_or_count_that_is_not_plain_digits_is_invalid_value(scim_a: Scim, value: str) -> None:
    for name in ("startIndex", "count"):
        assert_scim_error(*scim_a.get(f"/Users?{name}={urllib.parse.quote(value)}"), 400, "invalidValue")


def test_a_nul_in_any_query_value_or_path_segment_is_refused(scim_a: Scim) -> None:
    status, user = scim_a.post("/Users", user_body())
    assert_scim_error(*scim_a.get("/Users?attributes=userName%00"), 400, "invalidValue")
    assert_scim_error(*scim_a.get("/Users?excludedAttributes=%ED%A0%80x"), 400)  # undecodable: replaced, unknown
    assert_scim_error(*scim_a.get(f"/Users/{user['id']}%00"), 404)
    assert_scim_error(*scim_a.get("/Groups/%00"), 404)


# PATCH results


def test_a_pathless_replace_cannot_store_a_non_element_in_a_multi_valued_attribute(scim_hooked: Scim) -> None:
    status, user = scim_hooked.post("/Users", user_body())
    before = rows_of(scim_hooked.directory)
    for value in ({"emails": {}}, {"emails": [{}]}, {"emails": ["a@x.io"]}, {"phoneNumbers": 5}, {"name": "x"}):
        assert_scim_error(*scim_hooked.ops(f"/Users/{user['id']}", {"op": "replace", "value": value}), 400)
    assert rows_of(scim_hooked.directory) == before
    assert scim_hooked.get(f"/Users/{user['id']}")[1]["emails"] == user["emails"]


@pytest.mark.parametrize(
    "path",
    [
        'emails[foo eq "x"].value',
        'emails[type eq "work" and foo eq "x"]',
        'emails[name.givenName eq "x"].value',
        'addresses[value eq "x"].locality',
        'phoneNumbers[type eq "work"].bogus',
    ],
)
def test_a_value_filter_path_on_an_unknown_sub_attribute_is_invalid_path(scim_a: Scim, path: str) -> None:
    status, user = scim_a.post("/Users", user_body())
    before = rows_of(scim_a.directory)
    for op in ("add", "replace", "remove"):
        operation = {"op": op, "path": path, "value": "x"}
        assert_scim_error(*scim_a.ops(f"/Users/{user['id']}", operation), 400, "invalidPath")
    assert rows_of(scim_a.directory) == before


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ('emails[type eq "work"].value', {"a": 1}),
        ('emails[type eq "work"].primary', "maybe"),
        ("name.givenName", ["x"]),
        ("addresses", [{"locality": 5}]),
        ("urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager", 5),
        ("urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager.value", {"x": 1}),
    ],
)
def test_a_patch_value_of_the_wrong_type_is_invalid_value(scim_a: Scim, path: str, value: Any) -> None:
    status, user = scim_a.post("/Users", user_body())
    before = rows_of(scim_a.directory)
    assert_scim_error(
        *scim_a.ops(f"/Users/{user['id']}", {"op": "replace", "path": path, "value": value}), 400, "invalidValue"
    )
    assert rows_of(scim_a.directory) == before


def test_a_manager_sent_as_a_bare_id_is_kept_as_the_schema_object_and_a_number_is_refused(scim_a: Scim) -> None:
    status, user = scim_a.post("/Users", user_body(**{ENTERPRISE_URN: {"manager": "mgr-7", "department": "Ops"}}))
    assert status == 201 and user[ENTERPRISE_URN]["manager"] == {"value": "mgr-7"}
    assert scim_a.get(f"/Users/{user['id']}")[1][ENTERPRISE_URN] == {"manager": {"value": "mgr-7"}, "department": "Ops"}
    before = rows_of(scim_a.directory)
    assert_scim_error(*scim_a.post("/Users", user_body("b@x.io", **{ENTERPRISE_URN: {"manager": 7}})), 400)
    assert rows_of(scim_a.directory) == before


def test_a_value_filter_path_on_a_known_sub_attribute_still_adds_the_element(scim_a: Scim) -> None:
    status, user = scim_a.post("/Users", user_body())
    op = {"op": "replace", "path": 'emails[type eq "home"].value', "value": "home@x.io"}
    status, patched = scim_a.ops(f"/Users/{user['id']}", op)
    assert status == 200 and {"type": "home", "value": "home@x.io"} in patched["emails"]


# .search


def test_search_on_users_and_groups_answers_exactly_like_the_get_list(scim_a: Scim) -> None:
    for name in ("ann@x.io", "bob@x.io", "cy@x.io"):
        scim_a.post("/Users", user_body(name))
    scim_a.post("/Groups", group_body("Ops"))
    scim_a.post("/Groups", group_body("Dev"))
    query = "filter=" + urllib.parse.quote('userName sw "b" or userName sw "c"') + "&startIndex=2&count=1"
    search = {
        "schemas": [SEARCH_URN],
        "filter": 'userName sw "b" or userName sw "c"',
        "startIndex": 2,
        "count": 1,
        "attributes": ["userName"],
    }
    assert scim_a.post("/Users/.search", search) == scim_a.get(f"/Users?{query}&attributes=userName")
    groups = {"schemas": [SEARCH_URN], "excludedAttributes": ["members"], "COUNT": 5}
    assert scim_a.post("/Groups/.search", groups) == scim_a.get("/Groups?excludedAttributes=members&count=5")
    assert scim_a.post("/Users/.search", {"schemas": [SEARCH_URN]}) == scim_a.get("/Users")


def test_root_search_lists_users_then_groups_and_pages_across_both(scim_a: Scim) -> None:
    users = [scim_a.post("/Users", user_body(name))[1]["id"] for name in ("ann@x.io", "bob@x.io")]
    groups = [scim_a.post("/Groups", group_body(name))[1]["id"] for name in ("Ops", "Dev")]
    seen = []
    for start in (1, 2, 3, 4, 5):
        status, page = scim_a.post("/.search", {"schemas": [SEARCH_URN], "startIndex": start, "count": 1})
        assert status == 200 and page["totalResults"] == 4 and page["startIndex"] == start
        seen += [resource["id"] for resource in page["Resources"]]
    assert seen == users + groups
    status, page = scim_a.post("/.search", {"schemas": [SEARCH_URN], "startIndex": 2, "count": 2})
    assert [r["id"] for r in page["Resources"]] == [users[1], groups[0]]
    # A filter only users can answer: groups contribute nothing; one that neither can is a 400.
    status, page = scim_a.post("/.search", {"schemas": [SEARCH_URN], "filter": 'userName eq "bob@x.io"'})
    assert status == 200 and [r["id"] for r in page["Resources"]] == [users[1]] and page["totalResults"] == 1
    status, page = scim_a.post("/.search", {"schemas": [SEARCH_URN], "filter": 'displayName eq "dev"'})
    assert [r["id"] for r in page["Resources"]] == [groups[1]]
    assert_scim_error(*scim_a.post("/.search", {"filter": "nickName eq 1 and ("}), 400, "invalidFilter")
    assert scim_a.post("/.search", {"filter": 'password eq "x"'})[0] == 403


@pytest.mark.parametrize(
    ("body", "scim_type"),
    [
        ({"schemas": ["urn:x"]}, "invalidSyntax"),
        ([], "invalidSyntax"),
        ({"sortBy": "nosuch"}, "invalidValue"),
        ({"sortBy": 7}, "invalidValue"),
        ({"sortOrder": "sideways"}, "invalidValue"),
        ({"startIndex": "1"}, "invalidValue"),
        ({"count": 1.5}, "invalidValue"),
        ({"attributes": [1]}, "invalidValue"),
        ({"filter": 5}, "invalidValue"),
        (b'{"startIndex": 18446744073709551616}', "invalidValue"),
        (b'{"count": 9223372036854775808}', "invalidValue"),
    ],
)
def test_a_search_body_that_is_not_a_search_request_is_a_400(scim_a: Scim, body: Any, scim_type: str) -> None:
    for path in ("/Users/.search", "/Groups/.search", "/.search"):
        assert_scim_error(*scim_a.post(path, body), 400, scim_type)


def test_search_routes_answer_only_post(scim_a: Scim) -> None:
    for path in ("/Users/.search", "/Groups/.search", "/.search"):
        status, body = scim_a.get(path)
        assert_scim_error(status, body, 405)
        assert scim_a.last["Allow"] == "POST"


# the error funnel


def test_every_answer_carries_a_request_id_and_echoes_a_sane_one(scim_a: Scim) -> None:
    scim_a.get("/Users")
    generated = scim_a.last["X-Request-Id"]
    assert len(generated) == 32
    scim_a.get("/Users", HTTP_X_REQUEST_ID="lb-1234.abc_9")
    assert scim_a.last["X-Request-Id"] == "lb-1234.abc_9"
    scim_a.get("/Nothing", HTTP_X_REQUEST_ID="bad id\nforged log line")
    assert scim_a.last.status_code == 404 and scim_a.last["X-Request-Id"] not in ("", "bad id\nforged log line")
    assert Scim(scim_a.directory, secret="wrong").get("/Users", HTTP_X_REQUEST_ID="x" * 129)[0] == 401


def test_an_unexpected_exception_is_a_scim_500_with_the_request_id_logged_once(
    scim_a: Scim, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    handler_failing(monkeypatch, "users", "POST", RuntimeError("boom"))
    with caplog.at_level(logging.INFO, logger="roster.scim"):
        status, body = scim_a.post("/Users?filter=secret-query", user_body("pii@x.io"), HTTP_X_REQUEST_ID="trace-500")
    assert_scim_error(status, body, 500)
    assert scim_a.last["X-Request-Id"] == "trace-500" and "trace-500" in body["detail"]
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(records) == 1 and records[0].name == "roster.scim" and records[0].exc_info is not None
    logged = caplog.text
    assert "trace-500" in logged and "boom" in logged
    assert "pii@x.io" not in logged and "secret-query" not in logged
    assert scim_a.directory.scim_secret not in logged


@pytest.mark.parametrize(
    "error",
    [OperationalError("server closed the connection unexpectedly"), InterfaceError("connection already closed")],
)
def test_a_database_error_is_a_503_with_retry_after_and_one_line_without_traceback(
    scim_a: Scim, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, error: Exception
) -> None:
    import scim.processor

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(scim.processor, "authenticate", failing)
    with caplog.at_level(logging.INFO, logger="roster.scim"):
        status, body = scim_a.get("/Users", HTTP_X_REQUEST_ID="db-down-1")
    assert_scim_error(status, body, 503)
    assert scim_a.last["Retry-After"] == "5" and "db-down-1" in body["detail"]
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]  # django.request's line too
    assert len(records) == 1 and records[0].name == "roster.scim" and records[0].exc_info is None
    assert type(error).__name__ in records[0].getMessage() and "db-down-1" in records[0].getMessage()
    assert str(error) not in records[0].getMessage()  # the class only: a driver message may quote the query


def _wsgi(app: Any, method: str, path: str, body: bytes = b"", **environ: str) -> tuple[int, dict[str, str], Any]:
    status, headers, out = wsgi_run(app, path, method=method, body=body, **environ)
    return int(status.split()[0]), dict(headers), orjson.loads(out) if out else None


@pytest.mark.django_db(transaction=True)
def test_a_dropped_database_connection_is_a_503_and_the_next_request_reconnects(
    directory_a: Directory, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The production path (scim.http.wsgi, which sends request_started/request_finished as a server does): the
    backend of the connection is terminated from a second connection between two requests."""
    if connection.vendor != "postgresql":
        pytest.skip("terminating a backend is PostgreSQL's (CI runs this)")
    import psycopg

    from config.wsgi import application

    app = application.scim
    # Production's connection settings: kept between requests, no health check at request start (the
    # broken connection is found by the request that uses it).
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 600)
    monkeypatch.setitem(connection.settings_dict, "CONN_HEALTH_CHECKS", False)
    connection.close()
    base = f"/api/scim/v2.0/{directory_a.id}"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {directory_a.scim_secret}"}
    body = orjson.dumps(user_body("before@x.io"))
    assert _wsgi(app, "POST", f"{base}/Users", body, **auth)[0] == 201
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    db = connection.settings_dict
    with psycopg.connect(
        dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"], host=db["HOST"], port=db["PORT"], autocommit=True
    ) as other:
        assert other.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()[0] is True
    # caplog listens on the root logger, which this record reaches only while logging is configured as
    # Django left it; a test that configures logging again (server.web's) can change that. So its handler
    # listens on this logger itself.
    scim_logger = logging.getLogger("roster.scim")
    monkeypatch.setattr(scim_logger, "handlers", [*scim_logger.handlers, caplog.handler])
    with caplog.at_level(logging.INFO, logger="roster.scim"):
        status, headers, error = _wsgi(app, "GET", f"{base}/Users", **auth)
        assert status == 503 and headers["Retry-After"] == "5" and headers["Content-Type"] == SCIM_CT
        assert_scim_error(status, error, 503)
        status, headers, error = _wsgi(app, "POST", f"{base}/Users", orjson.dumps(user_body("down@x.io")), **auth)
        # The first request's end closed the broken connection: this one connects anew.
    assert status == 201, error
    # The same handler may also get the record through the root logger: count each record once.
    records = list({id(r): r for r in caplog.records if r.name == "roster.scim"}.values())
    assert len(records) == 1 and records[0].exc_info is None
    status, _, page = _wsgi(app, "GET", f"{base}/Users", **auth)
    assert status == 200 and page["totalResults"] == 2
    assert DirectoryUser.objects.filter(directory=directory_a).count() == 2


# large bodies stay linear


elements = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                "value": st.one_of(st.sampled_from(["a@x.io", "A@X.IO", "b@x.io", "ß", "SS", "ss"]), st.integers(0, 2)),
                "type": st.sampled_from(["work", "home"]),
                "primary": st.booleans(),
            },
        ),
        st.sampled_from(["a@x.io", "A@x.io", 1, 1.0, True, None]),
        st.lists(st.integers(0, 1), max_size=2),
    ),
    max_size=8,
)


@settings(max_examples=300, deadline=None, database=None)
@given(current=elements, added=elements)
def test_the_bucketed_element_merge_keeps_exactly_what_the_pairwise_rule_keeps(current: list, added: list) -> None:
    """PATCH add/remove on multi-valued attributes compares elements within buckets (linear time for
    bodies with tens of thousands of elements): the result must be the one comparing every pair gives."""
    from scim.protocol.documents.patch import _Elements, _same

    merged = list(current)
    for item in added:
        if not any(_same(item, existing) for existing in merged):
            merged.append(item)
    bucketed = _Elements(current)
    for item in added:
        if not bucketed.has(item):
            bucketed.add(item)
    assert bucketed.items == merged
    gone = _Elements(added)
    assert [i for i in current if not gone.has(i)] == [i for i in current if not any(_same(i, v) for v in added)]


def test_an_attribute_list_longer_than_any_schema_is_invalid_value_and_repeats_count_once(scim_a: Scim) -> None:
    scim_a.post("/Users", user_body())
    names = [f"a{i}" for i in range(300)]
    assert_scim_error(*scim_a.post("/Users/.search", {"attributes": names}), 400, "invalidValue")
    assert_scim_error(*scim_a.get("/Users?excludedAttributes=" + ",".join(names)), 400, "invalidValue")
    status, page = scim_a.get("/Users?attributes=" + ",".join(["userName"] * 200))
    assert status == 200 and set(page["Resources"][0]) == {"id", "schemas", "userName"}
