"""Property-based fuzzing of the SCIM surface (hypothesis): bodies, PATCH operations, filters and query
parameters, sent over the real HTTP path, alternately through Django's handler (django.test.Client)
and through the WSGI entry production serves (config.wsgi → scim.http.wsgi).

Every answer must hold these properties:
- never a 5xx;
- every answer carries X-Request-Id, and every answer with a body is `application/scim+json` JSON;
- every 4xx is an RFC 7644 §3.12 error (schemas, status as a string, detail);
- after a 4xx, no user, group, membership or outbox row changed;
- a 2xx write reads back as it was answered (GET returns what the write returned).

The generators mix what identity providers send with what they never should: values of every JSON
type, integers past 64 bits, floats with large exponents, NUL and lone-surrogate escapes, names that
grow under NFC + case folding ("ß", "ﬃ", "İ" runs), nesting past the depth limit, PATCH paths with
value filters, extension URNs and read-only attributes, filters built from the grammar plus raw junk.

On PostgreSQL these tests run in transaction mode (tests/conftest.py), the single-statement path
production takes; the module's own marker makes them transactional on SQLite too, because the WSGI
entry closes connections at the end of each request the way a server does.

Size: each test runs FUZZ_EXAMPLES examples, 200 by default: 6 tests, 1,200 generated cases per CI
run (about a minute on PostgreSQL). Before a release, run it longer, e.g.
`FUZZ_EXAMPLES=5000 bash scripts/test.sh tests/scim/test_fuzz.py -q` (add
`--hypothesis-show-statistics` to see how the answers were distributed: the generators keep most
requests valid apart from one hostile part, so that writes get through and their read-back is tested).
"""

from __future__ import annotations

import json
import os
import urllib.parse
import uuid
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from config.requestlimits import REQUEST_LINE_MAX, request_line_length
from config.wsgi import application
from directories.models import Directory
from tests.scim.conftest import (
    ENTERPRISE_URN,
    ERROR_URN,
    GROUP_URN,
    PATCH_URN,
    SCIM_CT,
    USER_URN,
    group_body,
    rows_of,
    user_body,
    wsgi_run,
)

pytestmark = pytest.mark.django_db(transaction=True)

settings.register_profile(
    "scim-fuzz",
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "200")),
    deadline=None,
    database=None,  # no example database written into the tree
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ = settings.get_profile("scim-fuzz")
SEARCH_URN = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"

# --- generators ---------------------------------------------------------------------------------

GROWING = ["ß", "ﬁ", "ﬃ", "İ", "ŉ", "ΐ", "ǰ"]
SPECIAL_TEXT = ["\x00", "a\x00b", "\ud800", "x\udfffy", "\ud83d", "", " ", "İ", "\u0301e", "e\u0301", "\ufeff"]
grown = st.builds(lambda ch, n: ch * n, st.sampled_from(GROWING), st.integers(min_value=100, max_value=600))
texts = st.one_of(
    st.text(max_size=20),
    st.text(st.characters(exclude_categories=()), max_size=8),  # surrogates included
    st.sampled_from(SPECIAL_TEXT),
    grown,
)
numbers = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([2**63, -(2**63) - 1, 2**64, 2**70, -(2**63), 2**63 - 1]),
    st.floats(allow_nan=False),  # infinities included: written as "Infinity", which is not JSON
    st.sampled_from([1e19, -1e19, 1e300, 5e-324, -0.0, 9.223372036854776e18]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
keys = st.one_of(st.sampled_from(["value", "type", "primary", "display", "x", "$ref", "givenName"]), texts)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=12
)


def _nest(depth: int) -> Any:
    value: Any = "deep"
    for level in range(depth):
        value = [value] if level % 2 else {"n": value}
    return value


deep = st.integers(min_value=28, max_value=40).map(_nest)
any_value = st.integers(min_value=0, max_value=4).flatmap(lambda i: deep if i == 2 else json_values)
hostile = st.one_of(texts, grown, json_values, deep)
sane_text = st.from_regex(r"[A-Za-z][A-Za-z0-9 ._-]{0,15}", fullmatch=True)
sane_names = st.from_regex(r"[a-z]{1,8}(\.[a-z]{1,5})?@x\.io", fullmatch=True)
sane_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15),
        sane_text,
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(sane_text, inner, max_size=3),
    max_leaves=8,
)


