"""The health of a directory's SCIM connection: what each request adds, and the rule that decides the
state (contract §4.1). No database here: `Counters` is what a web process keeps in memory and what the
health row holds, and `health_state` reads either.

Counters add up whatever the order: times keep their maximum, the per-hour counts their sum, the
latest authenticated failures the newest five, the secrets' uses their latest time. So the batches of
several processes, merged into the row in any order and any grouping, give the row one process would
have written had it seen every request (docs/decisions.md, "Health").
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from directories.models import HealthState, ScimHealth

# How a request ended, as far as health is concerned (every kind names an existing directory):
REFUSED = "refused"  # 401: no secret, or one that is not this directory's
AUTHENTICATED = "authenticated"  # the secret matched and the directory took the request (any status)
DEACTIVATED = "deactivated"  # the secret matched, the directory is deactivated: 403
UNCHECKED = "unchecked"  # refused before its secret was looked at (a body too large, a content type: 413, 415)
THROTTLED = "throttled"  # refused by the directory's rate limit (429), before or after its secret was checked

# `failing`: the last this many authenticated requests all failed.
FAILING_AFTER = 5
HOUR_US = 3600 * 1_000_000
DAY_HOURS = 24
# `throttled`: more than half of the requests of the last minute were refused by the rate limit, counted in
# slots of ten seconds (the current one and the five before it).
SLOT_US = 10 * 1_000_000
MINUTE_SLOTS = 6


def secret_mark(secret: str) -> bytes:
    """What a process remembers of the secret a request matched, to credit its use to that secret when
    it flushes, after any rotation since (a digest: the secret itself is not kept)."""
    return hashlib.blake2b(secret.encode(), digest_size=16).digest()


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def hour_of(at_us: int) -> int:
    return at_us // HOUR_US


def micros(moment: datetime | None) -> int | None:
    """A time as microseconds since the epoch (the counters' unit), exactly."""
    if moment is None:
        return None
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def moment_of(at_us: int | None) -> datetime | None:
    return None if at_us is None else _EPOCH + timedelta(microseconds=at_us)


def _later(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if a >= b else b


@dataclass(slots=True)
class Counters:
    """What the SCIM requests naming one directory told, in microseconds since the epoch."""

    last_request: int | None = None
    last_success: int | None = None
    last_error: int | None = None
    last_authenticated: int | None = None
    last_auth_failure: int | None = None
    failures: list[int] = field(default_factory=list)  # authenticated failures, newest first, at most five
    hours: dict[int, list[int]] = field(default_factory=dict)  # hour -> [requests, errors, auth failures]
    uses: dict[bytes, int] = field(default_factory=dict)  # secret_mark -> last use
    minute: dict[int, list[int]] = field(default_factory=dict)  # ten-second slot -> [requests, throttled]

    def add(self, *, at: int, status: int, kind: str, mark: bytes | None = None) -> None:
        """One request: `at` when it arrived, `status` its answer, `kind` one of the kinds above, `mark`
        the secret_mark of the secret it matched (authenticated requests)."""
        error = status >= 400
        self.last_request = _later(self.last_request, at)
        counts = self.hours.setdefault(hour_of(at), [0, 0, 0])
        counts[0] += 1
        if error:
            self.last_error = _later(self.last_error, at)
            counts[1] += 1
        slot = self.minute.setdefault(at // SLOT_US, [0, 0])
        slot[0] += 1
        if kind == THROTTLED:
            slot[1] += 1  # neither an authentication failure nor a failure of the directory's data
        elif kind == REFUSED:
            self.last_auth_failure = _later(self.last_auth_failure, at)
            counts[2] += 1
        elif kind == AUTHENTICATED:
            self.last_authenticated = _later(self.last_authenticated, at)
            if error:
                self._failures_add([at])
            else:
                self.last_success = _later(self.last_success, at)
            if mark is not None:
                self._use(mark, at)

    def _failures_add(self, times: list[int]) -> None:
        self.failures = sorted({*self.failures, *times}, reverse=True)[:FAILING_AFTER]

    def merge(self, other: Counters) -> None:
        """Add `other` (a later or an earlier batch, of this process or another) to these counters."""
        for name in ("last_request", "last_success", "last_error", "last_authenticated", "last_auth_failure"):
            setattr(self, name, _later(getattr(self, name), getattr(other, name)))
        self._failures_add(other.failures)
        for hour, counts in other.hours.items():
            mine = self.hours.setdefault(hour, [0, 0, 0])
            for i in range(3):
                mine[i] += counts[i]
        for mark, at in other.uses.items():
            self._use(mark, at)
        for slot, counts in other.minute.items():
            mine = self.minute.setdefault(slot, [0, 0])
            mine[0] += counts[0]
            mine[1] += counts[1]

    def _use(self, mark: bytes, at: int) -> None:
        known = self.uses.get(mark)
        if known is None or at > known:
            self.uses[mark] = at

    def recent_hours(self, now_us: int) -> dict[int, list[int]]:
        """The hour counts of the rolling day ending at `now_us`: this hour and the 23 before it."""
        first = hour_of(now_us) - (DAY_HOURS - 1)
        return {hour: counts for hour, counts in self.hours.items() if hour >= first}

    def recent_minute(self, now_us: int) -> dict[int, list[int]]:
        """The slot counts of the last minute ending at `now_us`."""
        first = now_us // SLOT_US - (MINUTE_SLOTS - 1)
        return {slot: counts for slot, counts in self.minute.items() if slot >= first}

    def throttled(self, now_us: int) -> bool:
        """More than half of the last minute's requests were refused by the rate limit."""
        requests = refused = 0
        for counts in self.recent_minute(now_us).values():
            requests += counts[0]
            refused += counts[1]
        return refused * 2 > requests

    def day_totals(self, now_us: int) -> tuple[int, int, int]:
        """(requests, errors, auth failures) of the rolling day ending at `now_us`."""
        totals = [0, 0, 0]
        for counts in self.recent_hours(now_us).values():
            for i in range(3):
                totals[i] += counts[i]
        return totals[0], totals[1], totals[2]


def health_state(*, deactivated: bool, counters: Counters, now_us: int, silent_us: int) -> str:
    """The state, first match wins (contract §4.1):

    - deactivated: the directory is deactivated;
    - invalid_credentials: a 401 arrived and no request has got past the secret check since (or ever);
    - throttled: more than half of the requests of the last minute were refused by the rate limit (429):
      the identity provider is told to wait, which explains its failures better than `failing` would, and
      throttled requests are not counted as failures (docs/decisions.md, "Rate limits");
    - failing: the last FAILING_AFTER authenticated requests all failed, i.e. the FAILING_AFTER latest
      authenticated failures are all later than the latest success;
    - silent: requests came once, none for `silent_us`;
    - healthy: requests came; never_connected: none ever did.
    """
    c = counters
    if deactivated:
        return HealthState.DEACTIVATED
    if c.last_auth_failure is not None and (c.last_authenticated is None or c.last_auth_failure > c.last_authenticated):
        return HealthState.INVALID_CREDENTIALS
    if c.throttled(now_us):
        return HealthState.THROTTLED
    if len(c.failures) >= FAILING_AFTER and (c.last_success is None or c.failures[FAILING_AFTER - 1] > c.last_success):
        return HealthState.FAILING
    if c.last_request is not None and c.last_request < now_us - silent_us:
        return HealthState.SILENT
    if c.last_request is not None:
        return HealthState.HEALTHY
    return HealthState.NEVER_CONNECTED


# The row's columns of each time of the counters.
TIME_COLUMNS = {
    "last_request": "last_request_at",
    "last_success": "last_success_at",
    "last_error": "last_error_at",
    "last_authenticated": "last_authenticated_at",
    "last_auth_failure": "last_auth_failure_at",
}


def health_counters(health: ScimHealth | None) -> Counters:
    """The counters a health row holds (no row: none), as a batch would carry them (secrets' uses aside)."""
    if health is None:
        return Counters()
    counters = Counters(
        failures=[int(t) for t in health.recent_failures],
        hours={int(hour): [int(n) for n in counts] for hour, counts in health.hours.items()},
        minute={int(slot): [int(n) for n in counts] for slot, counts in (health.last_minute or {}).items()},
    )
    for name, column in TIME_COLUMNS.items():
        setattr(counters, name, micros(getattr(health, column)))
    return counters
