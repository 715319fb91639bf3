"""A directory's SCIM rate limit (contract §4.5): 429 in SCIM's format with an honest Retry-After, the
RateLimit header fields on every answer under a limit, nothing processed when refused, the token endpoint
counted too, the request log and health show it, /metrics counts it. The suite's limit store is memory://
(one process: exact)."""

from __future__ import annotations

import base64
import time
from datetime import timedelta
from typing import Any

import orjson
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core import ratelimit
from directories.activity import recorder
from directories.activity.services import scim_health_sweep
from directories.models import Directory, DirectoryUser, ScimHealth, ScimLogEntry
from directories.services import directory_scim_oauth_secret_rotate, directory_update
from scim.api import scim_request
from tests.actors import TEST_ACTOR
from tests.conftest import LimiterClock
from tests.scim.conftest import ERROR_URN, Scim, user_body
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.django_db

API = Client(HTTP_AUTHORIZATION="Bearer test-env-api-key")
LOWEST = 1500  # the lowest limit a directory may set: a burst of 150


@pytest.fixture(autouse=True)
def clock(limiter_clock: LimiterClock) -> LimiterClock:
    return limiter_clock


def limited(directory: Directory, per_minute: int | None = LOWEST) -> Directory:
    directory, _ = directory_update(actor=TEST_ACTOR, directory=directory, data={"scim_rate_limit": per_minute})
    ratelimit.reset()  # the service empties the bucket after commit; in a test's transaction, by hand
    return directory


def spend(scim: Scim, count: int = 150) -> None:
    """Use up `count` of the directory's budget as its requests would, without a round of HTTP each."""
    directory = scim.directory
    per_minute = ratelimit.scim_per_minute(Directory.objects.get(pk=directory.pk).scim_rate_limit)
    for _ in range(count):
        verdict = ratelimit.admit(ratelimit.scim_bucket(directory.id), per_minute, surface=ratelimit.SCIM)
        assert verdict is None or verdict.allowed


def refused_once(scim: Scim, path: str = "/Users") -> Any:
    for _ in range(20):
        status, body = scim.get(path)
        if status == 429:
            return scim.last, body
    raise AssertionError("never refused")


def test_past_its_burst_a_directory_is_answered_429_in_scim_s_format(scim_a: Scim) -> None:
    limited(scim_a.directory)
    spend(scim_a)
    response, body = refused_once(scim_a)
    assert response["Content-Type"] == "application/scim+json"
    assert body["schemas"] == [ERROR_URN] and body["status"] == "429" and "1500 per minute" in body["detail"]
    assert int(response["Retry-After"]) >= 1
    assert response["RateLimit-Limit"] == "1500" and response["RateLimit-Remaining"] == "0"
    assert int(response["RateLimit-Reset"]) >= int(response["Retry-After"])
    assert response["X-Request-Id"]


def test_every_answer_under_a_limit_carries_the_ratelimit_fields(scim_a: Scim) -> None:
    status, _ = scim_a.get("/Users")
    assert status == 200
    assert scim_a.last["RateLimit-Limit"] == "3000"  # SCIM_RATE_LIMIT's default
    assert scim_a.last["RateLimit-Remaining"] == "299"
    assert scim_a.last["RateLimit-Reset"] == "1"
    assert scim_a.get("/Users/not-there")[0] == 404
    assert scim_a.last["RateLimit-Remaining"] == "298"  # an error counts like any request


def test_no_limit_means_no_fields(scim_a: Scim, settings: Any) -> None:
    limited(scim_a.directory, 0)
    spend(scim_a, 400)  # past any burst: none refused
    assert scim_a.get("/Users")[0] == 200 and "RateLimit-Limit" not in scim_a.last
    settings.SCIM_RATE_LIMIT = 0
    limited(scim_a.directory, None)
    assert scim_a.get("/Users")[0] == 200 and "RateLimit-Limit" not in scim_a.last


def test_the_directory_s_own_limit_overrides_the_setting(scim_a: Scim, settings: Any) -> None:
    settings.SCIM_RATE_LIMIT = 2000
    scim_a.get("/Users")
    assert scim_a.last["RateLimit-Limit"] == "2000"
    limited(scim_a.directory, 600_000)
    scim_a.get("/Users")
    assert scim_a.last["RateLimit-Limit"] == "600000" and scim_a.last["RateLimit-Remaining"] == "59999"


def test_a_client_that_waits_retry_after_is_accepted(scim_a: Scim, clock: LimiterClock) -> None:
    clock.run()  # real time: the client really waits
    limited(scim_a.directory)
    spend(scim_a)
    response, _ = refused_once(scim_a)
    time.sleep(int(response["Retry-After"]))
    assert scim_a.get("/Users")[0] == 200


