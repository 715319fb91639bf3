"""Rate limits (contract §4.5): how many requests a directory (SCIM) or an API key (REST) may make, one
budget for every node and process of a deployment, decided without a round trip per request.

**The rule.** A limit of L requests per minute is a token bucket holding L/10 requests (the burst: a
tenth of the minute's budget may come at once) and refilled at L/60 per second, kept in its GCRA form:
one number per bucket, the theoretical arrival time `tat`. Each accepted request moves it on by the
emission interval T = 60/L seconds (from now when it lies in the past); a request is accepted while
`max(tat, now) + T - now` stays within the bucket's window, W = burst × T (six seconds whatever L is).
So a refused request costs nothing, Retry-After is when `tat` will have come back within the window, and
RateLimit-Reset when the bucket will be full again. `limit` 0 means no limit (no headers either).

**Where the count lives.** Each process decides from its own view of every bucket it has seen: the
`tat` it last read from the shared store, moved on by what it accepted since. A background thread settles
with the store every SETTLE_SECONDS: for each bucket used since, one atomic script on Redis adds the
requests this process accepted to the shared `tat` (at the Redis server's clock) and returns it, and the
process's view becomes that (plus what it accepted meanwhile). The store's ledger is exact; only each
process's view lags by one settle. The shared total may therefore overshoot by what the other processes
accepted during one settle interval (at most the requests they receive in SETTLE_SECONDS, and never more
than (processes − 1) × burst when every process starts from the same stale view); that excess stays in
the ledger and is refused afterwards, so over a minute a bucket accepts at most L + burst + that
overshoot. Retry-After adds RETRY_MARGIN_SECONDS for what others accepted and have not settled yet.
Measured in bench/README.md ("Rate limits").

`memory://` keeps the buckets in the process and nothing else: each process then counts alone.

**Fail open.** A store that cannot be reached lets every request through, uncounted and without headers,
until it answers again (tried every DOWN_RETRY_SECONDS), with one warning a minute at most: a rate limiter
must not become an outage. Until the store has answered once, a process counts but refuses nothing.

The surfaces call `admit` once a request is authenticated (it counts), and `refusal` before (it never
counts: it answers from the view alone, no database, no round trip, while the bucket is already full);
`forget` empties a bucket everywhere (a directory's limit changed).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
import threading
import time
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from django.conf import settings
from django.core.signals import setting_changed

from core import metrics
from core.redisclient import redis_client

logger = logging.getLogger("roster.ratelimit")

KEY_PREFIX = "roster:ratelimit:"
SETTLE_SECONDS = 0.05
# Added to Retry-After on a shared store: what other processes accepted in their last settle interval.
RETRY_MARGIN_SECONDS = 0.25
DOWN_RETRY_SECONDS = 1.0
WARN_EVERY_SECONDS = 60.0
BURST_FRACTION = 10
CONNECT_TIMEOUT = 1.0  # seconds; the settle runs in the background: no request waits on them
COMMAND_TIMEOUT = 2.0
# The estimate of the store's clock is the one of the shortest round trip within this long.
OFFSET_KEEP_SECONDS = 60.0
# A bucket nobody used for this long, and full again, is dropped from a process's view.
IDLE_SECONDS = 120.0
PRUNE_EVERY = 4096

MEMORY = "memory://"
# A microsecond: what time differences and request counts may be off by from floating-point rounding.
SLACK = 1e-6
# This process's clock for the buckets (a test may stop it).
_clock = time.monotonic
_UNKNOWN, _UP, _DOWN = "unknown", "up", "down"

# KEYS[1] the bucket; ARGV[1] requests accepted since the last settle, ARGV[2] the emission interval in
# microseconds. Adds them to the shared tat at the server's clock and returns {tat, now} in microseconds.
SETTLE_SCRIPT = """
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local n = tonumber(ARGV[1])
if n > 0 then
  tat = tat + n * tonumber(ARGV[2])
  redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
