"""The REST API's rate limit per API key (contract §4.5): the envelope's 429 with an honest Retry-After,
the RateLimit header fields on every counted answer, one budget per key, a wrong key spending nothing.
The limiter's clock is stopped (tests/scim/test_rate_limits.py, Clock) unless a test really waits."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client

from core import ratelimit, turns
from directories.models import Directory
from directories.services import api_key_create
from tests.actors import TEST_ACTOR
from tests.conftest import LimiterClock

pytestmark = pytest.mark.django_db

LIST = "/api/v1/directory-sync?tenant=acme&product=crm"


@pytest.fixture(autouse=True)
def clock(limiter_clock: LimiterClock) -> LimiterClock:
    return limiter_clock


@pytest.fixture
def lowest(settings: Any) -> int:  # noqa: ANN401
    settings.API_RATE_LIMIT = 1500  # a burst of 150
    return 1500


def spend(key: str, count: int) -> None:
    """Use up `count` requests of an API_KEYS key's budget, as its requests would."""
    for _ in range(count):
        verdict = ratelimit.admit(ratelimit.rest_bucket(f"env:{key}"), 1500, surface=ratelimit.REST)
        assert verdict is not None and verdict.allowed


def test_every_counted_answer_carries_the_ratelimit_fields(api_client: Client, settings: Any) -> None:
    response = api_client.get(LIST)
    assert response.status_code == 200 and turns.REFUSED not in response.wsgi_request.environ
    assert (response["RateLimit-Limit"], response["RateLimit-Remaining"], response["RateLimit-Reset"]) == (
        "6000",
        "599",
        "1",
    )
    missing = api_client.get("/api/v1/directory-sync/00000000-0000-0000-0000-000000000000")
    assert missing.status_code == 404 and missing["RateLimit-Remaining"] == "598"  # an error counts too
    settings.API_RATE_LIMIT = 0
    assert "RateLimit-Limit" not in api_client.get(LIST)


def test_past_its_burst_a_key_is_answered_429_in_the_envelope(api_client: Client, lowest: int) -> None:
    spend("test-env-api-key", 150)
    response = api_client.get(LIST)
    assert response.status_code == 429
    assert response.json() == {
        "data": None,
        "error": {"message": response.json()["error"]["message"], "code": 429},
    }
    assert "1500 per minute" in response.json()["error"]["message"]
    assert int(response["Retry-After"]) >= 1
    assert response["RateLimit-Limit"] == "1500" and response["RateLimit-Remaining"] == "0"
    assert response["X-Request-Id"]
    assert response.wsgi_request.environ[turns.REFUSED]  # held a moment under a flood (core.turns)


def test_a_refused_request_changes_nothing(api_client: Client, lowest: int) -> None:
    spend("test-env-api-key", 150)
    body = {"tenant": "t", "product": "p"}
    response = api_client.post("/api/v1/directory-sync", body, content_type="application/json")
    assert response.status_code == 429
    assert not Directory.objects.filter(tenant="t").exists()


def test_retry_after_is_when_the_key_is_accepted_again(api_client: Client, lowest: int, clock: LimiterClock) -> None:
    spend("test-env-api-key", 150)
    refused = api_client.get(LIST)
    assert refused.status_code == 429 and refused["Retry-After"] == "1"  # 40 ms, in whole seconds
    clock.advance(0.039)
    assert api_client.get(LIST).status_code == 429
    clock.advance(0.002)
    assert api_client.get(LIST).status_code == 200


def test_a_client_that_waits_retry_after_is_accepted(api_client: Client, lowest: int, clock: LimiterClock) -> None:
    clock.run()
    spend("test-env-api-key", 150)
    refused = api_client.get(LIST)
    assert refused.status_code == 429
    time.sleep(int(refused["Retry-After"]))
    assert api_client.get(LIST).status_code == 200


def test_each_key_has_its_own_budget(api_client: Client, lowest: int) -> None:
    _, other = api_key_create(actor=TEST_ACTOR, name="other")
    spend("test-env-api-key", 150)
    assert api_client.get(LIST).status_code == 429
    response = Client(HTTP_AUTHORIZATION=f"Bearer {other}").get(LIST)
    assert response.status_code == 200 and response["RateLimit-Remaining"] == "149"


def test_a_database_key_is_limited_too(lowest: int) -> None:
    _, key = api_key_create(actor=TEST_ACTOR, name="scripted")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    statuses = [client.get(LIST).status_code for _ in range(151)]
    assert statuses == [200] * 150 + [429]


def test_a_wrong_key_spends_nobody_s_budget(api_client: Client, lowest: int) -> None:
    stranger = Client(HTTP_AUTHORIZATION="Bearer not-a-key")
    for _ in range(200):
        response = stranger.get(LIST)
        assert response.status_code == 401 and "RateLimit-Limit" not in response
    assert api_client.get(LIST)["RateLimit-Remaining"] == "149"


def test_the_openapi_document_is_counted_like_any_route(api_client: Client, lowest: int) -> None:
    spend("test-env-api-key", 150)
    response = api_client.get("/api/v1/schema")
    assert response.status_code == 429 and response["Content-Type"] == "application/json"


def test_metrics_count_rest_refusals(api_client: Client, lowest: int, settings: Any) -> None:
    settings.METRICS_TOKEN = "metrics-token"
    spend("test-env-api-key", 150)
    assert api_client.get(LIST).status_code == 429
    text = Client(HTTP_AUTHORIZATION="Bearer metrics-token").get("/metrics").content.decode()
    series = 'roster_rate_limited_requests_total{surface="rest"}'
    counted = [line for line in text.splitlines() if line.startswith(series)]
    assert counted and float(counted[0].split()[-1]) >= 1