def test_retry_after_is_when_the_next_request_is_accepted(scim_a: Scim, clock: LimiterClock) -> None:
    limited(scim_a.directory, 3000)  # one request every 20 ms
    spend(scim_a, 300)
    response, _ = refused_once(scim_a)
    assert response["Retry-After"] == "1"  # 20 ms, in whole seconds
    assert response["RateLimit-Reset"] == "6"  # the whole burst back
    clock.advance(0.019)
    assert scim_a.get("/Users")[0] == 429
    clock.advance(0.002)
    assert scim_a.get("/Users")[0] == 200
    assert scim_a.get("/Users")[0] == 429


def test_a_refused_write_changes_nothing_and_sends_no_event(scim_a: Scim) -> None:
    limited(scim_a.directory)
    spend(scim_a)
    events = WebhookEvent.objects.count()
    status, body = scim_a.post("/Users", user_body("late@example.com"))
    assert status == 429 and body["status"] == "429"
    assert not DirectoryUser.objects.filter(directory=scim_a.directory).exists()
    assert WebhookEvent.objects.count() == events


def test_a_refusal_of_a_full_bucket_costs_no_database_query(scim_a: Scim) -> None:
    limited(scim_a.directory)
    spend(scim_a)
    refused_once(scim_a)
    with CaptureQueriesContext(connection) as queries:
        status, _ = scim_a.post("/Users", user_body("x@example.com"))
    assert status == 429
    assert len(queries) == 0


def test_requests_with_a_wrong_secret_spend_nothing_of_the_directory_s_budget(scim_a: Scim) -> None:
    limited(scim_a.directory)
    stranger = Scim(scim_a.directory, secret="not-the-secret")
    for _ in range(300):
        assert stranger.get("/Users")[0] == 401
    assert "RateLimit-Limit" not in stranger.last
    assert scim_a.get("/Users")[0] == 200
    assert scim_a.last["RateLimit-Remaining"] == "149"


def test_each_directory_has_its_own_budget(scim_a: Scim, scim_b: Scim) -> None:
    limited(scim_a.directory)
    spend(scim_a)
    refused_once(scim_a)
    assert scim_b.get("/Users")[0] == 200


def test_a_new_limit_starts_with_a_full_budget(scim_a: Scim) -> None:
    limited(scim_a.directory)
    spend(scim_a)
    refused_once(scim_a)
    limited(scim_a.directory, 3000)
    assert scim_a.get("/Users")[0] == 200
    assert scim_a.last["RateLimit-Limit"] == "3000"


def test_the_embedding_api_has_no_rate_limit(directory_a: Directory) -> None:
    limited(directory_a)
    request = {"method": "GET", "directoryId": str(directory_a.id), "resourceType": "users"}
    statuses = {scim_request({**request, "apiSecret": directory_a.scim_secret})["status"] for _ in range(200)}
    assert statuses == {200}


# --- the token endpoint ----------------------------------------------------------------------------------------


def _token_client(directory: Directory) -> tuple[Client, str]:
    directory, secret, *_ = directory_scim_oauth_secret_rotate(actor=TEST_ACTOR, directory=directory)
    basic = base64.b64encode(f"{directory.id}:{secret}".encode()).decode()
    return Client(HTTP_AUTHORIZATION=f"Basic {basic}"), f"/api/scim/v2.0/{directory.id}/oauth/token"


def test_the_token_endpoint_counts_for_its_directory(scim_a: Scim) -> None:
    directory = limited(scim_a.directory)
    client, url = _token_client(directory)
    form = "grant_type=client_credentials"
    first = client.post(url, form, content_type="application/x-www-form-urlencoded")
    assert first.status_code == 200 and first["RateLimit-Remaining"] == "149"
    spend(scim_a, 149)
    refused = client.post(url, form, content_type="application/x-www-form-urlencoded")
    assert refused.status_code == 429
    assert refused["Content-Type"] == "application/json" and refused["Cache-Control"] == "no-store"
    body = orjson.loads(refused.content)
    assert body["error"] == "temporarily_unavailable" and "access_token" not in body
    assert int(refused["Retry-After"]) >= 1


def test_token_requests_spend_the_budget_of_scim_requests(scim_a: Scim) -> None:
    directory = limited(scim_a.directory)
    client, url = _token_client(directory)
    for _ in range(3):
        answer = client.post(url, "grant_type=client_credentials", content_type="application/x-www-form-urlencoded")
        assert answer.status_code == 200
    assert scim_a.get("/Users")[0] == 200
    assert scim_a.last["RateLimit-Remaining"] == "146"  # three tokens and this request


