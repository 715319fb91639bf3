"""GET /metrics (contract §7.1): METRICS_TOKEN, the families, what is read at scrape time, no personal data."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import OperationalError
from django.test import Client
from django.utils import timezone

from directories.models import Directory
from tests.actors import TEST_ACTOR
from tests.core.test_metrics import samples
from tests.scim.conftest import Scim, user_body
from tests.webhooks.conftest import Receiver, make_hooked_directory
from webhooks.models import EventState, WebhookEvent
from webhooks.services import SWEEP, drain_pool, heartbeat_record

TOKEN = "metrics-token-0123456789abcdef"


@pytest.fixture
def token(settings: Any) -> str:
    settings.METRICS_TOKEN = TOKEN
    return TOKEN


def scrape() -> dict:
    response = Client(HTTP_AUTHORIZATION=f"Bearer {TOKEN}").get("/metrics")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain; version=0.0.4")
    return samples(response.content)


def value(got: dict, name: str, **labels: str) -> float:
    return got.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_is_not_found_while_the_token_is_unset(db: Any) -> None:
    response = Client(HTTP_AUTHORIZATION="Bearer anything").get("/metrics")
    assert response.status_code == 404 and b"roster_" not in response.content


@pytest.mark.parametrize(
    "authorization", [None, "Bearer wrong", f"Bearer {TOKEN}x", f"Basic {TOKEN}", "Bearer", "Bearer test-env-api-key"]
)
def test_an_anonymous_or_wrong_credential_gets_401_without_metrics(
    token: str, db: Any, authorization: str | None
) -> None:
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    response = Client(**headers).get("/metrics")
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
    assert b"roster_" not in response.content


def test_another_directorys_scim_secret_is_no_metrics_token(token: str, directory_b: Directory) -> None:
    response = Client(HTTP_AUTHORIZATION=f"Bearer {directory_b.scim_secret}").get("/metrics")
    assert response.status_code == 401


def test_metrics_only_answers_reads(token: str, db: Any) -> None:
    assert Client(HTTP_AUTHORIZATION=f"Bearer {TOKEN}").post("/metrics").status_code == 405


def test_scim_and_rest_requests_are_counted_by_their_labels(
    token: str, directory_a: Directory, api_client: Client
) -> None:
    before = scrape()
    scim = Scim(directory_a)
    assert scim.post("/Users", user_body("ann@example.com"))[0] == 201
    assert scim.get("/Users/7b0c4f5e-2d0a-4a51-9d7e-1c2b3a4d5e6f")[0] == 404
    assert Scim(directory_a, secret="wrong").get("/Groups")[0] == 401
    assert scim.get("/NoSuchThing")[0] == 404
    assert api_client.get(f"/api/v1/directory-sync/{directory_a.id}").status_code == 200
    after = scrape()
    labels = {"directory_type": "okta-scim-v2", "resource": "users"}
    name = "roster_scim_requests_total"
    assert (
        value(after, name, **labels, method="POST", status_class="2xx")
        == value(before, name, **labels, method="POST", status_class="2xx") + 1
    )
    assert (
        value(after, name, **labels, method="GET", status_class="4xx")
        == value(before, name, **labels, method="GET", status_class="4xx") + 1
    )
    unknown = {"directory_type": "unknown", "method": "GET", "resource": "groups", "status_class": "4xx"}
    assert value(after, name, **unknown) == value(before, name, **unknown) + 1
    other = {"directory_type": "okta-scim-v2", "method": "GET", "resource": "other", "status_class": "4xx"}
    assert value(after, name, **other) == value(before, name, **other) + 1  # a made-up path is no label
    count = "roster_scim_request_duration_seconds_count"
    assert value(after, count, **labels, method="POST") == value(before, count, **labels, method="POST") + 1
    route = {"surface": "rest", "route": "api/v1/directory-sync/<str:directory_id>", "method": "GET", "status": "200"}
    assert (
        value(after, "roster_http_requests_total", **route) == value(before, "roster_http_requests_total", **route) + 1
    )


@pytest.mark.django_db(transaction=True)
def test_events_deliveries_and_lag_are_counted(token: str, receiver: Receiver, private_ok: Any) -> None:
    directory = make_hooked_directory(receiver)
    failing = make_hooked_directory(receiver, path="/fail", tenant="globex")
    before = scrape()
    assert Scim(directory).post("/Users", user_body("bo@example.com"))[0] == 201
    assert Scim(failing).post("/Users", user_body("cy@example.com"))[0] == 201
    assert drain_pool.drain(timeout=20)
    after = scrape()
    recorded = ("roster_webhook_events_recorded_total", {"event_type": "user.created"})
    assert value(after, recorded[0], **recorded[1]) == value(before, recorded[0], **recorded[1]) + 2
    delivered = {"outcome": "delivered", "error_class": ""}
    failed = {"outcome": "failed", "error_class": "HTTPStatus"}
    assert (
        value(after, "roster_webhook_deliveries_total", **delivered)
        == value(before, "roster_webhook_deliveries_total", **delivered) + 1
    )
    assert (
        value(after, "roster_webhook_deliveries_total", **failed)
        == value(before, "roster_webhook_deliveries_total", **failed) + 1
    )
    assert value(after, "roster_webhook_lag_seconds_count") == value(before, "roster_webhook_lag_seconds_count") + 2
    assert value(after, "roster_webhook_delivery_duration_seconds_count", outcome="failed") >= 1


def test_the_outbox_backlog_and_the_last_sweep_are_read_at_scrape_time(token: str, directory_a: Directory) -> None:
    old = timezone.now() - timedelta(seconds=600)
    for i in range(3):
        WebhookEvent.objects.create(
            directory_id=directory_a.id, event_type="user.created", body="{}", created_at=old + timedelta(seconds=i)
        )
    WebhookEvent.objects.create(
        directory_id=directory_a.id,
        event_type="user.created",
        body="{}",
        state=EventState.SENDING,
        claimed_at=timezone.now(),
    )
    heartbeat_record(name=SWEEP)
    got = scrape()
    assert value(got, "roster_webhook_outbox_events", state="pending") == 3
    assert value(got, "roster_webhook_outbox_events", state="sending") == 1
    assert 590 <= value(got, "roster_webhook_outbox_oldest_pending_age_seconds") <= 700
    assert abs(value(got, "roster_webhook_sweep_last_run_timestamp_seconds") - timezone.now().timestamp()) < 60
    assert value(got, "roster_database_up") == 1


def test_a_scrape_without_the_database_still_answers_with_the_process_counters(
    token: str, db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable() -> Any:
        raise OperationalError("gone")

    monkeypatch.setattr("operations.views.outbox_backlog", unavailable)
    got = scrape()
    assert value(got, "roster_database_up") == 0
    assert not any(name == "roster_webhook_outbox_events" for name, _ in got)


def test_login_failures_are_counted(token: str, db: Any, settings: Any) -> None:
    settings.ADMIN_ROOT_TOKEN = "root-token-0123456789"
    before = value(scrape(), "roster_admin_login_failures_total")
    Client().post(
        "/auditlog/admin/v1/user/_login",
        {"claims": {"email": "a@b.c"}},
        content_type="application/json",
        HTTP_AUTHORIZATION="token=wrong",
    )
    assert value(scrape(), "roster_admin_login_failures_total") == before + 1


def test_no_secret_email_or_user_name_is_ever_a_label_value(
    token: str, directory_a: Directory, api_client: Client
) -> None:
    scim = Scim(directory_a)
    assert scim.post("/Users", user_body("canary.person@example.com", password="canary-password"))[0] == 201
    Scim(directory_a, secret="canary-wrong-secret").get("/Users?filter=userName%20eq%20%22canary.filter%22")
    api_client.get("/api/v1/directory-sync/users?tenant=acme&product=crm&email=canary.query@example.com")
    text = Client(HTTP_AUTHORIZATION=f"Bearer {TOKEN}").get("/metrics").content.decode()
    for canary in ("canary", "example.com", directory_a.scim_secret, str(directory_a.id), TOKEN, "test-env-api-key"):
        assert canary not in text, canary


def test_directories_with_a_tripped_guard_are_read_at_scrape_time(token: str, db: Any) -> None:
    from directories.services import directory_create
    from tests.scim.guardkit import guard_set, users_make

    assert value(scrape(), "roster_guard_tripped_directories") == 0
    directory = guard_set(
        directory_create(actor=TEST_ACTOR, data={"tenant": "acme", "product": "crm"}), max_users=1, max_percent=1
    )
    scim = Scim(directory)
    ids = users_make(scim, 4)
    for user_id in ids:
        scim.delete(f"/Users/{user_id}")
    got = scrape()
    assert value(got, "roster_guard_tripped_directories") == 1
    assert value(got, "roster_guard_held_changes") == 3
