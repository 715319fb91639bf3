"""sortBy / sortOrder (RFC 7644 §3.4.2.3) on lists and /.search: exact orders, the id tie-break, errors."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from tests.scim.conftest import ENTERPRISE_URN, SCIM_CT, Scim, assert_scim_error, group_body, user_body

SEARCH_URN = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"


@pytest.fixture
def people(scim_a: Scim) -> dict[str, str]:
    specs: list[tuple[str, dict[str, Any]]] = [
        ("d@x.io", {"name": {"givenName": "D", "familyName": "brown"}, ENTERPRISE_URN: {"department": "b"}}),
        ("a@x.io", {"name": {"givenName": "A", "familyName": "Émile"}, ENTERPRISE_URN: {"department": "A"}}),
        ("c@x.io", {"name": {"givenName": "C", "familyName": "Brown"}}),
        ("b@x.io", {"name": {"givenName": "B"}}),
        (
            "e@x.io",
            {
                "name": {"givenName": "E", "familyName": "adams"},
                "emails": [{"value": "z@x.io"}, {"value": "a0@x.io", "primary": True}],
            },
        ),
    ]
    ids = {}
    for user_name, extra in specs:
        status, body = scim_a.post("/Users", user_body(user_name, **extra))
        assert status == 201, body
        ids[user_name[0]] = body["id"]
    return ids


def _order(scim: Scim, query: str, resource: str = "Users") -> list[str]:
    status, body = scim.get(f"/{resource}?{query}")
    assert status == 200, body
    key = "userName" if resource == "Users" else "displayName"
    return [r[key][0] if resource == "Users" else r[key] for r in body["Resources"]]


def test_sort_by_family_name_is_case_insensitive_with_missing_values_last(scim_a: Scim, people: dict[str, str]) -> None:
    order = _order(scim_a, "sortBy=name.familyName")
    brown = sorted(["d", "c"], key=lambda k: people[k])  # equal folded names: the id breaks the tie
    assert order == ["e", *brown, "a", "b"]
    assert _order(scim_a, "sortBy=name.familyName&sortOrder=descending") == list(reversed(order))
    assert _order(scim_a, "sortBy=NAME.FAMILYNAME&sortOrder=Ascending") == order


def test_sort_pages_are_stable_and_disjoint(scim_a: Scim, people: dict[str, str]) -> None:
    whole = _order(scim_a, "sortBy=name.familyName")
    pages = [_order(scim_a, f"sortBy=name.familyName&startIndex={i}&count=2") for i in (1, 3, 5)]
    assert [u for page in pages for u in page] == whole
    status, body = scim_a.get("/Users?sortBy=name.familyName&startIndex=3&count=2")
    assert body["totalResults"] == 5 and body["startIndex"] == 3


@pytest.mark.parametrize(
    ("sort_by", "expected"),
    [
        ("userName", ["a", "b", "c", "d", "e"]),
        ("emails", ["e", "a", "b", "c", "d"]),  # the primary email sorts (e's a0@x.io, "0" before "@")
        (f"{ENTERPRISE_URN}:department", ["a", "d", "b", "c", "e"][:2]),
        ("meta.created", ["d", "a", "c", "b", "e"]),
        ("name.givenName", ["a", "b", "c", "d", "e"]),
    ],
)
def test_sort_by_columns_multi_valued_and_extension_attributes(
    scim_a: Scim, people: dict[str, str], sort_by: str, expected: list[str]
) -> None:
    order = _order(scim_a, f"sortBy={quote(sort_by)}")
    assert order[: len(expected)] == expected
    assert sorted(order) == ["a", "b", "c", "d", "e"]


def test_sort_with_a_filter_and_through_search(scim_a: Scim, people: dict[str, str]) -> None:
    flt = quote('name.familyName pr and not (userName eq "e@x.io")')
    assert _order(scim_a, f"filter={flt}&sortBy=userName&sortOrder=descending") == ["d", "c", "a"]
    search = {"schemas": [SEARCH_URN], "sortBy": "userName", "sortOrder": "descending", "count": 2}
    status, body = scim_a.post("/Users/.search", search)
    assert status == 200 and [r["userName"][0] for r in body["Resources"]] == ["e", "d"]
    status, body = scim_a.post("/.search", {**search, "sortBy": "displayName", "count": 10})
    assert status == 200, body  # users have displayName in the schema too (none set here)
    assert body["totalResults"] == 5


def test_groups_sort_and_a_users_first_group(scim_a: Scim, people: dict[str, str]) -> None:
    for name, members in (("beta", ["d"]), ("Alpha", ["a", "c"]), ("gamma", [])):
        assert scim_a.post("/Groups", group_body(name, [people[m] for m in members]))[0] == 201
    assert _order(scim_a, "sortBy=displayName", "Groups") == ["Alpha", "beta", "gamma"]
    assert _order(scim_a, "sortBy=displayName&sortOrder=descending", "Groups") == ["gamma", "beta", "Alpha"]
    by_group = _order(scim_a, "sortBy=groups.display")
    assert set(by_group[:2]) == {"a", "c"} and by_group[2] == "d"  # alpha, alpha (id decides), beta


@pytest.mark.parametrize(
    "query",
    [
        "sortBy=nosuch",
        "sortBy=password",
        "sortBy=name",
        "sortBy=" + quote('emails[type eq "work"]'),
        "sortBy=" + quote(f"{ENTERPRISE_URN}:nosuch"),
        "sortBy=userName&sortOrder=up",
        "sortOrder=sideways",
    ],
)
def test_unsortable_sort_by_or_order_is_400_invalid_value(scim_a: Scim, people: dict[str, str], query: str) -> None:
    status, body = scim_a.get(f"/Users?{query}")
    assert_scim_error(status, body, 400, "invalidValue")
    assert scim_a.last["Content-Type"] == SCIM_CT


def test_search_body_types_for_sort_are_checked(scim_a: Scim, people: dict[str, str]) -> None:
    for bad in ({"sortBy": 1}, {"sortOrder": ["ascending"]}):
        status, body = scim_a.post("/Users/.search", {"schemas": [SEARCH_URN], **bad})
        assert_scim_error(status, body, 400, "invalidValue")
