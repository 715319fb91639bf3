"""The deprovision guard's setting and its arithmetic (contract §4.2), without a database.

The window: a deprovision counts while it is younger than `window_minutes` (recorded at `at`, it counts
at `now` when `at > now - window`), and only if it came after the guard last re-armed.

"The users active at the window's start" is computed as: the users of the directory whose `active` is true
now (the application's view: a held change does not change it) plus the deprovisions the window holds.
Each of those deprovisions took out a user who was active before it and inside the window, and nothing
else is counted twice, so during a wave the sum stays what it was when the wave began. A user created or
re-activated inside the window counts as if it had been there at its start: the guard errs towards letting
a directory that is filling up shrink a little more, never towards holding more.

The guard trips on the deprovision that would make the window's count `n = d + 1` exceed both limits:
`n > max_users` and `n × 100 > max_percent × base`, with `base = active now + d`, compared in integers
(no rounding: 20 % of 47 users is 9.4, so the 10th deprovision exceeds it).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from core.errors import ValidationFailed

FIELD = "deprovision_guard"
DEFAULTS: dict[str, Any] = {"enabled": True, "max_users": 10, "max_percent": 20, "window_minutes": 60}
# (lowest, highest) of each number of the setting.
BOUNDS = {"max_users": (1, None), "max_percent": (1, 100), "window_minutes": (1, 10080)}
WINDOW_MAX = timedelta(minutes=BOUNDS["window_minutes"][1])


def now() -> datetime:
    """The guard's clock: every instant the guard records or compares comes from here (one place, so that a
    test can move it)."""
    return timezone.now()


def guard_defaults() -> dict[str, Any]:
    """A new directory's setting (a fresh dict each time: it is a model field's default)."""
    return dict(DEFAULTS)


def guard_setting(stored: Any) -> dict[str, Any]:
    """The setting as stored, completed with the defaults for any key it lacks."""
    return DEFAULTS | (stored if isinstance(stored, dict) else {})


def guard_setting_merge(current: Any, value: Any) -> dict[str, Any]:
    """The setting after a PATCH: `value` is a partial object merged into `current`; every key is checked
    (ValidationFailed naming `deprovision_guard.<key>`). `enabled` is a boolean; the numbers are integers
    within BOUNDS (a boolean is not an integer, nor is 10.0)."""
    if not isinstance(value, dict):
        raise ValidationFailed(
            f"{FIELD} must be an object with any of: {', '.join(DEFAULTS)}.",
            field=FIELD,
        )
    unknown = [key for key in value if key not in DEFAULTS]
    if unknown:
        raise ValidationFailed(
            f"{FIELD}.{unknown[0]} is not a setting; use any of: {', '.join(DEFAULTS)}.",
            field=f"{FIELD}.{unknown[0]}",
        )
    if "enabled" in value and not isinstance(value["enabled"], bool):
        raise ValidationFailed(f"{FIELD}.enabled must be true or false.", field=f"{FIELD}.enabled")
    for key, (low, high) in BOUNDS.items():
        if key not in value:
            continue
        number = value[key]
        if type(number) is not int or number < low or (high is not None and number > high):
            upto = f"from {low} to {high}" if high is not None else f"of at least {low}"
            raise ValidationFailed(f"{FIELD}.{key} must be an integer {upto}.", field=f"{FIELD}.{key}")
    return guard_setting(current) | value


def window_since(setting: dict[str, Any], now: datetime, armed_at: datetime | None) -> datetime:
    """The instant after which a deprovision still counts at `now`: the window's start, or the last
    re-arm when that is later."""
    start = now - timedelta(minutes=setting["window_minutes"])
    return max(start, armed_at) if armed_at is not None else start


def active_needed(counted: int, setting: dict[str, Any]) -> int:
    """How many active users the directory must have now for one more deprovision (`counted` already in
    the window) to stay within `max_percent`; 0 when it stays within `max_users` (nothing else to ask).

    With n = counted + 1, p = max_percent, a = active now: within the percentage when
    n × 100 <= p × (a + counted), i.e. a >= (n × 100 − p × counted) / p. The caller counts active
    users only up to this number, so the cost of the check follows the window, not the directory."""
    following = counted + 1
    if following <= setting["max_users"]:
        return 0
    percent = setting["max_percent"]
    return max(0, math.ceil((following * 100 - percent * counted) / percent))


def trips(counted: int, active: int, setting: dict[str, Any]) -> bool:
    """Whether one more deprovision, after `counted` in the window, with `active` users active now,
    exceeds both limits (module docstring)."""
    following = counted + 1
    base = active + counted
    return following > setting["max_users"] and following * 100 > setting["max_percent"] * base