def mostly(sane: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually a value an identity provider sends, sometimes a hostile one: a request with one bad part
    tests that part, and enough requests get through to test the read-back."""
    return st.integers(min_value=0, max_value=6).flatmap(lambda i: hostile if i == 3 else sane)


names = mostly(sane_names)
emails = mostly(
    st.lists(
        st.fixed_dictionaries(
            {"value": names},
            optional={"type": mostly(st.sampled_from(["work", "home"])), "primary": mostly(st.booleans())},
        ),
        max_size=3,
    )
)
user_documents = st.fixed_dictionaries(
    {"schemas": st.just([USER_URN]), "userName": names},
    optional={
        "name": mostly(st.fixed_dictionaries({}, optional={"givenName": mostly(sane_text), "familyName": names})),
        "emails": emails,
        "active": mostly(st.sampled_from([True, False, "True", "false"])),
        "externalId": mostly(sane_text),
        "displayName": mostly(sane_text),
        "x-custom": mostly(sane_json),
        "meta": any_value,
        "groups": any_value,
        ENTERPRISE_URN: mostly(
            st.fixed_dictionaries(
                {}, optional={"manager": mostly(st.fixed_dictionaries({"value": sane_text})), "department": names}
            )
        ),
    },
)
group_documents = st.fixed_dictionaries(
    {"schemas": st.just([GROUP_URN]), "displayName": mostly(sane_text)},
    optional={"externalId": mostly(sane_text), "x-custom": mostly(sane_json), "members": any_value},
)
bodies = st.one_of(user_documents, group_documents, any_value)
user_bodies = st.integers(min_value=0, max_value=4).flatmap(lambda i: bodies if i == 2 else user_documents)
group_bodies = st.integers(min_value=0, max_value=4).flatmap(lambda i: bodies if i == 2 else group_documents)

FILTER_ATTRIBUTES = [
    "userName",
    "externalId",
    "id",
    "active",
    "name.givenName",
    "name.familyName",
    "emails",
    "emails.value",
    "emails.type",
    "emails.primary",
    "meta.created",
    "meta.lastModified",
    "displayName",
    "members",
    "members.value",
    "title",
    "password",
    f"{ENTERPRISE_URN}:department",
    f"{USER_URN}:userName",
    "urn:example:custom:User:level",
    "USERNAME",
    "x-y",
    "phoneNumbers.value",
    "addresses.locality",
    "x509Certificates.value",
    "groups",
    "groups.display",
    "nickName",
    "name",
    f"{ENTERPRISE_URN}:manager.value",
    f"{ENTERPRISE_URN}:manager",
    "meta.resourceType",
]
OPERATORS = ["eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le", "EQ", "Sw", "xx"]
LITERALS = [
    "true",
    "false",
    "null",
    "1",
    "-5",
    "1e400",
    "18446744073709551616",
    "1.5",
    '"\\u0000"',
    '"\\ud800"',
    '"a\\udc00"',
    '"2020-01-01T00:00:00Z"',
    '"jane@example.com"',
    "unquoted",
    '"\\"',
]
literal = st.one_of(
    texts.map(lambda t: json.dumps(t, ensure_ascii=False)), texts.map(json.dumps), st.sampled_from(LITERALS)
)
attribute = st.sampled_from(FILTER_ATTRIBUTES)
comparison = st.one_of(
    st.builds(lambda a, o, v: f"{a} {o} {v}", attribute, st.sampled_from(OPERATORS), literal),
    attribute.map(lambda a: f"{a} pr"),
)
filters_built = st.recursive(
    comparison,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"{a} and {b}", inner, inner),
        st.builds(lambda a, b: f"{a} OR {b}", inner, inner),
        inner.map(lambda a: f"not ({a})"),
        inner.map(lambda a: f"({a})"),
        st.builds(lambda a, f: f"{a}[{f}]", st.sampled_from(["emails", "members", "addresses", "name"]), inner),
        st.builds(lambda f, s: f'emails[{f}].{s} eq "x"', inner, st.sampled_from(["value", "type", "bogus"])),
    ),
    max_leaves=6,
)
filters = st.one_of(filters_built, texts, st.text(alphabet='()[]" andortqx\\.', max_size=30))

PATCH_PATHS = [
    "userName",
    "displayName",
    "name.givenName",
    "name.bogus",
    "name",
    "emails",
    "emails.value",
    'emails[type eq "work"].value',
    'emails[type eq "work"]',
    'emails[foo eq "x"].value',
    'emails[value co "@"].primary',
    'addresses[type eq "home"].locality',
    'phoneNumbers[type eq "mobile"].value',
    "active",
    "externalId",
    "members",
    'members[value eq "00000000-0000-0000-0000-000000000000"]',
    ENTERPRISE_URN,
    f"{ENTERPRISE_URN}:manager",
    f"{ENTERPRISE_URN}:manager.value",
    f"{ENTERPRISE_URN}:department",
    "urn:example:custom:2.0:User:level",
    "meta",
    "id",
    "schemas",
    "groups",
    "password",
    "nickName",
    "title",
    "x.y.z",
    "emails[",
    "",
]
paths = st.one_of(
    st.sampled_from(PATCH_PATHS),
    st.builds(
        lambda a, f, s: f"{a}[{f}]{s}",
        st.sampled_from(["emails", "members", "phoneNumbers"]),
        filters_built,
        st.sampled_from(["", ".value", ".type", ".display", ".nope"]),
    ),
    texts,
)


def _operations(kind: str, member_ids: list[str]) -> Any:
    """PatchOp bodies: mostly operations an identity provider sends for `kind` (a known path with a
    value of its type), some removals, some hostile operations (any op, path and value)."""
    members = st.lists(st.fixed_dictionaries({"value": mostly(st.sampled_from(member_ids))}), max_size=3)
    if kind == "Users":
        pairs = st.one_of(
            st.tuples(
                st.sampled_from(["name.givenName", "name.familyName", "displayName", "title"]), mostly(sane_text)
            ),
            st.tuples(st.sampled_from(["userName", 'emails[type eq "work"].value', "emails.value"]), names),
            st.tuples(st.just("emails"), emails),
            st.tuples(st.just("active"), mostly(st.sampled_from([True, False, "True", "False"]))),
            st.tuples(st.sampled_from([f"{ENTERPRISE_URN}:department", f"{ENTERPRISE_URN}:manager"]), names),
            st.tuples(st.just(f"{ENTERPRISE_URN}:manager.value"), mostly(sane_text)),
            st.tuples(st.just("urn:example:custom:2.0:User:level"), mostly(sane_json)),
            st.tuples(
                st.none(),
                st.fixed_dictionaries(
                    {},
                    optional={
                        "name.familyName": mostly(sane_text),
                        "active": mostly(st.booleans()),
                        "displayName": mostly(sane_text),
                        "emails": emails,
                    },
                ),
            ),
        )
        removable = ["title", "name.givenName", 'emails[type eq "work"]', "emails", f"{ENTERPRISE_URN}:manager"]
    else:
        pairs = st.one_of(
            st.tuples(st.sampled_from(["displayName", "externalId"]), mostly(sane_text)),
            st.tuples(st.just("members"), mostly(members)),
            st.tuples(st.none(), st.fixed_dictionaries({}, optional={"displayName": mostly(sane_text)})),
        )
        removable = ["externalId", "members", *(f'members[value eq "{i}"]' for i in member_ids)]

    def build(op: str, pair: tuple[str | None, Any]) -> dict[str, Any]:
        path, value = pair
        return {"op": op, "value": value} if path is None else {"op": op, "path": path, "value": value}

    sane = st.builds(build, st.sampled_from(["add", "replace", "Add", "Replace"]), pairs)
    removal = st.sampled_from(removable).map(lambda path: {"op": "remove", "path": path})
    junk = st.fixed_dictionaries(
        {"op": st.sampled_from(["add", "replace", "remove", "Remove", "bogus"]) | texts},
        optional={
            "path": paths | json_values,
            "value": st.one_of(any_value, members, user_documents, st.just({"emails": {}})),
        },
    )
    operation = st.integers(min_value=0, max_value=5).flatmap(lambda i: junk if i == 2 else removal if i == 4 else sane)
    return mostly(
        st.fixed_dictionaries(
            {"schemas": st.just([PATCH_URN]), "Operations": st.lists(operation, min_size=1, max_size=3)}
        )
    )


digits = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(["", "0", "-1", "1_000", "1e3", "١", "+5", " 7 ", "9" * 400, str(2**64), str(2**63)]),
    texts,
)
attribute_lists = st.one_of(
    st.lists(st.sampled_from([*FILTER_ATTRIBUTES, "members", "emails", ENTERPRISE_URN, "groups"]), max_size=4).map(
        ",".join
    ),
    texts,
)
sort_attributes = st.one_of(st.sampled_from([*FILTER_ATTRIBUTES, "groups.value", "emails[type eq x]", ""]), texts)
queries = st.fixed_dictionaries(
    {},
    optional={
        "filter": filters,
        "startIndex": digits,
        "count": digits,
        "attributes": attribute_lists,
        "excludedAttributes": attribute_lists,
        "sortBy": sort_attributes,
        "sortOrder": st.one_of(st.sampled_from(["ascending", "descending", "DESCENDING", "up", ""]), texts),
    },
)
# If-Match / If-None-Match values as clients, proxies and fuzzers send them.
preconditions = st.one_of(
    st.sampled_from(["*", 'W/"1"', '"1"', 'W/"1", W/"2"', "", "W/", '"', "**", 'W/"x" junk']),
    st.text(alphabet='W/"*, \t', max_size=12),
    texts.filter(lambda t: all(" " <= c <= "~" for c in t)),
)
entries = st.sampled_from(["client", "wsgi"])

# --- the HTTP path --------------------------------------------------------------------------------


def _encode(document: Any) -> bytes:
    """JSON as a client may write it: integers of any size, escapes for lone surrogates; NaN and
    infinities as Python writes them (not JSON: the server must say so)."""
    return json.dumps(document, ensure_ascii=True).encode()


def _query_string(query: dict[str, str]) -> str:
    return "&".join(
        f"{name}={urllib.parse.quote(value.encode('utf-8', 'surrogatepass'), safe='')}" for name, value in query.items()
    )


def send(
    entry: str, directory: Directory, method: str, path: str, body: bytes | None = None, query: str = ""
) -> tuple[int, dict[str, str], bytes]:
    """One request through Django's handler (test Client) or the WSGI entry: (status, headers, body)."""
    full = f"/api/scim/v2.0/{directory.id}{path}"
    auth = f"Bearer {directory.scim_secret}"
    if entry == "client":
        client = Client(HTTP_AUTHORIZATION=auth)
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs = {"data": body, "content_type": SCIM_CT}
        response = client.generic(method, full + (f"?{query}" if query else ""), **kwargs)
        return response.status_code, dict(response.headers), response.content
    environ = {"HTTP_AUTHORIZATION": auth, "CONTENT_TYPE": SCIM_CT if body is not None else ""}
    status, headers, content = wsgi_run(application, full, method=method, body=body or b"", query=query, **environ)
    return int(status.split()[0]), dict(headers), content


def answered(status: int, headers: dict[str, str], content: bytes) -> Any:
    """The properties every answer has; the parsed body (None for an empty one)."""
    assert status < 500, content[:2000]
    assert headers.get("X-Request-Id"), headers
    if not content:
        assert status in (204, 304) or 400 <= status, status
        return None
    assert headers["Content-Type"] == SCIM_CT, headers
    document = json.loads(content)  # also what the stdlib reads: big numbers stay exact
    if status >= 400:
        assert document["schemas"] == [ERROR_URN], document
        assert document["status"] == str(status), document
        assert isinstance(document["detail"], str) and document["detail"], document
    return document


def _numbers_as_floats(value: Any) -> Any:
    """The same JSON value whichever way a number was written (the database may print 1.5e18 as an
    integer): numbers compared as floats."""
    if isinstance(value, dict):
        return {k: _numbers_as_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers_as_floats(v) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return value


def write(entry: str, directory: Directory, method: str, path: str, body: bytes, kind: str) -> None:
    """A write, with every property: unchanged rows after a 4xx, read-back after a 2xx."""
    before = rows_of(directory)
    status, headers, content = send(entry, directory, method, path, body)
    document = answered(status, headers, content)
    event(
        f"{method} {status} {(document or {}).get('detail', '')[:50]}"
    )  # shown by --hypothesis-show-statistics: how often writes get through
    if status >= 400:
        assert rows_of(directory) == before, (status, document)
        return
    assert status in (200, 201, 204), status
    resource_id = document["id"] if document is not None else path.rsplit("/", 1)[-1]
    got_status, got_headers, got_content = send(entry, directory, "GET", f"/{kind}/{resource_id}")
    read_back = answered(got_status, got_headers, got_content)
    assert got_status == 200, read_back
    if document is not None:
        assert _numbers_as_floats(read_back) == _numbers_as_floats(document)


@pytest.fixture(autouse=True)
def _no_rate_limit() -> Any:
    """The fuzzing sends hundreds of requests per test, far past a directory's burst (contract §4.5): the
    properties here are about input, so the limit is off (its own tests are tests/scim/test_rate_limits.py)."""
    from django.test import override_settings

    with override_settings(SCIM_RATE_LIMIT=0, API_RATE_LIMIT=0):
        yield


@pytest.fixture
def seeded(scim_hooked: Any) -> dict[str, Any]:
    """A directory with a webhook (events land in the outbox), two users and a group with a member."""
    users = [scim_hooked.post("/Users", user_body(name))[1]["id"] for name in ("ann@x.io", "bob@x.io")]
    group = scim_hooked.post("/Groups", group_body("Ops", members=users[:1]))[1]["id"]
    return {"directory": scim_hooked.directory, "users": users, "group": group}


# --- the properties -------------------------------------------------------------------------------


@FUZZ
@given(entry=entries, document=user_bodies, method=st.sampled_from(["POST", "PUT"]))
def test_fuzzed_user_bodies_never_fail_the_server(
    seeded: dict[str, Any], entry: str, document: Any, method: str
) -> None:
    path = "/Users" if method == "POST" else f"/Users/{seeded['users'][1]}"
    write(entry, seeded["directory"], method, path, _encode(document), "Users")


@FUZZ
@given(entry=entries, document=group_bodies, method=st.sampled_from(["POST", "PUT"]))
def test_fuzzed_group_bodies_never_fail_the_server(
    seeded: dict[str, Any], entry: str, document: Any, method: str
) -> None:
    if isinstance(document, dict) and "members" in document and not isinstance(document["members"], list):
        document = {**document, "members": [{"value": seeded["users"][0]}, document["members"]]}
    path = "/Groups" if method == "POST" else f"/Groups/{seeded['group']}"
    write(entry, seeded["directory"], method, path, _encode(document), "Groups")


@FUZZ
@given(data=st.data(), entry=entries, kind=st.sampled_from(["Users", "Groups"]))
def test_fuzzed_patch_operations_never_fail_the_server(
    seeded: dict[str, Any], data: st.DataObject, entry: str, kind: str
) -> None:
    body = data.draw(_operations(kind, [*seeded["users"], str(uuid.uuid4())]), label="body")
    target = seeded["users"][0] if kind == "Users" else seeded["group"]
    write(entry, seeded["directory"], "PATCH", f"/{kind}/{target}", _encode(body), kind)


@FUZZ
@given(entry=entries, query=queries, path=st.sampled_from(["/Users", "/Groups"]))
def test_fuzzed_list_queries_never_fail_the_server(
    seeded: dict[str, Any], entry: str, query: dict[str, str], path: str
) -> None:
    query_string = _query_string(query)
    status, headers, content = send(entry, seeded["directory"], "GET", path, query=query_string)
    document = answered(status, headers, content)
    line = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": f"/api/scim/v2.0/{seeded['directory'].id}{path}",
        "QUERY_STRING": query_string,
    }
    if entry != "client" and request_line_length(line) > REQUEST_LINE_MAX:
        # The WSGI entry applies Roster's request-line limit first (config/requestlimits.py), in SCIM's format.
        assert status == 414, (status, document)
        return
    assert status in (200, 400, 403), (status, document)
    if status == 200:
        assert document["itemsPerPage"] == len(document["Resources"]), document


@FUZZ
@given(entry=entries, query=queries, path=st.sampled_from(["/Users/.search", "/Groups/.search", "/.search"]))
def test_fuzzed_search_requests_never_fail_the_server(
    seeded: dict[str, Any], entry: str, query: dict[str, str], path: str
) -> None:
    search: dict[str, Any] = {"schemas": [SEARCH_URN], **query}
    for name in ("startIndex", "count"):
        if name in search:
            try:
                search[name] = int(search[name])
            except ValueError:
                pass  # kept as a string: the server must say it is not an integer
    for name in ("attributes", "excludedAttributes"):
        if name in search:
            search[name] = search[name].split(",")
    before = rows_of(seeded["directory"])
    status, headers, content = send(entry, seeded["directory"], "POST", path, _encode(search))
    document = answered(status, headers, content)
    assert status in (200, 400, 403), (status, document)
    assert rows_of(seeded["directory"]) == before


@FUZZ
@given(
    entry=entries,
    header=preconditions,
    method=st.sampled_from(["GET", "PATCH", "DELETE"]),
    kind=st.sampled_from(["Users", "Groups"]),
    current=st.booleans(),
)
def test_fuzzed_preconditions_never_fail_the_server_and_a_mismatch_changes_nothing(
    seeded: dict[str, Any], entry: str, header: str, method: str, kind: str, current: bool
) -> None:
    directory = seeded["directory"]
    target = f"/{kind}/{seeded['users'][0] if kind == 'Users' else seeded['group']}"
    if current:  # sometimes the resource's own version, so that a precondition can hold
        header = json.loads(send(entry, directory, "GET", target)[2])["meta"]["version"]
    if method == "DELETE" and (header.strip() == "*" or current):
        method = "GET"  # a matching DELETE would take the fixture's row away from later examples
    body = None
    if method == "PATCH":
        body = _encode({"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "displayName", "value": "D"}]})
    name = "HTTP_IF_NONE_MATCH" if method == "GET" else "HTTP_IF_MATCH"
    before = rows_of(directory)
    full = f"/api/scim/v2.0/{directory.id}{target}"
    auth = f"Bearer {directory.scim_secret}"
    if entry == "client":
        response = Client(HTTP_AUTHORIZATION=auth).generic(
            method, full, **({"data": body, "content_type": SCIM_CT} if body else {}), **{name: header}
        )
        status, headers, content = response.status_code, dict(response.headers), response.content
    else:
        environ = {"HTTP_AUTHORIZATION": auth, "CONTENT_TYPE": SCIM_CT if body else "", name: header}
        line, pairs, content = wsgi_run(application, full, method=method, body=body or b"", **environ)
        status, headers = int(line.split()[0]), dict(pairs)
    document = answered(status, headers, content)
    assert status in (200, 204, 304, 400, 412), (status, document)
    if status in (304, 400, 412):
        assert rows_of(directory) == before, (status, document)
    if status == 412:
        assert not current, document
    if status == 304:
        assert method == "GET" and headers["ETag"]


@FUZZ
@given(entry=entries, filter_text=filters)
def test_fuzzed_filters_answer_the_same_through_get_and_search(
    seeded: dict[str, Any], entry: str, filter_text: str
) -> None:
    query = _query_string({"filter": filter_text})
    got = send(entry, seeded["directory"], "GET", "/Users", query=query)
    listed = answered(*got)
    searched = send(entry, seeded["directory"], "POST", "/Users/.search", _encode({"filter": filter_text}))
    found = answered(*searched)
    if "\x00" in filter_text or any("\ud800" <= c <= "\udfff" for c in filter_text):
        # Over a query string these arrive replaced (invalid UTF-8) or refused; in a body as themselves.
        assert searched[0] in (200, 400, 403)
        return
    assert got[0] == searched[0], (listed, found)
    if got[0] == 200:
        assert listed == found
