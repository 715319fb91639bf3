"""The rate limiter (core.ratelimit, contract §4.5): a token bucket of a tenth of the minute's budget,
refilled at the per-minute rate, counted in each process and settled with a shared Redis, open when the
store is down.

Each Limiter here stands for one web process. The Redis tests use the test broker's Redis (TEST_BROKER_URL)
with bucket names of their own, which expire by themselves."""

from __future__ import annotations

import logging
import math
import time
import uuid

import pytest
import redis

from core import ratelimit
from core.ratelimit import KEY_PREFIX, Limiter, Verdict, burst_of, rest_bucket, scim_bucket

UNREACHABLE = "redis://127.0.0.1:1/0"


def bucket() -> str:
    return f"test:{uuid.uuid4()}"


def flood(limiter: Limiter, key: str, per_minute: int, count: int) -> list[Verdict]:
    verdicts = [limiter.admit(key, per_minute, surface="scim") for _ in range(count)]
    assert all(v is not None for v in verdicts)
    return verdicts  # type: ignore[return-value]


def settled(limiter: Limiter) -> None:
    """What the background thread does every few milliseconds, done now."""
    limiter.settle()


# --- the rule, in one process (memory://) ------------------------------------------------------------------


def test_a_tenth_of_the_minute_may_come_at_once_and_the_next_is_refused(settings, limiter_clock) -> None:  # noqa: ANN001
    settings.RATE_LIMIT_STORAGE_URL = "memory://"
    limiter = Limiter(background=False)
    verdicts = flood(limiter, bucket(), 1500, 160)
    allowed = [v for v in verdicts if v.allowed]
    assert len(allowed) == 150
    assert verdicts[0].limit == 1500 and verdicts[0].remaining == 149
    assert [v.remaining for v in verdicts[:3]] == [149, 148, 147]
    refused = verdicts[-1]
    assert not refused.allowed and refused.remaining == 0 and refused.retry_after >= 1
    assert refused.reset == 6  # the bucket is full again six seconds on, whatever the limit


def test_a_client_that_waits_retry_after_is_accepted(settings) -> None:  # noqa: ANN001
    settings.RATE_LIMIT_STORAGE_URL = "memory://"
    limiter, key = Limiter(background=False), bucket()
    refused = [v for v in flood(limiter, key, 1500, 200) if not v.allowed][-1]
    time.sleep(refused.retry_after)
    assert limiter.admit(key, 1500, surface="scim").allowed


def test_the_bucket_refills_at_the_per_minute_rate(settings, limiter_clock) -> None:  # noqa: ANN001
    settings.RATE_LIMIT_STORAGE_URL = "memory://"
    limiter, key = Limiter(background=False), bucket()
    flood(limiter, key, 6000, 700)  # empty: 600 at once
    limiter_clock.advance(0.5)  # 100 per second come back
    assert sum(v.allowed for v in flood(limiter, key, 6000, 100)) == 50


def test_no_limit_gives_no_verdict(settings) -> None:  # noqa: ANN001
    settings.RATE_LIMIT_STORAGE_URL = "memory://"
    assert Limiter(background=False).admit(bucket(), 0, surface="rest") is None


def test_a_refusal_before_authentication_counts_nothing(settings, limiter_clock) -> None:  # noqa: ANN001
    settings.RATE_LIMIT_STORAGE_URL = "memory://"
    limiter, key = Limiter(background=False), bucket()
    assert limiter.refusal(key, surface="scim") is None  # a bucket it never saw: let it be authenticated
    flood(limiter, key, 1500, 150)
    early = limiter.refusal(key, surface="scim")
    assert early is not None and not early.allowed and early.retry_after == 1
    assert limiter.refusal(key, surface="scim") is not None  # asking again spent nothing
    limiter_clock.advance(0.04)
    assert limiter.refusal(key, surface="scim") is None
    assert limiter.admit(key, 1500, surface="scim").allowed


def test_headers_say_the_limit_what_is_left_and_when_it_is_full_again() -> None:
    assert Verdict(True, 3000, 299, 1, 0).headers() == [
        ("RateLimit-Limit", "3000"),
        ("RateLimit-Remaining", "299"),
        ("RateLimit-Reset", "1"),
    ]
    assert Verdict(False, 3000, 0, 6, 2).headers()[0] == ("Retry-After", "2")


def test_burst_is_a_tenth() -> None:
    assert [burst_of(n) for n in (1500, 3000, 6000, 600_000, 5)] == [150, 300, 600, 60_000, 1]


def test_an_api_key_never_reaches_a_bucket_name() -> None:
    name = rest_bucket("env:super-secret-key")
    assert "super-secret-key" not in name and name.startswith("rest:")
    assert scim_bucket("abc") == "scim:abc"


# --- one budget for every process (Redis) ------------------------------------------------------------------


