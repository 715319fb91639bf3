"""RFC 7644 §3.4.2.2 filters: the parser, and their translation into database queries."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from scim.protocol.errors import ScimError
from scim.protocol.filter import And, Compare, ElementFilter, Not, Or, matches, parse_filter, parse_patch_path
from tests.scim.conftest import Scim, group_body, user_body


def test_parser_honours_precedence_not_over_and_over_or() -> None:
    node = parse_filter('userName eq "a" or title pr and not (active eq false)')
    assert isinstance(node, Or)
    assert isinstance(node.right, And)
    assert isinstance(node.right.right, Not)


def test_parser_is_case_insensitive_for_names_and_operators() -> None:
    node = parse_filter('USERNAME EQ "A"')
    assert node == Compare(node.path, "eq", "A")
    assert node.path.attr == "username"


def test_parser_reads_value_path_with_trailing_sub_attribute() -> None:
    node = parse_filter('emails[type eq "work"].value eq "x@y.z"')
    assert isinstance(node, ElementFilter)
    assert node.path.attr == "emails"
    assert isinstance(node.inner, And)


def test_parser_reads_urn_prefixed_attributes() -> None:
    node = parse_filter('urn:ietf:params:scim:schemas:core:2.0:User:userName eq "a"')
    assert node.path.attr == "username" and node.path.schema is None
    ext = parse_filter('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber eq "1"')
    assert ext.path.schema == "urn:ietf:params:scim:schemas:extension:enterprise:2.0:user"


def test_parser_reads_literals() -> None:
    assert parse_filter("active eq true").value is True
    assert parse_filter("x eq null").value is None
    assert parse_filter("x gt 1.5").value == 1.5
    assert parse_filter(r'x eq "quote \" inside"').value == 'quote " inside'


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "userName",
        'userName eq "a" and',
        'userName xx "a"',
        "userName eq unquoted",
        'userName eq "unterminated',
        '(userName eq "a"',
        'userName eq "a")',
        'emails[type eq "work"',
        'emails[type eq "work"]]',
        'not userName eq "a"',
        'and eq "a"',
        'emails[type[value eq "x"] eq "y"]',
        "a eq " + "(" * 40,
        "(" * 40 + 'userName eq "a"' + ")" * 40,
        'userName eq "a\x00"',
        "x" * 5000,
    ],
)
def test_parser_rejects_malformed_filters(text: str) -> None:
    with pytest.raises(ScimError) as exc:
        parse_filter(text)
    assert exc.value.status == 400 and exc.value.scim_type == "invalidFilter"


def test_python_matcher_evaluates_value_filters() -> None:
    work = {"type": "work", "value": "A@x.io", "primary": True}
    home = {"type": "home", "value": "b@x.io"}
    flt = parse_filter('type eq "WORK" and value co "a@"')
    assert matches(flt, work) and not matches(flt, home)
    assert matches(parse_filter("not (primary eq true)"), home)
    assert matches(parse_filter('value sw "b" or value ew ".zz"'), home)
    assert not matches(parse_filter("display pr"), home)


def test_patch_path_parses_filter_and_sub_attribute() -> None:
    path = parse_patch_path('emails[type eq "work"].value')
    assert path.attr.attr == "emails" and path.sub == "value"
    assert parse_patch_path("name.givenName").attr.sub == "givenname"
    with pytest.raises(ScimError) as exc:
        parse_patch_path('emails[type eq "work"')
    assert exc.value.scim_type == "invalidPath"


# ----------------------------------------------------------------------------------------- database


@pytest.fixture
def people(scim_a: Scim) -> dict[str, str]:
    ids = {}
    specs = [
        (
            "alice@example.com",
            "Alice",
            "Smith",
            "ext-1",
            True,
            [("work", "alice@example.com"), ("home", "al@home.net")],
        ),
        ("Bob@Example.com", "Bob", "Jones", "ext-2", True, [("work", "bob@example.com")]),
        ("carol@other.org", "Carol", "Smithers", None, False, [("home", "carol@home.net")]),
    ]
    for user_name, given, family, external, active, emails in specs:
        body = user_body(
            user_name,
            name={"givenName": given, "familyName": family},
            emails=[{"type": t, "value": v} for t, v in emails],
            active=active,
        )
        if external:
            body["externalId"] = external
        status, created = scim_a.post("/Users", body)
        assert status == 201, created
        ids[given.lower()] = created["id"]
    return ids


def _names(scim: Scim, flt: str, resource: str = "Users") -> set[str]:
    status, body = scim.get(f"/{resource}?filter={quote(flt)}")
    assert status == 200, body
    assert body["totalResults"] == len(body["Resources"])
    key = "userName" if resource == "Users" else "displayName"
    return {r[key] for r in body["Resources"]}


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ('userName eq "ALICE@example.com"', {"alice@example.com"}),
        ('userName eq "bob@example.com"', {"Bob@Example.com"}),
        ('userName ne "bob@example.com"', {"alice@example.com", "carol@other.org"}),
        ('userName co "EXAMPLE"', {"alice@example.com", "Bob@Example.com"}),
        ('userName sw "car"', {"carol@other.org"}),
        ('userName ew ".ORG"', {"carol@other.org"}),
        ('userName gt "b"', {"Bob@Example.com", "carol@other.org"}),
        ('userName le "bob@example.com"', {"alice@example.com", "Bob@Example.com"}),
        ("userName pr", {"alice@example.com", "Bob@Example.com", "carol@other.org"}),
        ('externalId eq "ext-1"', {"alice@example.com"}),
        ('externalId eq "EXT-1"', set()),
        ("externalId pr", {"alice@example.com", "Bob@Example.com"}),
        ("not (externalId pr)", {"carol@other.org"}),
        ("active eq false", {"carol@other.org"}),
        ('active eq "False"', {"carol@other.org"}),
        ("active ne false", {"alice@example.com", "Bob@Example.com"}),
        ('name.givenName eq "alice"', {"alice@example.com"}),
        ('name.familyName sw "smith"', {"alice@example.com", "carol@other.org"}),
        ('name.familyName gt "Smith"', {"carol@other.org"}),
        ('emails.value eq "AL@HOME.NET"', {"alice@example.com"}),
        ('emails eq "bob@example.com"', {"Bob@Example.com"}),
        ('emails.value co "home"', {"alice@example.com", "carol@other.org"}),
        ('emails.value sw "bob@"', {"Bob@Example.com"}),
        ('emails.value ew "@home.net"', {"alice@example.com", "carol@other.org"}),
        ('emails[type eq "work"].value eq "alice@example.com"', {"alice@example.com"}),
        ('emails[type eq "work" and value eq "al@home.net"]', set()),
        ('emails[type eq "home" and value co "carol"]', {"carol@other.org"}),
        ('emails[type eq "home" or value sw "bob"]', {"alice@example.com", "Bob@Example.com", "carol@other.org"}),
        ('emails[type eq "work"]', {"alice@example.com", "Bob@Example.com"}),
        ('userName eq "alice@example.com" or userName eq "carol@other.org"', {"alice@example.com", "carol@other.org"}),
        (
            '(userName co "example" or active eq false) and not (name.givenName eq "Bob")',
            {"alice@example.com", "carol@other.org"},
        ),
        ('meta.created gt "2000-01-01T00:00:00Z"', {"alice@example.com", "Bob@Example.com", "carol@other.org"}),
        ('meta.lastModified lt "2000-01-01T00:00:00Z"', set()),
        ('id eq "not-a-uuid"', set()),
        ('userName eq "nobody@example.com"', set()),
    ],
)
def test_user_filters_run_in_the_database(scim_a: Scim, people: dict[str, str], flt: str, expected: set[str]) -> None:
    assert _names(scim_a, flt) == expected


def test_filter_by_id(scim_a: Scim, people: dict[str, str]) -> None:
    assert _names(scim_a, f'id eq "{people["bob"]}"') == {"Bob@Example.com"}


def test_filter_never_crosses_directories(scim_a: Scim, scim_b: Scim, people: dict[str, str]) -> None:
    assert _names(scim_b, f'id eq "{people["alice"]}"') == set()
    assert _names(scim_b, 'userName eq "alice@example.com"') == set()


@pytest.mark.parametrize(
    "flt",
    [
        'nosuch eq "x"',
        'emails.nosuch eq "x"',
        'emails[nosuch eq "x"]',
        'name eq "x"',
        'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:nosuch eq "1"',
        'x509Certificates.value co "a"',
        "emails.primary gt true",
        "title eq 5",
        "userName eq 5",
        "active eq 1",
        'active gt "x"',
        'id co "abc"',
        'meta.created eq "yesterday"',
        'meta.created gt "2020-01-01T00:00:00"',
        'meta.version eq "x"',
        'userName eq "a" and',
        "userName eq 'single quotes'",
    ],
)
def test_unsupported_or_malformed_filters_are_400_invalid_filter(
    scim_a: Scim, people: dict[str, str], flt: str
) -> None:
    status, body = scim_a.get(f"/Users?filter={quote(flt)}")
    assert status == 400, body
    assert body["scimType"] == "invalidFilter"
    assert body["status"] == "400" and body["detail"]


def test_filter_on_password_is_403_sensitive_without_echo(scim_a: Scim, people: dict[str, str]) -> None:
    flt = quote('password eq "hunter2"')
    status, body = scim_a.get(f"/Users?filter={flt}")
    assert status == 403
    assert body["scimType"] == "sensitive"
    assert "hunter2" not in str(body)


def test_group_filters(scim_a: Scim, people: dict[str, str]) -> None:
    for name, members in [("Engineering", [people["alice"]]), ("Sales", [people["bob"]]), ("Eng Ops", [])]:
        assert scim_a.post("/Groups", group_body(name, members))[0] == 201
    assert _names(scim_a, 'displayName eq "engineering"', "Groups") == {"Engineering"}
    assert _names(scim_a, 'displayName sw "eng"', "Groups") == {"Engineering", "Eng Ops"}
    assert _names(scim_a, f'members[value eq "{people["bob"]}"]', "Groups") == {"Sales"}
    assert _names(scim_a, f'members.value eq "{people["alice"]}"', "Groups") == {"Engineering"}
    flt = quote('userName eq "x"')
    status, body = scim_a.get(f"/Groups?filter={flt}")
    assert status == 400 and body["scimType"] == "invalidFilter"


def test_single_equalities_take_the_fixed_sql_path_and_everything_else_compiles() -> None:
    from django.db.models import Q

    from scim.selectors import Equality
    from scim.storage.query.documents import SqliteDocuments
    from scim.storage.query.filter import filter_plan

    docs = SqliteDocuments()
    assert filter_plan('userName eq "ALICE@Example.com"', resource_type="users", documents=docs) == Equality(
        "user_name_key", "alice@example.com"
    )
    assert filter_plan('externalId eq "Ext-1"', resource_type="users", documents=docs) == Equality(
        "external_id", "Ext-1"
    )
    assert filter_plan('displayName eq "Admins"', resource_type="groups", documents=docs) == Equality(
        "display_name_key", "admins"
    )
    for flt in ('userName ne "a"', "userName eq null", 'name.givenName eq "a"', 'userName eq "a" or userName eq "b"'):
        assert isinstance(filter_plan(flt, resource_type="users", documents=docs), Q), flt
    with pytest.raises(ScimError):
        filter_plan('members eq "x"', resource_type="users", documents=SqliteDocuments())


@pytest.mark.parametrize(
    ("query", "total", "returned"),
    [("&count=0", 1, 0), ("&startIndex=2", 1, 0), ("&startIndex=1&count=1", 1, 1), ("", 1, 1)],
)
def test_equality_filter_pages_and_counts_like_any_filter(
    scim_a: Scim, people: dict[str, str], query: str, total: int, returned: int
) -> None:
    flt = quote('userName eq "BOB@example.com"')
    status, body = scim_a.get(f"/Users?filter={flt}{query}")
    assert status == 200, body
    assert (body["totalResults"], len(body["Resources"])) == (total, returned)
