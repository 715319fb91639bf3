"""Every portal page and action needs a signed-in admin: signed out, it redirects to sign-in and
changes nothing."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from django.utils import timezone

from directories.models import Directory, ScimLogEntry
from tests.actors import TEST_ACTOR
from tests.portal.conftest import make_group, make_user
from webhooks.models import WebhookDelivery
from webhooks.services.endpoints import endpoint_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def urls(directory_a: Directory) -> dict[str, list[str]]:
    user = make_user(directory_a, "ann@example.com")
    group = make_group(directory_a, "Engineering", [user])
    delivery = WebhookDelivery.objects.create(
        directory=directory_a, event_id=uuid.uuid4(), event_type="user.created", payload="{}", delivered=True
    )
    entry = ScimLogEntry.objects.create(
        directory=directory_a, at=timezone.now(), method="GET", path="/Users", status=404, latency_ms=1, request_id="r"
    )
    d = f"/portal/directories/{directory_a.id}"
    endpoint = endpoint_create(actor=TEST_ACTOR, data={"url": "https://hooks.example.com/a"})
    e = f"/portal/webhook-endpoints/{endpoint.id}"
    return {
        "get": [
            "/portal/",
            "/portal/?q=acme&page=2",
            "/portal/directories/new",
            d,
            f"{d}/edit",
            f"{d}/scim-secret",
            f"{d}/webhook-secret",
            f"{d}/delete",
            f"{d}/users",
            f"{d}/users/{user.id}",
            f"{d}/groups",
            f"{d}/groups/{group.id}",
            f"{d}/deliveries",
            f"{d}/deliveries/{delivery.id}",
            f"{d}/scim-requests",
            f"{d}/scim-requests/{entry.id}",
            f"{d}/scim-oauth-secret",
            "/portal/?health=failing",
            "/portal/audit",
            "/portal/directories/not-a-uuid",
            "/portal/webhook-endpoints",
            "/portal/webhook-endpoints/new",
            e,
            f"{e}?show=all",
        ],
        "post": [
            "/portal/directories/new",
            f"{d}/edit",
            f"{d}/logging",
            f"{d}/active",
            f"{d}/scim-secret",
            f"{d}/webhook-secret",
            f"{d}/delete",
            f"{d}/scim-logging",
            f"{d}/scim-secret/revoke-previous",
            f"{d}/scim-oauth-secret",
            f"{d}/scim-static-secret",
            "/portal/webhook-endpoints/new",
            e,
            f"{e}/enabled",
            f"{e}/secret",
            f"{e}/test",
            f"{e}/delete",
        ],
    }


def test_every_page_redirects_a_signed_out_visitor_to_sign_in(client: Client, urls: dict[str, list[str]]) -> None:
    for url in urls["get"]:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response.headers["Location"].startswith("/portal/login?next=/portal/"), url


def test_every_action_redirects_a_signed_out_visitor_and_changes_nothing(
    client: Client, directory_a: Directory, urls: dict[str, list[str]]
) -> None:
    before = Directory.objects.values().get(pk=directory_a.pk)
    form = {
        "tenant": "evil",
        "product": "x",
        "type": "generic-scim-v2",
        "name": "Hacked",
        "value": "on",
        "confirm_name": directory_a.name,
    }
    for url in urls["post"]:
        response = client.post(url, form)
        assert response.status_code == 302, url
        assert response.headers["Location"].startswith("/portal/login?next="), url
    assert Directory.objects.values().get(pk=directory_a.pk) == before
    assert Directory.objects.count() == 1


def test_every_page_answers_a_signed_in_admin(portal_client: Client, urls: dict[str, list[str]]) -> None:
    for url in urls["get"]:
        response = portal_client.get(url)
        expected = 404 if url.endswith("not-a-uuid") else (302 if url.endswith("webhook-secret") else 200)
        assert response.status_code == expected, url


def test_portal_pages_are_not_cached(portal_client: Client, directory_a: Directory) -> None:
    # The directory page shows secrets: no browser or proxy cache may keep it.
    response = portal_client.get(f"/portal/directories/{directory_a.id}")
    assert "no-store" in response.headers["Cache-Control"]


def test_odd_query_strings_never_fail(portal_client: Client, directory_a: Directory) -> None:
    d = f"/portal/directories/{directory_a.id}"
    for url in (
        "/portal/?q=%00&tenant=%00&product=a%00b&page=-1",
        f"/portal/?q={'x' * 5000}",
        f"{d}/users?q=%00&page=0",
        f"{d}/groups?q=%00%00",
        f"{d}/deliveries?status=%00&page=99999",
        "/portal/audit?actor=%00&action=%00&directory=%00",
    ):
        assert portal_client.get(url).status_code == 200, url


def test_directory_list_query_count_does_not_grow_with_directories(
    portal_client: Client,
    directory_a: Directory,
    django_assert_max_num_queries,  # noqa: ANN001
) -> None:
    from directories.services import directory_create

    for i in range(20):
        directory_create(actor=TEST_ACTOR, data={"tenant": f"t{i}", "product": "p"})
    # session + admin + count + one page query with both counts as subqueries
    with django_assert_max_num_queries(4):
        assert portal_client.get("/portal/").status_code == 200