def test_two_processes_share_one_budget(limit_store: str) -> None:
    a, b, key = Limiter(background=False), Limiter(background=False), bucket()
    flood(a, key, 1500, 1)
    flood(b, key, 1500, 1)
    settled(a)
    settled(b)  # both have answered: each now refuses as the store says
    accepted = 2
    for _ in range(20):
        accepted += sum(v.allowed for v in flood(a, key, 1500, 10))
        accepted += sum(v.allowed for v in flood(b, key, 1500, 10))
        settled(a)
        settled(b)
    # 150 at once for both together, plus the refill of the loop's time; two processes counting alone
    # would take 150 more. A settle after every ten requests bounds the overshoot by about ten.
    assert accepted <= 150 + 25 * 2 + 20, accepted
    assert accepted >= 150


def test_the_shared_ledger_counts_every_accepted_request(limit_store: str) -> None:
    a, key = Limiter(background=False), bucket()
    flood(a, key, 6000, 1)
    settled(a)
    flood(a, key, 6000, 99)
    settled(a)
    client = redis.Redis.from_url(limit_store)
    tat_us = int(client.get(KEY_PREFIX + key))
    now_us = int(client.time()[0]) * 1_000_000 + int(client.time()[1])
    # 100 requests at 10 ms each: the bucket's arrival time is about a second ahead of now.
    assert 0.8 < (tat_us - now_us) / 1e6 <= 1.0


def test_a_refusal_from_the_shared_state_is_honest_on_another_process(limit_store: str) -> None:
    a, b, key = Limiter(background=False), Limiter(background=False), bucket()
    flood(a, key, 1500, 1)
    settled(a)
    flood(a, key, 1500, 200)
    settled(a)
    flood(b, key, 1500, 1)
    settled(b)  # b learns what a spent: a full bucket (but for what refilled since)
    verdicts = flood(b, key, 1500, 5)
    refused = next(v for v in verdicts if not v.allowed)
    assert sum(v.allowed for v in verdicts) <= 2
    time.sleep(refused.retry_after)
    assert b.admit(key, 1500, surface="scim").allowed


def test_forget_empties_the_bucket_in_every_process(limit_store: str) -> None:
    a, b, key = Limiter(background=False), Limiter(background=False), bucket()
    flood(a, key, 1500, 1)
    flood(b, key, 1500, 1)
    settled(a)
    settled(b)
    flood(b, key, 1500, 200)
    settled(b)
    assert b.refusal(key, surface="scim") is not None
    a.forget(key)
    settled(b)  # the refusal marked the bucket for the next settle, which reads it emptied
    assert b.refusal(key, surface="scim") is None
    assert b.admit(key, 1500, surface="scim").allowed


def test_until_the_store_has_answered_nothing_is_refused(limit_store: str) -> None:
    limiter, key = Limiter(background=False), bucket()
    assert all(v.allowed for v in flood(limiter, key, 1500, 200))


# --- fail open -------------------------------------------------------------------------------------------------


def test_an_unreachable_store_lets_every_request_through_and_warns_once_a_minute(
    settings,  # noqa: ANN001
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings.RATE_LIMIT_STORAGE_URL = UNREACHABLE
    limiter, key = Limiter(background=False), bucket()
    flood(limiter, key, 1500, 1)
    with caplog.at_level(logging.WARNING, logger="roster.ratelimit"):
        settled(limiter)
        settled(limiter)
        settled(limiter)
    assert [r.getMessage() for r in caplog.records].count(caplog.records[0].getMessage()) == 1
    assert "cannot be reached" in caplog.records[0].getMessage()
    assert all(limiter.admit(key, 1500, surface="scim") is None for _ in range(500))
    assert limiter.refusal(key, surface="scim") is None
    limiter._warned_at -= ratelimit.WARN_EVERY_SECONDS  # a minute later
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="roster.ratelimit"):
        settled(limiter)
    assert len(caplog.records) == 1  # a minute later: said again


def test_the_store_s_password_never_reaches_the_log(settings, caplog: pytest.LogCaptureFixture) -> None:  # noqa: ANN001
    settings.RATE_LIMIT_STORAGE_URL = "redis://:hunter2-password@127.0.0.1:1/0"
    limiter = Limiter(background=False)
    flood(limiter, bucket(), 1500, 1)
    with caplog.at_level(logging.WARNING, logger="roster.ratelimit"):
        settled(limiter)
    assert caplog.records and all("hunter2" not in r.getMessage() for r in caplog.records)


def test_a_store_that_comes_back_counts_again(limit_store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    limiter, key = Limiter(background=False), bucket()
    flood(limiter, key, 1500, 1)

    def unreachable(*args: object) -> None:
        raise redis.ConnectionError("down")

    with monkeypatch.context() as patched:
        patched.setattr(ratelimit._RedisStore, "settle", unreachable)
        settled(limiter)
    assert limiter.admit(key, 1500, surface="scim") is None
    settled(limiter)  # asks the store whether it is back: it is
    assert sum(v.allowed for v in flood(limiter, key, 1500, 200)) < 200


def test_the_retry_after_of_a_shared_store_covers_unsettled_requests_elsewhere(limit_store: str) -> None:
    a, key = Limiter(background=False), bucket()
    flood(a, key, 1500, 1)
    settled(a)
    refused = [v for v in flood(a, key, 1500, 200) if not v.allowed][0]
    # The exact wait is at most one emission interval (40 ms); the margin for others is added.
    assert refused.retry_after == math.ceil(0.04 + ratelimit.RETRY_MARGIN_SECONDS) == 1
