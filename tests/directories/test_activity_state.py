"""The health rule and the counters it reads (directories.activity.state): no database."""

from __future__ import annotations

import random

from directories.activity.state import (
    AUTHENTICATED,
    DEACTIVATED,
    FAILING_AFTER,
    HOUR_US,
    REFUSED,
    UNCHECKED,
    Counters,
    health_state,
    secret_mark,
)

DAY_US = 24 * HOUR_US
NOW = 1_800_000_000 * 1_000_000  # microseconds since the epoch
SILENT = 7 * DAY_US


def state(counters: Counters, *, deactivated: bool = False, now: int = NOW) -> str:
    return health_state(deactivated=deactivated, counters=counters, now_us=now, silent_us=SILENT)


def requests(*outcomes: tuple[str, int], start: int = NOW - 1000) -> Counters:
    """Counters after `outcomes` (kind, status), one microsecond apart, in this order."""
    counters = Counters()
    for i, (kind, status) in enumerate(outcomes):
        counters.add(at=start + i, status=status, kind=kind, mark=b"m" if kind == AUTHENTICATED else None)
    return counters


OK, FAIL, BAD_SECRET = (AUTHENTICATED, 200), (AUTHENTICATED, 400), (REFUSED, 401)


def test_a_directory_without_requests_is_never_connected() -> None:
    assert state(Counters()) == "never_connected"


def test_deactivated_wins_over_everything() -> None:
    assert state(requests(*[FAIL] * 6, BAD_SECRET), deactivated=True) == "deactivated"
    assert state(Counters(), deactivated=True) == "deactivated"


def test_successful_requests_are_healthy() -> None:
    assert state(requests(OK)) == "healthy"


def test_failing_needs_the_last_five_authenticated_requests_to_fail() -> None:
    assert state(requests(OK, *[FAIL] * (FAILING_AFTER - 1))) == "healthy"
    assert state(requests(OK, *[FAIL] * FAILING_AFTER)) == "failing"
    assert state(requests(*[FAIL] * FAILING_AFTER)) == "failing"  # never a success
    # One success among them and the last five are not all failures.
    assert state(requests(*[FAIL] * 3, OK, *[FAIL] * 4)) == "healthy"
    assert state(requests(*[FAIL] * 9, OK)) == "healthy"


def test_refusals_and_deactivation_refusals_are_not_authenticated_requests() -> None:
    # 401s, 403s of a deactivated directory and requests refused before the secret check do not break a run
    # of failures, nor count in it.
    counters = requests(OK, FAIL, FAIL, (DEACTIVATED, 403), (UNCHECKED, 415), FAIL, FAIL, FAIL)
    assert state(counters) == "failing"
    assert state(requests(OK, *[FAIL] * 3, (UNCHECKED, 413), (DEACTIVATED, 403))) == "healthy"


def test_invalid_credentials_until_a_request_gets_past_the_secret_check() -> None:
    assert state(requests(BAD_SECRET)) == "invalid_credentials"  # or ever
    assert state(requests(OK, BAD_SECRET, BAD_SECRET)) == "invalid_credentials"
    assert state(requests(OK, BAD_SECRET, OK)) == "healthy"
    # A failed request with the right secret shows the secret works: not invalid credentials.
    assert state(requests(BAD_SECRET, FAIL)) == "healthy"
    # It outranks failing: the identity provider's next problem is its secret.
    assert state(requests(*[FAIL] * 5, BAD_SECRET)) == "invalid_credentials"


def test_silent_after_the_silent_days_without_a_request() -> None:
    quiet = requests(OK, start=NOW - SILENT - 1)
    assert state(quiet) == "silent"
    assert state(requests(OK, start=NOW - SILENT + 1)) == "healthy"
    # Failing and invalid credentials outrank silent.
    assert state(requests(*[FAIL] * 5, start=NOW - 2 * SILENT)) == "failing"
    assert state(requests(BAD_SECRET, start=NOW - 2 * SILENT)) == "invalid_credentials"


def test_batches_add_up_to_the_same_counters_whatever_their_order_and_grouping() -> None:
    rng = random.Random(20)
    kinds = [OK, FAIL, BAD_SECRET, (DEACTIVATED, 403), (UNCHECKED, 415), (AUTHENTICATED, 500)]
    outcomes = [(NOW - rng.randrange(3 * DAY_US), *rng.choice(kinds)) for _ in range(400)]
    whole = Counters()
    for at, kind, status in outcomes:
        whole.add(at=at, status=status, kind=kind, mark=secret_mark("s") if kind == AUTHENTICATED else None)
    for _ in range(20):
        # Several processes, each seeing some of the requests in its own order, flushing batches in any order.
        batches = [Counters() for _ in range(rng.randrange(1, 6))]
        for at, kind, status in rng.sample(outcomes, len(outcomes)):
            mark = secret_mark("s") if kind == AUTHENTICATED else None
            rng.choice(batches).add(at=at, status=status, kind=kind, mark=mark)
        row = Counters()
        for batch in rng.sample(batches, len(batches)):
            row.merge(batch)
        assert row == whole
        assert state(row) == state(whole)


def test_day_totals_count_this_hour_and_the_23_before() -> None:
    counters = Counters()
    hour_start = NOW - NOW % HOUR_US
    counters.add(at=hour_start - 23 * HOUR_US, status=200, kind=AUTHENTICATED)  # counted
    counters.add(at=hour_start - 23 * HOUR_US - 1, status=500, kind=AUTHENTICATED)  # the hour before: not
    counters.add(at=NOW, status=401, kind=REFUSED)
    counters.add(at=NOW, status=415, kind=UNCHECKED)
    assert counters.day_totals(NOW) == (3, 2, 1)
    assert counters.day_totals(NOW + DAY_US) == (0, 0, 0)


def test_a_secret_is_remembered_by_a_digest_not_by_its_value() -> None:
    secret = "YD1WT8xnwt8pu2tBNDo0Z45mR0ktnDM0d35X_lua6Tw"
    mark = secret_mark(secret)
    assert mark == secret_mark(secret) and mark != secret_mark(secret + "x")
    assert secret.encode() not in mark and len(mark) == 16