end
return {string.format('%d', tat), string.format('%d', now)}
"""


class Verdict(NamedTuple):
    """What a limit says about one request."""

    allowed: bool
    limit: int  # requests per minute
    remaining: int  # requests accepted back to back from now (at most the burst)
    reset: int  # whole seconds until the bucket is full again
    retry_after: int  # whole seconds, at least 1, after which a refused request is accepted (0 when allowed)

    def headers(self) -> list[tuple[str, str]]:
        """The RateLimit header fields (IETF draft), and Retry-After on a refusal."""
        fields = [
            ("RateLimit-Limit", str(self.limit)),
            ("RateLimit-Remaining", str(self.remaining)),
            ("RateLimit-Reset", str(self.reset)),
        ]
        if not self.allowed:
            fields.insert(0, ("Retry-After", str(self.retry_after)))
        return fields


def _seconds(value: float) -> int:
    """Whole seconds, rounded up, of a difference of two clock readings: a reading of a clock that has run
    for days carries a rounding error of some picoseconds, which SLACK keeps from making 6 seconds 7."""
    return math.ceil(value - SLACK)


def burst_of(per_minute: int) -> int:
    return max(1, per_minute // BURST_FRACTION)


class _Bucket:
    __slots__ = ("interval", "limit", "pending", "tat", "used", "window")

    def __init__(self, now: float) -> None:
        self.tat = now  # the theoretical arrival time, on this process's monotonic clock
        self.pending = 0  # accepted here since the last settle
        self.used = False  # asked about since the last settle
        self.limit = 0
        self.interval = 0.0
        self.window = 0.0

    def shape(self, per_minute: int) -> None:
        if per_minute != self.limit:
            self.limit = per_minute
            self.interval = 60.0 / per_minute
            self.window = burst_of(per_minute) * self.interval


class Limiter:
    """The buckets of this process and their settling with the store named by RATE_LIMIT_STORAGE_URL."""

    def __init__(self, *, background: bool = True) -> None:
        # `background` false: no settle thread; `settle()` is called by hand (the tests).
        self._background = background
        self._forked()

    def _forked(self) -> None:
        """A fresh state: at start, in a forked child (the web server's workers), and when the settings
        change. The parent's buckets and thread are the parent's."""
        self._lock = threading.Lock()
        self._buckets: dict[str, _Bucket] = {}
        self._url: str | None = None
        self._store: _RedisStore | None = None
        self._state = _UNKNOWN
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._idle = True
        self._warned_at = -math.inf
        self._calls = 0
        self._offset: float | None = None  # see _offset_update
        self._offset_rtt = math.inf
        self._offset_at = -math.inf

    # --- the request path ---------------------------------------------------------------------------------

    def admit(self, key: str, per_minute: int, *, surface: str) -> Verdict | None:
        """Count one request against `key`'s bucket of `per_minute`; None when there is no limit (0) or
        the store is down (the request goes through uncounted)."""
        if per_minute <= 0:
            return None
        shared = self._shared()
        now = _clock()
        with self._lock:
            if self._state == _DOWN:
                return None
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(now)
            bucket.shape(per_minute)
            bucket.used = shared
            start = bucket.tat if bucket.tat > now else now
            after = start + bucket.interval
            if after - now <= bucket.window + SLACK or self._state == _UNKNOWN:
                bucket.tat = after
                bucket.pending += shared
                verdict = Verdict(
                    True,
                    per_minute,
                    max(0, int((bucket.window - (after - now)) / bucket.interval + SLACK)),
                    _seconds(after - now),
                    0,
                )
            else:
                verdict = self._refused(bucket, now, shared)
            self._calls += 1
            if self._calls % PRUNE_EVERY == 0:
                self._prune(now)
            if shared and self._idle:
                self._idle = False
                self._wake.set()
        if not verdict.allowed:
            metrics.rate_limited(surface=surface)
        return verdict

    def refusal(self, key: str, *, surface: str) -> Verdict | None:
        """The refusal of a request to `key` if its bucket, as this process sees it, is full now; None
        otherwise (the request goes on to be authenticated and counted). Counts nothing."""
        bucket = self._buckets.get(key)
        if bucket is None or bucket.limit <= 0:
            return None
        now = _clock()
        start = bucket.tat if bucket.tat > now else now
        if start + bucket.interval - now <= bucket.window + SLACK:
            return None
        shared = self._shared()
        with self._lock:
            if self._state != _UP:
                return None
            # Kept fresh by the next settle, so a bucket emptied elsewhere (`forget`) opens here too.
            bucket.used = shared
            verdict = self._refused(bucket, now, shared)
            if shared and self._idle:
                self._idle = False
                self._wake.set()
        metrics.rate_limited(surface=surface)
        return verdict

    def _refused(self, bucket: _Bucket, now: float, shared: bool) -> Verdict:
        start = bucket.tat if bucket.tat > now else now
        wait = start + bucket.interval - bucket.window - now
        if shared:
            wait += RETRY_MARGIN_SECONDS
        return Verdict(False, bucket.limit, 0, _seconds(start - now), max(1, _seconds(wait)))

    def forget(self, key: str) -> None:
        """Empty `key`'s bucket, in the store and in this process's view (other processes read the
        emptied bucket at their next settle)."""
        with self._lock:
            self._buckets.pop(key, None)
        store = self._store if self._shared() else None
        if store is not None:
            try:
                store.delete(key)
            except Exception as exc:  # noqa: BLE001 - the store is down: the bucket empties by itself
                self._down(exc)

    def _prune(self, now: float) -> None:
        """Drop buckets that are full again and unused (under the lock)."""
        stale = [k for k, b in self._buckets.items() if not b.used and b.tat < now - IDLE_SECONDS and not b.pending]
        for key in stale:
            del self._buckets[key]

    # --- the store ----------------------------------------------------------------------------------------

    def _shared(self) -> bool:
        """Whether the buckets are settled with a shared store (resolved from the settings on first use)."""
        url = settings.RATE_LIMIT_STORAGE_URL
        if url != self._url:
            self._configure(url)
        return self._store is not None

    def _configure(self, url: str) -> None:
        with self._lock:
            if url == self._url:
                return
            self._buckets.clear()
            self._url = url
            self._warned_at = -math.inf  # another store: its first failure is said at once
            self._offset, self._offset_rtt = None, math.inf
            if url == MEMORY:
                self._store, self._state = None, _UP
            else:
                self._store, self._state = _RedisStore(url), _UNKNOWN
                if self._thread is None and self._background:
                    self._thread = threading.Thread(target=self._run, name="rate-limit-settle", daemon=True)
                    self._thread.start()

    def settle(self) -> bool:
        """One settle with the store: every bucket used since the last one; True when there was one (or
        when the store had to be asked whether it is back)."""
        store = self._store
        if store is None:
            return False
        with self._lock:
            down = self._state == _DOWN
            batch = []
            for key, bucket in self._buckets.items():
                if bucket.used:
                    batch.append((key, bucket, bucket.pending))
                    bucket.pending, bucket.used = 0, False
        if not batch and not down:
            return False
        sent = _clock()
        try:
            if batch:
                replies = store.settle([(key, count, bucket.interval) for key, bucket, count in batch])
            else:
                store.ping()
                replies = []
        except Exception as exc:  # noqa: BLE001 - any failure of the store is "unreachable": fail open
            self._down(exc)
            return True
        received = _clock()
        with self._lock:
            if self._state == _DOWN:
                logger.warning("Rate limits: the limit store %s answers again; counting resumes", _safe(self._url))
            self._state = _UP
            if replies:
                offset = self._offset_update(sent, received, replies[0][1])
            for (key, bucket, _count), (tat_us, _server_us) in zip(batch, replies, strict=True):
                if self._buckets.get(key) is not bucket:
                    continue  # forgotten meanwhile
                bucket.tat = tat_us / 1e6 + offset + bucket.pending * bucket.interval
        return True

    def _offset_update(self, sent: float, received: float, server_us: int) -> float:
        """The server's clock on this process's one (seconds to add to a server time), under the lock.

        A round trip's middle is the server's moment give or take half the round trip, and a thread that
        waited for the GIL after the answer came makes it look longer than it was: so the estimate kept is
        the one of the shortest round trip of the last OFFSET_KEEP_SECONDS (the clocks drift by
        microseconds a minute), and a full bucket does not look emptier because one answer was read late."""
        rtt = received - sent
        sample = (sent + received) / 2 - server_us / 1e6
        if self._offset is None or rtt <= self._offset_rtt or received - self._offset_at > OFFSET_KEEP_SECONDS:
            self._offset, self._offset_rtt, self._offset_at = sample, rtt, received
        return self._offset

    def _down(self, exc: Exception) -> None:
        now = _clock()
        with self._lock:
            self._state = _DOWN
            for bucket in self._buckets.values():
                bucket.pending = 0  # let through uncounted, as every request while the store is down
            warn = now - self._warned_at >= WARN_EVERY_SECONDS
            if warn:
                self._warned_at = now
        if warn:
            logger.warning(
                "Rate limits: the limit store %s cannot be reached (%s); requests are let through uncounted "
                "until it answers",
                _safe(self._url),
                type(exc).__name__,
            )

    def _run(self) -> None:
        while True:
            try:
                active = self.settle()
            except Exception:  # noqa: BLE001 - the thread must outlive any one settle
                logger.exception("Rate limits: settle failed")
                active = True
            if self._state == _DOWN:
                time.sleep(DOWN_RETRY_SECONDS)
            elif active:
                time.sleep(SETTLE_SECONDS)
            else:
                with self._lock:
                    self._idle = not any(bucket.used for bucket in self._buckets.values())
                    self._wake.clear()
                if self._idle:
                    self._wake.wait()

    def reset(self) -> None:
        """Forget every bucket of this process (the test suite, between tests)."""
        with self._lock:
            self._buckets.clear()
            if self._state == _DOWN:
                self._state = _UNKNOWN

    def store_problem(self) -> str | None:
        """What is wrong with the limit store, asked now (`manage.py doctor`); None when it answers or is
        memory://."""
        url = settings.RATE_LIMIT_STORAGE_URL
        if url == MEMORY:
            return None
        try:
            _RedisStore(url).ping()
        except Exception as exc:  # noqa: BLE001 - reported, whatever it is
            return f"{_safe(url)} cannot be reached ({type(exc).__name__}: {exc})"
        return None


class _RedisStore:
    """The shared buckets on Redis, through redis-py (already installed for the broker, core.redisclient):
    one pipeline of EVALSHA per settle, whatever the number of buckets."""

    def __init__(self, url: str) -> None:
        self.client = redis_client(url, connect_timeout=CONNECT_TIMEOUT, command_timeout=COMMAND_TIMEOUT)
        self.sha = hashlib.sha1(SETTLE_SCRIPT.encode()).hexdigest()  # noqa: S324 - Redis names scripts so

    def settle(self, batch: list[tuple[str, int, float]]) -> list[tuple[int, int]]:
        """[(key, accepted, interval in seconds)] → [(shared tat, server time)] in microseconds."""
        import redis

        for attempt in (1, 2):
            pipe = self.client.pipeline(transaction=False)
            for key, count, interval in batch:
                pipe.evalsha(self.sha, 1, KEY_PREFIX + key, count, repr(interval * 1e6))
            try:
                replies = pipe.execute()
            except redis.exceptions.NoScriptError:
                if attempt == 2:
                    raise
                self.client.script_load(SETTLE_SCRIPT)  # a new or restarted server
                continue
            return [(int(tat), int(now)) for tat, now in replies]
        raise AssertionError("unreachable")

    def delete(self, key: str) -> None:
        self.client.delete(KEY_PREFIX + key)

    def ping(self) -> None:
        self.client.ping()


def _safe(url: str | None) -> str:
    """The store's URL without its password, for a log line."""
    if not url:
        return "(none)"
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def storage_url_default(broker_url: str | None) -> str:
    """RATE_LIMIT_STORAGE_URL's default: the broker's URL when it is Redis, else memory://."""
    if broker_url and broker_url.split("://", 1)[0] in ("redis", "rediss"):
        return broker_url
    return MEMORY


def storage_url_check(url: str) -> str:
    """RATE_LIMIT_STORAGE_URL as the settings take it: memory:// or a redis:// or rediss:// URL."""
    from django.core.exceptions import ImproperlyConfigured

    value = url.strip()
    if value == MEMORY or value.split("://", 1)[0] in ("redis", "rediss"):
        return value
    raise ImproperlyConfigured(f"RATE_LIMIT_STORAGE_URL must be memory:// or a redis:// URL, not {_safe(value)!r}.")


# --- the buckets' names and sizes ------------------------------------------------------------------------

SCIM = "scim"
REST = "rest"


def scim_bucket(directory_id: object) -> str:
    """The bucket of a directory's SCIM requests (its token endpoint's included)."""
    return f"scim:{directory_id}"


def scim_per_minute(directory_limit: int | None) -> int:
    """A directory's SCIM limit: its own `scim_rate_limit`, else SCIM_RATE_LIMIT."""
    return settings.SCIM_RATE_LIMIT if directory_limit is None else directory_limit


@functools.lru_cache(maxsize=64)
def rest_bucket(principal: str) -> str:
    """The bucket of an API key: `principal` names it (an ApiKey row's id, or a key given in API_KEYS),
    kept as a digest so that a key never reaches the store or a log."""
    return "rest:" + hashlib.blake2b(principal.encode(), digest_size=12).hexdigest()


_limiter = Limiter()
os.register_at_fork(after_in_child=_limiter._forked)


def _settings_changed(*, setting: str, **_: Any) -> None:
    if setting in ("RATE_LIMIT_STORAGE_URL", "SCIM_RATE_LIMIT", "API_RATE_LIMIT"):
        _limiter.reset()


setting_changed.connect(_settings_changed)

admit = _limiter.admit
refusal = _limiter.refusal
forget = _limiter.forget
settle = _limiter.settle
reset = _limiter.reset
store_problem = _limiter.store_problem


# --- the headers of answers made through Django's handler (the REST API) ----------------------------------

# The request attribute a surface leaves its verdict in, for HeadersMiddleware.
REQUEST_ATTRIBUTE = "rate_limit"


class HeadersMiddleware:
    """Adds the RateLimit header fields (and Retry-After on a refusal) to the answer of a request that a
    surface counted (its verdict left on the request as REQUEST_ATTRIBUTE), whatever view or error made it."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        response = self.get_response(request)
        verdict = getattr(request, REQUEST_ATTRIBUTE, None)
        if verdict is not None:
            for name, value in verdict.headers():
                response[name] = value
        return response
