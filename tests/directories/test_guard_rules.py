"""The deprovision guard's setting and arithmetic (directories.guard.rules), without a database: the limits at
their edges, the percentage without rounding, the window's start, a PATCH's validation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core.errors import ValidationFailed
from directories.guard.rules import DEFAULTS, active_needed, guard_setting, guard_setting_merge, trips, window_since

SETTING = DEFAULTS | {"max_users": 10, "max_percent": 20}


@pytest.mark.parametrize(
    ("counted", "active"),
    [
        (9, 100),  # the 10th: exactly max_users
        (10, 100),  # the 11th: past max_users, but 11 of 110 is 10 %
        (21, 89),  # the 22nd: 22 of 110 is exactly 20 %
    ],
)
def test_within_one_limit_is_not_a_trip(counted: int, active: int) -> None:
    assert trips(counted, active, SETTING) is False


def test_the_trip_needs_both_limits_exceeded() -> None:
    assert trips(10, 39, SETTING) is True  # 11 > 10 and 11 of 49 is 22 %
    assert trips(10, 45, SETTING) is False  # 11 of 55 is exactly 20 %: not more
    assert trips(9, 0, SETTING) is False  # 10 users: exactly max_users, whatever the percentage
    assert trips(10, 0, SETTING) is True


def test_the_percentage_is_compared_without_rounding() -> None:
    """20 % of 47 users is 9.4: the 9th deprovision is within it, the 10th is not."""
    setting = DEFAULTS | {"max_users": 1, "max_percent": 20}
    assert trips(8, 47 - 8, setting) is False
    assert trips(9, 47 - 9, setting) is True


def test_a_max_percent_of_100_never_trips_while_a_user_is_active() -> None:
    setting = DEFAULTS | {"max_users": 1, "max_percent": 100}
    assert not any(trips(counted, 1, setting) for counted in range(0, 500, 7))
    assert active_needed(5, setting) == 1


def test_active_needed_is_the_fewest_active_users_that_keep_the_next_deprovision_within_the_percentage() -> None:
    for counted in range(0, 60):
        needed = active_needed(counted, SETTING)
        if counted + 1 <= 10:
            assert needed == 0
            continue
        assert not trips(counted, needed, SETTING)
        if needed:
            assert trips(counted, needed - 1, SETTING)


def test_the_window_starts_window_minutes_ago_or_at_the_last_re_arm() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    setting = DEFAULTS | {"window_minutes": 60}
    assert window_since(setting, now, None) == now - timedelta(minutes=60)
    assert window_since(setting, now, now - timedelta(minutes=90)) == now - timedelta(minutes=60)
    assert window_since(setting, now, now - timedelta(minutes=5)) == now - timedelta(minutes=5)


def test_a_stored_setting_missing_keys_gets_the_defaults() -> None:
    assert guard_setting({"max_users": 3}) == DEFAULTS | {"max_users": 3}
    assert guard_setting(None) == DEFAULTS


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({}, DEFAULTS),
        ({"max_users": 1}, DEFAULTS | {"max_users": 1}),
        ({"max_percent": 1, "window_minutes": 10080}, DEFAULTS | {"max_percent": 1, "window_minutes": 10080}),
        ({"max_percent": 100, "enabled": False}, DEFAULTS | {"max_percent": 100, "enabled": False}),
        ({"max_users": 2**40}, DEFAULTS | {"max_users": 2**40}),
    ],
)
def test_a_partial_setting_merges(value: dict[str, Any], expected: dict[str, Any]) -> None:
    assert guard_setting_merge(DEFAULTS, value) == expected


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("on", "deprovision_guard"),
        (None, "deprovision_guard"),
        ({"max_users": 0}, "deprovision_guard.max_users"),
        ({"max_users": -1}, "deprovision_guard.max_users"),
        ({"max_users": True}, "deprovision_guard.max_users"),
        ({"max_users": 1.5}, "deprovision_guard.max_users"),
        ({"max_percent": 0}, "deprovision_guard.max_percent"),
        ({"max_percent": 101}, "deprovision_guard.max_percent"),
        ({"window_minutes": 10081}, "deprovision_guard.window_minutes"),
        ({"window_minutes": None}, "deprovision_guard.window_minutes"),
        ({"enabled": 0}, "deprovision_guard.enabled"),
        ({"enabled": None}, "deprovision_guard.enabled"),
        ({"extra": 1}, "deprovision_guard.extra"),
    ],
)
def test_a_bad_value_names_its_field(value: Any, field: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        guard_setting_merge(DEFAULTS, value)
    assert refused.value.field == field and field in refused.value.message
