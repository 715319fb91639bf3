"""Users and groups pages: paged, searchable, scoped to their directory."""

from __future__ import annotations

from html import unescape

import pytest
from django.test import Client

from directories.models import Directory
from tests.portal.conftest import make_group, make_user

pytestmark = pytest.mark.django_db


def test_user_list_search_matches_username_email_names_and_external_id(
    portal_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    make_user(directory_a, "ann@acme.test", first_name="Ann", last_name="Lee", email="ann@acme.test")
    make_user(directory_a, "bob@acme.test", first_name="Bob", external_id="HR-42")
    make_user(directory_b, "ann@globex.test", first_name="Ann")
    url = f"/portal/directories/{directory_a.id}/users"

    def found(q: str) -> list[str]:
        return [u.user_name for u in portal_client.get(url, {"q": q}).context["page"].object_list]

    assert found("") == ["ann@acme.test", "bob@acme.test"]
    assert found("ANN") == ["ann@acme.test"]
    assert found("lee") == ["ann@acme.test"]
    assert found("hr-42") == ["bob@acme.test"]
    assert found("globex") == []  # the other directory's users never show
    assert "No user matches" in portal_client.get(url, {"q": "zzz"}).content.decode()


def test_user_list_pages_and_keeps_the_search_in_page_links(portal_client: Client, directory_a: Directory) -> None:
    for i in range(52):
        make_user(directory_a, f"user{i:02d}@acme.test")
    url = f"/portal/directories/{directory_a.id}/users"
    first = portal_client.get(url, {"q": "user"})
    assert len(first.context["page"].object_list) == 50
    assert "?q=user&amp;page=2" in first.content.decode()
    second = portal_client.get(url, {"q": "user", "page": 2})
    assert [u.user_name for u in second.context["page"].object_list] == ["user50@acme.test", "user51@acme.test"]


def test_user_detail_shows_fields_groups_and_pretty_raw_json(portal_client: Client, directory_a: Directory) -> None:
    user = make_user(
        directory_a,
        "ann@acme.test",
        first_name="Ann",
        last_name="Lee",
        email="ann@acme.test",
        active=False,
        raw={"title": "<script>alert(1)</script>"},
    )
    make_group(directory_a, "Engineering", [user])
    make_group(directory_a, "Sales")
    html = portal_client.get(f"/portal/directories/{directory_a.id}/users/{user.id}").content.decode()
    assert "Inactive" in html
    assert "Engineering" in html and "Sales" not in html
    assert '\n  "userName": "ann@acme.test"' in unescape(html)  # indented JSON
    assert "<script>alert(1)</script>" not in html  # raw values are escaped
    assert "&lt;script&gt;" in html


def test_user_of_another_directory_is_not_found(
    portal_client: Client, directory_a: Directory, directory_b: Directory
) -> None:
    other = make_user(directory_b, "eve@globex.test")
    for url in (
        f"/portal/directories/{directory_a.id}/users/{other.id}",
        f"/portal/directories/{directory_a.id}/users/not-a-uuid",
    ):
        response = portal_client.get(url)
        assert response.status_code == 404
        assert b"No such user" in response.content


def test_group_list_counts_members_and_searches(portal_client: Client, directory_a: Directory) -> None:
    ann, bob = make_user(directory_a, "ann@acme.test"), make_user(directory_a, "bob@acme.test")
    make_group(directory_a, "Engineering", [ann, bob])
    make_group(directory_a, "Sales", [ann])
    url = f"/portal/directories/{directory_a.id}/groups"
    rows = [(g.display_name, g.member_count) for g in portal_client.get(url).context["page"].object_list]
    assert rows == [("Engineering", 2), ("Sales", 1)]
    assert [g.display_name for g in portal_client.get(url, {"q": "sal"}).context["page"].object_list] == ["Sales"]


def test_group_detail_lists_members(portal_client: Client, directory_a: Directory, directory_b: Directory) -> None:
    make_user(directory_a, "ann@acme.test")
    bob = make_user(directory_a, "bob@acme.test")
    group = make_group(directory_a, "Engineering", [bob])
    html = portal_client.get(f"/portal/directories/{directory_a.id}/groups/{group.id}").content.decode()
    assert "bob@acme.test" in html and "ann@acme.test" not in html
    # The group is invisible through the other directory's URL.
    assert portal_client.get(f"/portal/directories/{directory_b.id}/groups/{group.id}").status_code == 404


def test_empty_lists_explain_where_users_and_groups_come_from(portal_client: Client, directory_a: Directory) -> None:
    assert b"No users yet" in portal_client.get(f"/portal/directories/{directory_a.id}/users").content
    assert b"No groups yet" in portal_client.get(f"/portal/directories/{directory_a.id}/groups").content
