"""GET /api/v1/directory-sync/<id>/events (and the /dsync alias): the delivery log over the REST API."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from directories.models import Directory
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db


def _log(directory: Directory, count: int, *, delivered: bool = True, start: int = 0) -> list[WebhookDelivery]:
    rows = []
    base = timezone.now() - timedelta(hours=1)
    for i in range(start, start + count):
        row = WebhookDelivery.objects.create(
            directory=directory,
            event_id=uuid.uuid4(),
            event_type="user.created",
            endpoint="https://app.example.com/hooks",
            status_code=200 if delivered else 500,
            latency_ms=12,
            error_class="" if delivered else "HTTPStatus",
            error_message="" if delivered else "answered 500",
            payload=f'{{"id": "{i}", "event": "user.created"}}',
            delivered=delivered,
        )
        WebhookDelivery.objects.filter(pk=row.pk).update(created_at=base + timedelta(seconds=i))
        rows.append(row)
    return rows


def _url(directory: Directory, alias: str = "directory-sync") -> str:
    return f"/api/v1/{alias}/{directory.id}/events"


def test_anonymous_request_is_401_in_the_envelope(directory_a: Directory) -> None:
    response = Client().get(_url(directory_a))
    assert response.status_code == 401
    assert response.json()["data"] is None
    assert response.json()["error"]["code"] == 401


def test_wrong_key_is_401(directory_a: Directory) -> None:
    response = Client(HTTP_AUTHORIZATION="Bearer nope").get(_url(directory_a))
    assert response.status_code == 401


def test_scim_secret_is_not_an_api_key(directory_a: Directory, scim_client_a: Client) -> None:
    assert scim_client_a.get(_url(directory_a)).status_code == 401


@pytest.mark.parametrize("directory_id", [str(uuid.uuid4()), "not-a-uuid", "123"])
def test_unknown_directory_is_404(api_client: Client, directory_id: str) -> None:
    response = api_client.get(f"/api/v1/directory-sync/{directory_id}/events")
    assert response.status_code == 404
    assert response.json() == {"data": None, "error": {"message": "Directory not found.", "code": 404}}


@pytest.mark.parametrize("alias", ["directory-sync", "dsync"])
def test_lists_the_directory_log_oldest_first_in_the_delivery_shape(
    api_client: Client, directory_a: Directory, directory_b: Directory, alias: str
) -> None:
    _log(directory_a, 2)
    _log(directory_b, 3)  # another tenant's log never shows up
    response = api_client.get(_url(directory_a, alias))
    assert response.status_code == 200
    body = response.json()
    assert body["error"] is None
    assert [d["payload"]["id"] for d in body["data"]] == ["0", "1"]
    first = body["data"][0]
    assert set(first) == {
        "id",
        "event_id",
        "event",
        "directory_id",
        "endpoint",
        "delivered",
        "status",
        "status_code",
        "latency_ms",
        "error",
        "response_excerpt",
        "payload",
        "created_at",
        "attempted_at",
        "finished_at",
    }
    assert first["directory_id"] == str(directory_a.id)
    assert (first["delivered"], first["status"], first["status_code"], first["error"]) == (True, "delivered", 200, None)


def test_paging_with_default_limit_offset_and_cap(api_client: Client, directory_a: Directory) -> None:
    _log(directory_a, 105)
    assert len(api_client.get(_url(directory_a)).json()["data"]) == 100
    page = api_client.get(_url(directory_a), {"pageOffset": 100, "pageLimit": 10}).json()["data"]
    assert [d["payload"]["id"] for d in page] == ["100", "101", "102", "103", "104"]
    assert len(api_client.get(_url(directory_a), {"pageLimit": 5000}).json()["data"]) == 105


@pytest.mark.parametrize(
    "params",
    [{"pageOffset": "abc"}, {"pageLimit": "ten"}, {"pageOffset": "-1"}, {"pageLimit": "1.5"}, {"failed": "maybe"}],
)
def test_bad_paging_or_filter_is_400_in_the_envelope(api_client: Client, directory_a: Directory, params: dict) -> None:
    response = api_client.get(_url(directory_a), params)
    assert response.status_code == 400
    assert response.json()["data"] is None
    assert response.json()["error"]["code"] == 400
    assert response.json()["error"]["message"]


def test_filters_failed_and_delivered(api_client: Client, directory_a: Directory) -> None:
    _log(directory_a, 2, delivered=True)
    _log(directory_a, 3, delivered=False, start=2)
    failed = api_client.get(_url(directory_a), {"failed": "true"}).json()["data"]
    assert [d["status"] for d in failed] == ["failed"] * 3
    assert failed[0]["error"] == {"class": "HTTPStatus", "message": "answered 500"}
    assert len(api_client.get(_url(directory_a), {"failed": "false"}).json()["data"]) == 2
    assert len(api_client.get(_url(directory_a), {"status": "failed"}).json()["data"]) == 3
    assert len(api_client.get(_url(directory_a), {"status": "delivered"}).json()["data"]) == 2
    assert api_client.get(_url(directory_a), {"status": "lost"}).status_code == 400
    assert api_client.get(_url(directory_a), {"status": "failed", "failed": "false"}).status_code == 400


def test_only_get_is_allowed(api_client: Client, directory_a: Directory) -> None:
    response = api_client.post(_url(directory_a), {}, content_type="application/json")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == 405


def test_listing_takes_few_queries(
    api_client: Client,
    directory_a: Directory,
    django_assert_max_num_queries,  # noqa: ANN001
) -> None:
    _log(directory_a, 50)
    with django_assert_max_num_queries(2):
        assert len(api_client.get(_url(directory_a)).json()["data"]) == 50