# --- the request log, health and /metrics ----------------------------------------------------------------------


def test_a_throttled_request_is_in_the_request_log(scim_a: Scim) -> None:
    limited(scim_a.directory)
    spend(scim_a)
    response, _ = refused_once(scim_a, "/Users?count=5")
    recorder.flush()
    entry = ScimLogEntry.objects.filter(directory=scim_a.directory, status=429).first()
    assert entry is not None
    assert entry.request_id == response["X-Request-Id"]
    assert entry.path == "/Users" and entry.query == "count=5" and "1500 per minute" in entry.detail
    listed = API.get(f"/api/v1/directory-sync/{scim_a.directory.id}/scim-requests?status=429").json()["data"]
    assert [item["status"] for item in listed] == [429] * len(listed) and listed


def test_health_is_throttled_while_most_of_the_last_minute_was_refused(scim_a: Scim) -> None:
    limited(scim_a.directory)
    spend(scim_a, 148)
    assert [scim_a.get("/Users")[0] for _ in range(10)] == [200] * 2 + [429] * 8
    recorder.flush()
    health = API.get(f"/api/v1/directory-sync/{scim_a.directory.id}").json()["data"]["health"]
    assert health["state"] == "throttled"
    assert (health["requests_24h"], health["errors_24h"]) == (10, 8)  # a 429 is an error of the day's counters
    # A minute later, with no request since, the sweep decides again.
    scim_health_sweep(now=timezone.now() + timedelta(seconds=61))
    assert ScimHealth.objects.get(directory=scim_a.directory).state == "healthy"


def test_a_few_refusals_among_many_successes_are_not_throttled(scim_a: Scim) -> None:
    limited(scim_a.directory)
    spend(scim_a, 145)
    assert [scim_a.get("/Users")[0] for _ in range(10)] == [200] * 5 + [429] * 5
    recorder.flush()
    assert ScimHealth.objects.get(directory=scim_a.directory).state == "healthy"  # half is not more than half


def test_throttled_requests_do_not_make_a_directory_failing(scim_a: Scim) -> None:
    limited(scim_a.directory)
    spend(scim_a)
    for _ in range(10):
        refused_once(scim_a)
    recorder.flush()
    health = ScimHealth.objects.get(directory=scim_a.directory)
    assert health.recent_failures == []


def test_metrics_count_refusals_by_surface(scim_a: Scim, settings: Any) -> None:
    settings.METRICS_TOKEN = "metrics-token"
    limited(scim_a.directory)
    spend(scim_a)
    refused_once(scim_a)
    text = Client(HTTP_AUTHORIZATION="Bearer metrics-token").get("/metrics").content.decode()
    series = 'roster_rate_limited_requests_total{surface="scim"}'
    counted = [line for line in text.splitlines() if line.startswith(series)]
    assert counted and float(counted[0].split()[-1]) >= 1


# --- the setting ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1, 1499, 600_001, -1, "3000", True, 1.5, 10**30, [1500], {"a": 1}])
def test_a_limit_out_of_bounds_is_a_400_naming_the_field(directory_a: Directory, value: Any) -> None:
    response = API.patch(
        f"/api/v1/directory-sync/{directory_a.id}", {"scim_rate_limit": value}, content_type="application/json"
    )
    assert response.status_code == 400
    assert "scim_rate_limit" in response.json()["error"]["message"]
    directory_a.refresh_from_db()
    assert directory_a.scim_rate_limit is None


@pytest.mark.parametrize("value", [0, 1500, 2500, 600_000, None])
def test_a_limit_within_bounds_is_saved_and_shown(directory_a: Directory, value: Any) -> None:
    response = API.patch(
        f"/api/v1/directory-sync/{directory_a.id}", {"scim_rate_limit": value}, content_type="application/json"
    )
    assert response.status_code == 200
    assert response.json()["data"]["scim_rate_limit"] == value
    assert API.get(f"/api/v1/directory-sync/{directory_a.id}").json()["data"]["scim_rate_limit"] == value


def test_a_new_directory_follows_the_setting_unless_told(api_client: Client) -> None:
    made = api_client.post(
        "/api/v1/directory-sync", {"tenant": "t", "product": "p"}, content_type="application/json"
    ).json()["data"]
    assert made["scim_rate_limit"] is None
    body = {"tenant": "t", "product": "p", "scim_rate_limit": 4000}
    told = api_client.post("/api/v1/directory-sync", body, content_type="application/json").json()["data"]
    assert told["scim_rate_limit"] == 4000
