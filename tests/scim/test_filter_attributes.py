"""Filters on every attribute type the schemas publish, and on extensions Roster does not publish, with
the exact set each one must return. The same cases run on SQLite and (in CI) PostgreSQL, whose SQL
differs (scim.storage's document dialects): the answers must not."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from tests.scim.conftest import ENTERPRISE_URN, Scim, group_body, user_body

CUSTOM = "urn:example:params:scim:schemas:extension:acme:2.0:User"


def _people() -> list[dict[str, Any]]:
    return [
        user_body(
            "ann@x.io",
            name={"givenName": "Ann", "familyName": "Éclair"},
            displayName="Ann É",
            title="Engineer",
            nickName="annie",
            userType="Employee",
            locale="fr-FR",
            phoneNumbers=[{"value": "+33 1 00", "type": "work"}, {"value": "555-1", "type": "mobile", "primary": True}],
            addresses=[{"type": "work", "locality": "Paris", "country": "FR"}],
            x509Certificates=[{"value": "MIIcert"}],
            emails=[{"value": "ann@x.io", "type": "work", "primary": True}, {"value": "ann@home.io", "type": "home"}],
            **{
                ENTERPRISE_URN: {"employeeNumber": "1001", "department": "R&D", "manager": {"value": "boss-1"}},
                CUSTOM: {"badge": 7, "tags": ["blue", "Green"], "onsite": True, "desk": {"floor": 3}},
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User", ENTERPRISE_URN, CUSTOM],
            },
        ),
        user_body(
            "bob@x.io",
            name={"givenName": "Bob", "familyName": "eclair"},
            title="Manager",
            userType="Contractor",
            emails=[{"value": "bob@x.io", "type": "work"}],
            phoneNumbers=[{"value": "555-2", "type": "work"}],
            **{
                ENTERPRISE_URN: {"employeeNumber": 1002, "department": "Sales", "manager": {"value": "BOSS-1"}},
                CUSTOM: {"badge": 12, "tags": ["green"], "onsite": False},
            },
        ),
        user_body(
            "cy@x.io",
            name={"givenName": "Cy", "familyName": "Strauß"},
            emails=[{"value": "cy@x.io", "type": "home"}],
            active=False,
            **{ENTERPRISE_URN: {"department": "r&d"}},
        ),
        user_body("di@x.io", name={"givenName": "Di"}, emails=[], title=""),
    ]


@pytest.fixture
def people(scim_a: Scim) -> dict[str, str]:
    ids = {}
    for body in _people():
        status, created = scim_a.post("/Users", body)
        assert status == 201, created
        ids[body["userName"].split("@")[0]] = created["id"]
    return ids


def _names(scim: Scim, flt: str) -> set[str]:
    status, body = scim.get(f"/Users?filter={quote(flt)}")
    assert status == 200, (flt, body)
    assert body["totalResults"] == len(body["Resources"])
    return {r["userName"].split("@")[0] for r in body["Resources"]}


E = ENTERPRISE_URN
CASES = [
    # strings, caseExact=false: every operator, case-insensitive after NFC + casefold
    ('title eq "engineer"', {"ann"}),
    ('title ne "ENGINEER"', {"bob", "cy", "di"}),
    ('title co "AGE"', {"bob"}),
    ('title sw "eng"', {"ann"}),
    ('title ew "ER"', {"ann", "bob"}),
    ('title gt "f"', {"bob"}),
    ('title ge "manager"', {"bob"}),
    ('title lt "manager"', {"ann"}),
    ('title le "MANAGER"', {"ann", "bob"}),
    ("title pr", {"ann", "bob"}),  # "" is no value
    ("not (title pr)", {"cy", "di"}),
    ("title eq null", {"cy", "di"}),
    ('title co ""', {"ann", "bob"}),
    ('displayName eq "ANN é"', {"ann"}),
    ('nickName sw "ANN"', {"ann"}),
    ('userType eq "contractor"', {"bob"}),
    ('locale eq "FR-fr"', {"ann"}),
    # sub-attributes of a complex attribute, non-ASCII folding (É/é, ß/ss)
    ('name.familyName eq "ÉCLAIR"', {"ann"}),
    ('name.familyName eq "eclair"', {"bob"}),
    ('name.familyName eq "STRAUSS"', {"cy"}),
    ('name.familyName sw "é"', {"ann"}),
    ("name.familyName pr", {"ann", "bob", "cy"}),
    ("name pr", {"ann", "bob", "cy", "di"}),
    # multi-valued: sub-attributes, the attribute alone (its value), value paths
    ('phoneNumbers.value eq "555-1"', {"ann"}),
    ('phoneNumbers eq "555-2"', {"bob"}),
    ('phoneNumbers.type eq "MOBILE"', {"ann"}),
    ("phoneNumbers.primary eq true", {"ann"}),
    ('phoneNumbers[type eq "work" and value sw "+33"]', {"ann"}),
    ('phoneNumbers[type eq "work" and value eq "555-1"]', set()),
    ('phoneNumbers[not (type eq "work")]', {"ann"}),
    ('phoneNumbers[type eq "work"].value co "555"', {"bob"}),
    ('addresses[type eq "work"].locality eq "paris"', {"ann"}),
    ('addresses.country eq "fr"', {"ann"}),
    ("addresses pr", {"ann"}),
    ('emails.value gt "b"', {"bob", "cy"}),
    ('emails[display eq "x"]', set()),
    ('emails[type eq "home" or value ew "@x.io"]', {"ann", "bob", "cy"}),
    ("emails pr", {"ann", "bob", "cy"}),
    # caseExact=true (binary): exact, eq only
    ('x509Certificates.value eq "MIIcert"', {"ann"}),
    ('x509Certificates.value eq "miicert"', set()),
    # booleans
    ("active eq true", {"ann", "bob", "di"}),
    ('emails[primary eq "True"]', {"ann"}),
    # the enterprise extension: strings (a number sent for one compares as its text), sub-attributes
    (f'{E}:employeeNumber eq "1001"', {"ann"}),
    (f'{E}:employeeNumber eq "1002"', {"bob"}),
    (f'{E}:employeeNumber gt "1001"', {"bob"}),
    (f'{E}:department eq "R&D"', {"ann", "cy"}),
    (f'{E}:department ne "r&d"', {"bob", "di"}),
    (f'{E}:manager.value eq "boss-1"', {"ann", "bob"}),
    (f"{E}:manager pr", {"ann", "bob"}),
    (f'{E.upper()}:DEPARTMENT eq "sales"', {"bob"}),
    # an extension Roster does not publish: numbers, booleans, strings by their JSON type
    (f"{CUSTOM}:badge eq 7", {"ann"}),
    (f"{CUSTOM}:badge gt 7", {"bob"}),
    (f"{CUSTOM}:badge le 12", {"ann", "bob"}),
    (f'{CUSTOM}:badge eq "7"', set()),
    (f"{CUSTOM}:onsite eq false", {"bob"}),
    (f'{CUSTOM}:tags eq "GREEN"', {"ann", "bob"}),
    (f'{CUSTOM}:tags sw "bl"', {"ann"}),
    (f"{CUSTOM}:desk.floor eq 3", {"ann"}),
    (f"{CUSTOM}:desk[floor ge 3]", {"ann"}),
    (f"{CUSTOM}:badge pr", {"ann", "bob"}),
    ('urn:example:never:sent:attr eq "x"', set()),
    # logic across kinds
    (f'title pr and {E}:department eq "r&d"', {"ann"}),
    (f'not (userName sw "a") and ({CUSTOM}:onsite eq false or active eq false)', {"bob", "cy"}),
]


@pytest.mark.parametrize(("flt", "expected"), CASES)
def test_filter_on_every_attribute_type_returns_exactly_the_matching_users(
    scim_a: Scim, people: dict[str, str], flt: str, expected: set[str]
) -> None:
    assert _names(scim_a, flt) == expected


def test_filters_on_groups_and_members(scim_a: Scim, people: dict[str, str]) -> None:
    scim_a.post("/Groups", group_body("Engineering", [people["ann"], people["bob"]]))
    scim_a.post("/Groups", group_body("Sales", [people["bob"]], externalId="S-1"))
    status, groups = scim_a.get("/Groups")
    sales = next(g["id"] for g in groups["Resources"] if g["displayName"] == "Sales")
    assert _names(scim_a, 'groups.display eq "ENGINEERING"') == {"ann", "bob"}
    assert _names(scim_a, f'groups.value eq "{sales}"') == {"bob"}
    assert _names(scim_a, f'groups[value eq "{sales}" or display sw "eng"]') == {"ann", "bob"}
    assert _names(scim_a, "groups pr") == {"ann", "bob"}
    assert _names(scim_a, 'groups.type eq "direct"') == {"ann", "bob"}
    assert _names(scim_a, f'groups.value ne "{sales}"') == {"ann", "cy", "di"}
    assert _names(scim_a, "not (groups pr)") == {"cy", "di"}
    status, body = scim_a.get("/Groups?filter=" + quote('externalId eq "S-1" and members pr'))
    assert status == 200 and [g["displayName"] for g in body["Resources"]] == ["Sales"]
    status, body = scim_a.get("/Groups?filter=" + quote(f'members[value eq "{people["ann"]}"]'))
    assert [g["displayName"] for g in body["Resources"]] == ["Engineering"]


@pytest.mark.parametrize(
    ("flt", "words"),
    [
        ('nosuch eq "x"', "nosuch"),
        (f'{E}:nosuch eq "x"', "nosuch"),
        ('name.nosuch eq "x"', "nosuch"),
        ('emails[nosuch eq "x"]', "nosuch"),
        ('groups.nosuch eq "x"', "nosuch"),
        ('name eq "x"', "complex"),
        ('x509Certificates.value sw "M"', "binary"),
        ("title gt true", "boolean"),
        ('active eq "maybe"', "active"),
    ],
)
def test_unknown_or_misused_attributes_are_400_naming_them(
    scim_a: Scim, people: dict[str, str], flt: str, words: str
) -> None:
    status, body = scim_a.get(f"/Users?filter={quote(flt)}")
    assert status == 400 and body["scimType"] == "invalidFilter", body
    assert words in body["detail"]


@pytest.mark.parametrize("flt", ['password eq "x"', "password pr", 'password[value eq "x"]'])
def test_password_in_any_form_is_403_sensitive(scim_a: Scim, people: dict[str, str], flt: str) -> None:
    status, body = scim_a.get(f"/Users?filter={quote(flt)}")
    assert status == 403 and body["scimType"] == "sensitive"


def test_the_comparison_document_follows_every_write(scim_a: Scim, people: dict[str, str]) -> None:
    from directories.models import DirectoryUser

    patch = {"op": "replace", "path": f"{E}:department", "value": "Legal"}
    assert scim_a.ops(f"/Users/{people['cy']}", patch)[0] == 200
    assert _names(scim_a, f'{E}:department eq "legal"') == {"cy"}
    assert DirectoryUser.objects.get(pk=people["cy"]).filter_doc[E.lower()] == [{"department": ["legal"]}]
    body = user_body("cy@x.io", title="Chief")
    assert scim_a.put(f"/Users/{people['cy']}", body)[0] == 200
    assert _names(scim_a, f"{E}:department pr") == {"ann", "bob"}
    assert _names(scim_a, 'title eq "chief"') == {"cy"}
