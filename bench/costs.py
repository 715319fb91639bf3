"""CPU cost of each SCIM operation inside one Roster process, and what candidate fixes would save.

    .venv/bin/python -m bench.costs                 # all variants, 300 requests per operation
    .venv/bin/python -m bench.costs --variants baseline --repeats 1000

Calls the WSGI application directly (no socket, no web server, no client) on a fresh PostgreSQL
database with production settings and a Redis broker, and reports process CPU milliseconds per
request (time.process_time, so waiting for PostgreSQL does not count; the least loaded of 5 rounds)
and SQL statements per request. The deprovisions (`deprovision_patch`, `delete_active`) each take a
user made beforehand; the directory's deprovision guard counts them without ever holding one (so its
percentage check, which the compare's default guard also runs, is left out); `delete_inactive` deletes
users deactivated beforehand, the clean-up that follows.
On 2 cores, requests/s ≈ 2000 ÷ (CPU ms per request of everything involved), see bench/README.md.

Variants change one thing in this process only (monkeypatching; nothing in the application is
edited), to price a fix before anyone writes it:

- baseline         production settings as they are
- health_check     CONN_HEALTH_CHECKS on (production has it off): a `SELECT 1` before the first query
                   of each request, what it used to cost
- no_publish       webhooks.services.draining.kick does nothing (the after-commit kick of the webhook drain)
- full_middleware  SCIM requests through the whole settings.MIDDLEWARE chain, as before config.wsgi
                   gave them settings.SCIM_MIDDLEWARE (no session, auth, CSRF, messages, static
                   files or frame header)
- django_handler   SCIM requests through Django's handler with settings.SCIM_MIDDLEWARE, as before
                   scim.http.wsgi answered them without it
- metrics          METRICS_TOKEN set: every request counted for /metrics (prometheus-client in
                   multiprocess mode, its files in a temporary folder, as under the web server)
- plain_logs       the roster.requests lines at INFO (one per SCIM write and 4xx) in the default text
                   format, written to /dev/null (the other variants run at LOG_LEVEL=ERROR)
- json_logs        the same lines with LOG_FORMAT=json
- metrics_json     metrics and JSON lines together, what the benchmark runs with
- no_activity      nothing recorded after the answer (scim.http.activity.Exchange.record does nothing):
                   what the health counters (and a failed request's log entry) cost
- scim_log         the directory's log_scim_requests on: every request also writes its request-log entry
- oauth_token      every SCIM request authenticated with an OAuth access token (contract §4.3) in place of
                   the static secret, the directory's client secret made first; a run with it also prints
                   the credential check alone (the directory's lookup taken out), static secret and token
- no_limits        SCIM_RATE_LIMIT and API_RATE_LIMIT 0: no rate limit at all (the baseline counts every
                   request in the broker's Redis, at 600000 per minute, as the compare runs)
- limits_memory    the rate limits counted in the process only (RATE_LIMIT_STORAGE_URL=memory://)
- limits_library   each request counted by the `limits` library's sliding-window counter on the same Redis,
                   one round trip per request (the design core.ratelimit avoids); a run with any limits_*
                   variant also prints the limiter alone (µs of CPU per admitted request, its settle thread
                   included)
- endpoints_50     50 enabled webhook endpoints that match the directory's every event (contract §5.2): the
                   SCIM write must cost what the baseline does, since the endpoints are matched in the worker
"""

from __future__ import annotations

import argparse
import io
import json
import os
import secrets
import signal
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench import systems
from bench.workload import GROUP_SCHEMA, PATCH_SCHEMA, okta_user

VARIANTS = (
    "baseline",
    "health_check",
    "no_publish",
    "full_middleware",
    "django_handler",
    "metrics",
    "plain_logs",
    "json_logs",
    "metrics_json",
    "no_activity",
    "scim_log",
    "oauth_token",
    "no_limits",
    "limits_memory",
    "limits_library",
)


class Harness:
    def __init__(self, variant: str) -> None:
        from django.conf import settings
        from django.core.handlers.wsgi import WSGIHandler
        from django.db import connection

        import webhooks.services.draining
        from config.wsgi import SurfaceApplication
        from directories.services import directory_create
        from scim.http.activity import Exchange

        self.variant = variant
        on = {variant}
        checks = "health_check" in on or settings.DATABASES["default"].get("CONN_HEALTH_CHECKS", False)
        connection.settings_dict["CONN_HEALTH_CHECKS"] = checks
        connection.health_check_enabled = checks  # read at connect(); set it now too
        self._kick = webhooks.services.draining.kick
        if "no_publish" in on:
            webhooks.services.draining.kick = lambda directory_id, target: None
        self._rate_limits = (settings.SCIM_RATE_LIMIT, settings.API_RATE_LIMIT, settings.RATE_LIMIT_STORAGE_URL)
        if "no_limits" in on:
            settings.SCIM_RATE_LIMIT = settings.API_RATE_LIMIT = 0
        if "limits_memory" in on:
            settings.RATE_LIMIT_STORAGE_URL = "memory://"
        self._admit = None
        if "limits_library" in on:
            self._admit = library_admit_install(settings.RATE_LIMIT_STORAGE_URL)
        self._record = Exchange.record
        if "no_activity" in on:
            Exchange.record = lambda exchange: None  # type: ignore[method-assign]
        # What granian serves (config.wsgi), or one handler with the full chain for every request.
        self.app = WSGIHandler() if "full_middleware" in on else SurfaceApplication()
        if "django_handler" in on:
            self.app.scim = self.app.scim.fallback
        self._operations(on)
        tag = secrets.token_hex(4)
        self.directory = directory_create(
            **systems.service_actor(directory_create),
            data={
                "tenant": f"costs-{tag}",
                "product": "bench",
                "type": "okta-scim-v2",
                # A webhook, so every change records its outbox event like in production; nothing
                # listens on port 9, deliveries (by the Celery worker, not running here) would fail.
                "webhook_url": "http://127.0.0.1:9/hook",
                "log_scim_requests": "scim_log" in on,
            },
        )
        guard_directory_counting(self.directory)
        self._endpoints: list[Any] = []
        if "endpoints_50" in on:
            from webhooks.services.endpoints import endpoint_create

            for i in range(50):
                self._endpoints.append(
                    endpoint_create(
                        data={"url": f"http://127.0.0.1:9/endpoint-{i}", "tenant": f"costs-{tag}", "events": ["*"]},
                        **systems.service_actor(endpoint_create),
                    )
                )
        self.credential = self.directory.scim_secret
        if "oauth_token" in on:
            from directories.services import directory_scim_oauth_secret_rotate
            from scim.access_tokens import access_token_issue

            rotate = directory_scim_oauth_secret_rotate
            self.directory, _secret, _first = rotate(directory=self.directory, **systems.service_actor(rotate))
            self.credential = access_token_issue(directory=self.directory)
        self.base = f"/api/scim/v2.0/{self.directory.id}"
        self.tag = tag
        self.throttled: tuple[Any, str] | None = None
        self.counter = 0
        self.user_ids: list[str] = []
        self.spares: list[str] = []  # users made beforehand, untimed, for the deprovisions below
        status, body = self.call("POST", f"{self.base}/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "g"})
        self.group_id = json.loads(body)["id"]

    def _operations(self, on: set[str]) -> None:
        """Metrics and request log lines, on for the variants that price them."""
        import logging

        from django.conf import settings

        from core.logfilters import RequestScopeFields
        from core.logformat import JsonFormatter, PlainFormatter

        settings.METRICS_TOKEN = "bench-metrics" if on & {"metrics", "metrics_json"} else None
        lines = logging.getLogger("roster.requests")
        self._saved_logging = (lines.level, list(lines.handlers), lines.propagate)
        if on & {"plain_logs", "json_logs", "metrics_json"}:
            handler = logging.StreamHandler(open(os.devnull, "w"))  # noqa: SIM115 - closed in restore()
            handler.setFormatter(PlainFormatter() if "plain_logs" in on else JsonFormatter())
            handler.addFilter(RequestScopeFields())
            lines.handlers, lines.propagate = [handler], False
            lines.setLevel(logging.INFO)

    def restore(self) -> None:
        import logging

        import webhooks.services.draining
        from scim.http.activity import Exchange

        webhooks.services.draining.kick = self._kick
        from django.conf import settings

        import core.ratelimit

        settings.SCIM_RATE_LIMIT, settings.API_RATE_LIMIT, settings.RATE_LIMIT_STORAGE_URL = self._rate_limits
        if self._admit is not None:
            core.ratelimit.admit = self._admit
        lines = logging.getLogger("roster.requests")
        for handler in lines.handlers:
            if handler not in self._saved_logging[1]:
                handler.stream.close()
        lines.level, lines.handlers, lines.propagate = self._saved_logging
        Exchange.record = self._record  # type: ignore[method-assign]
        if self._endpoints:
            from webhooks.models import WebhookEndpoint

            WebhookEndpoint.objects.filter(id__in=[e.id for e in self._endpoints]).delete()

    def call(self, method: str, path: str, body: Any = None) -> tuple[str, bytes]:
        data = json.dumps(body).encode() if body is not None else b""
        route, _, query = path.partition("?")
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": route,
            "QUERY_STRING": query,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "127.0.0.1:8000",
            "HTTP_AUTHORIZATION": f"Bearer {self.credential}",
            "CONTENT_TYPE": "application/scim+json",
            "CONTENT_LENGTH": str(len(data)),
            "wsgi.input": io.BytesIO(data),
            "wsgi.url_scheme": "http",
            "wsgi.errors": sys.stderr,
        }
        status: list[str] = []
        answer = self.app(environ, lambda s, h, e=None: status.append(s))
        try:
            out = b"".join(answer)
        finally:
            # As a server does once the body is sent (PEP 3333): an answer with close() (Django's handler)
            # is recorded and finished then; the SCIM application's list was before it was returned.
            close = getattr(answer, "close", None)
            if close is not None:
                close()
        return status[0], out

    # one request each; the workload's bodies
    def create_user(self) -> tuple[str, bytes]:
        self.counter += 1
        status, body = self.call("POST", f"{self.base}/Users", okta_user(self.tag, self.counter))
        self.user_ids.append(json.loads(body)["id"])
        return status, body

    def add_member(self) -> tuple[str, bytes]:
        user = self.user_ids.pop()
        op = {"op": "add", "path": "members", "value": [{"value": user}]}
        body = {"schemas": [PATCH_SCHEMA], "Operations": [op]}
        return self.call("PATCH", f"{self.base}/Groups/{self.group_id}", body)

    def filter_user(self) -> tuple[str, bytes]:
        return self.call("GET", f"{self.base}/Users?filter=userName%20eq%20%22bench.{self.tag}.1@example.com%22")

    def list_page(self) -> tuple[str, bytes]:
        return self.call("GET", f"{self.base}/Users?startIndex=1&count=100")

    def deactivate(self) -> tuple[str, bytes]:
        body = {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "replace", "value": {"active": False}}]}
        return self.call("PATCH", f"{self.base}/Users/{self.user_ids[-1]}", body)

    def spares_make(self, count: int, *, inactive: bool = False) -> None:
        """`count` users for the operations that use one up each (untimed); `inactive`: deactivated too."""
        for _ in range(count):
            self.counter += 1
            status, body = self.call("POST", f"{self.base}/Users", okta_user(self.tag, self.counter))
            user_id = json.loads(body)["id"]
            if inactive:
                self.call("PATCH", f"{self.base}/Users/{user_id}", _DEACTIVATE)
            self.spares.append(user_id)

    def deprovision_patch(self) -> tuple[str, bytes]:
        """Okta's deactivation of an active user: a deprovision (contract §4.2), counted by the guard."""
        return self.call("PATCH", f"{self.base}/Users/{self.spares.pop()}", _DEACTIVATE)

    def delete_user(self) -> tuple[str, bytes]:
        """DELETE of a spare user: active (a deprovision) or deactivated before (the usual clean-up)."""
        return self.call("DELETE", f"{self.base}/Users/{self.spares.pop()}")

    def get_404(self) -> tuple[str, bytes]:
        return self.call("GET", f"{self.base}/Users/{uuid.uuid4()}")

    def throttled_429(self) -> tuple[str, bytes]:
        """A POST /Users of a directory over its rate limit: the refusal answered from memory, recorded in
        its request log and health counters. The bucket is kept full first (a few µs), at one request a
        minute, so that no request of the round finds it refilled."""
        import core.ratelimit as ratelimit

        if self.throttled is None:
            from directories.services import directory_create

            made = directory_create(
                data={"tenant": f"costs-{self.tag}-flood", "product": "bench", "scim_rate_limit": 1500},
                **systems.service_actor(directory_create),
            )
            self.throttled = (made, ratelimit.scim_bucket(made.id))
        directory, bucket = self.throttled
        while True:
            verdict = ratelimit.admit(bucket, 1, surface=ratelimit.SCIM)
            if verdict is None or not verdict.allowed:
                break
        saved, self.credential = self.credential, directory.scim_secret
        try:
            return self.call("POST", f"/api/scim/v2.0/{directory.id}/Users", okta_user(self.tag, 0))
        finally:
            self.credential = saved

    def healthz(self) -> tuple[str, bytes]:
        return self.call("GET", "/healthz")


_DEACTIVATE = {"schemas": [PATCH_SCHEMA], "Operations": [{"op": "replace", "value": {"active": False}}]}


def guard_directory_counting(directory: Any) -> None:
    """The deprovision guard counts this directory's deprovisions but never holds one (max_percent 100): the
    thousands of deprovisions measured here would trip it at its default 20 %. Its deprovisions take the
    path they take in production, less the count of active users that the percentage check adds (the
    compare keeps the default guard). (Before the guard existed, a directory had no such setting.)"""
    from directories.services import UPDATABLE_FIELDS, directory_update

    if "deprovision_guard" in UPDATABLE_FIELDS:
        guard = {"deprovision_guard": {"max_percent": 100}}
        directory_update(directory=directory, data=guard, **systems.service_actor(directory_update))


# Operations that use up one prepared user per call: (spares per call are made untimed, deactivated first?).
_SPARES = {"deprovision_patch": False, "delete_active": False, "delete_inactive": True}


def measure(harness: Harness, repeats: int) -> dict[str, dict[str, float]]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    plan: list[tuple[str, Callable[[], tuple[str, bytes]]]] = [
        ("create_user", harness.create_user),
        ("add_member", harness.add_member),
        ("filter_userName", harness.filter_user),
        ("list_page_100", harness.list_page),
        ("deactivate", harness.deactivate),
        ("deprovision_patch", harness.deprovision_patch),
        ("delete_active", harness.delete_user),
        ("delete_inactive", harness.delete_user),
        ("get_404", harness.get_404),
        ("throttled_429", harness.throttled_429),
        ("healthz (no SCIM)", harness.healthz),
    ]
    out: dict[str, dict[str, float]] = {}
    for name, fn in plan:
        n = repeats if name != "list_page_100" else max(20, repeats // 5)
        if name in _SPARES:
            # warm-up, the rounds and the captured call each use one up
            harness.spares_make(10 + 5 * max(1, n // 5) + 1, inactive=_SPARES[name])
        for _ in range(10):
            fn()  # warm-up
        if name == "create_user":
            n_extra = repeats + 20  # spares for add_member
        else:
            n_extra = 0
        # The machine is shared: other processes inflate CPU time (caches, frequency). The least
        # loaded of 5 rounds is the best estimate of the operation's own cost.
        rounds = []
        status = ""
        for _ in range(5):
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for _ in range(max(1, n // 5)):
                status, _body = fn()
            k = max(1, n // 5)
            rounds.append(((time.process_time() - cpu0) / k * 1000, (time.perf_counter() - wall0) / k * 1000))
        cpu, wall = min(rounds)
        for _ in range(n_extra):
            fn()
        with CaptureQueriesContext(connection) as ctx:
            fn()
        out[name] = {
            "status": status,
            "cpu_ms": round(cpu, 2),
            "wall_ms": round(wall, 2),
            "queries": len(ctx.captured_queries),
        }
        if os.environ.get("COSTS_SHOW_SQL"):
            print(f"-- {name}")
            for q in ctx.captured_queries:
                print("   ", q["sql"][: int(os.environ.get("COSTS_SQL_WIDTH", "300"))])
    return out


def library_admit_install(url: str) -> Any:
    """Make core.ratelimit.admit count each request with the `limits` library on the store `url`: its
    sliding-window counter of a tenth of the minute's budget per six seconds (the same burst), one
    round trip per request. Returns the admit it replaced."""
    import limits

    import core.ratelimit as ratelimit

    storage = limits.storage.storage_from_string(url)
    limiter = limits.strategies.SlidingWindowCounterRateLimiter(storage)
    replaced = ratelimit.admit

    def admit(key: str, per_minute: int, *, surface: str) -> Any:
        if per_minute <= 0:
            return None
        item = limits.RateLimitItemPerSecond(ratelimit.burst_of(per_minute), 6)
        allowed = limiter.hit(item, key)
        return ratelimit.Verdict(allowed, per_minute, 0, 6, 0 if allowed else 1)

    ratelimit.admit = admit
    return replaced


def limiter_alone(url: str, rounds: int = 5, calls: int = 20000) -> dict[str, float]:
    """Microseconds of CPU of core.ratelimit alone (no HTTP, no database), one bucket of 600000 per minute,
    the least loaded of `rounds`: the decision of one request in memory:// and with the Redis store; one
    settle of the Redis store with that bucket (its background thread does one every SETTLE_SECONDS while
    requests come, whatever their number); and the `limits` library's per-request hit on the same Redis."""
    import limits
    from django.conf import settings

    from core.ratelimit import Limiter

    def best_of(run: Any, per: int) -> float:
        best = float("inf")
        for _ in range(rounds):
            cpu0 = time.process_time()
            run()
            best = min(best, (time.process_time() - cpu0) / per * 1e6)
        return round(best, 2)

    out: dict[str, float] = {}
    saved = settings.RATE_LIMIT_STORAGE_URL
    try:
        for name, store in (("decision, memory://", "memory://"), ("decision, redis", url)):
            settings.RATE_LIMIT_STORAGE_URL = store
            limiter, key = Limiter(background=False), f"bench:{uuid.uuid4()}"
            limiter.admit(key, 600_000, surface="scim")
            limiter.settle()

            def decide(limiter: Limiter = limiter, key: str = key) -> None:
                for _ in range(calls):
                    limiter.admit(key, 600_000, surface="scim")

            out[name] = best_of(decide, calls)

            def settles(limiter: Limiter = limiter, key: str = key) -> None:
                for _ in range(calls // 50):
                    limiter.admit(key, 600_000, surface="scim")
                    limiter.settle()

            if store != "memory://":
                out["one settle, redis (one bucket)"] = round(best_of(settles, calls // 50) - out[name], 2)
    finally:
        settings.RATE_LIMIT_STORAGE_URL = saved
    storage = limits.storage.storage_from_string(url)
    hit = limits.strategies.SlidingWindowCounterRateLimiter(storage).hit
    item = limits.RateLimitItemPerSecond(60_000, 6)

    def library() -> None:
        for _ in range(calls // 10):
            hit(item, "bench-library")

    out["limits library on redis, per request"] = best_of(library, calls // 10)
    storage.reset()
    return out


def credential_checks(directory: Any, rounds: int = 5, calls: int = 20000) -> dict[str, float]:
    """Microseconds of CPU of one `scim.authentication.authenticate` with the directory's lookup taken out
    (it returns the row already read): what checking the credential itself costs, with the static secret,
    with an access token of the directory's OAuth client as an identity provider sends it (the same token
    for an hour: its check is memoized after the first request), and with a token seen for the first time
    (its MAC computed). The least loaded of `rounds`."""
    import scim.access_tokens as access_tokens
    import scim.authentication as authentication

    lookup = authentication.directory_get
    authentication.directory_get = lambda directory_id: directory
    token = access_tokens.access_token_issue(directory=directory)
    try:
        out = {}
        for name, credentials in (
            ("static secret", lambda: [directory.scim_secret] * calls),
            ("access token", lambda: [token] * calls),
            (
                "access token, first use",
                lambda: [access_tokens.access_token_issue(directory=directory) for _ in range(calls)],
            ),
        ):
            best = float("inf")
            for _ in range(rounds):
                presented = credentials()
                access_tokens._mac_checked.cache_clear()
                authentication.authenticate(directory.id, token)  # passes; the repeated token is memoized
                cpu0 = time.process_time()
                for credential in presented:
                    authentication.authenticate(directory.id, credential)
                best = min(best, (time.process_time() - cpu0) / calls * 1e6)
            out[name] = round(best, 2)
        return out
    finally:
        authentication.directory_get = lookup


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--database", default="roster_costs")
    parser.add_argument("--redis-db", type=int, default=13)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    variants = [v for v in args.variants.split(",") if v]
    # The metrics variants write files as a web worker does.
    systems.roster_in_process(database=args.database, redis_db=args.redis_db, metrics_prefix="roster-costs-metrics-")
    results: dict[str, Any] = {}
    checks: dict[str, float] = {}
    alone: dict[str, float] = {}
    for variant in variants:
        harness = Harness(variant)
        try:
            results[variant] = measure(harness, args.repeats)
        finally:
            harness.restore()
        print(f"{variant}: " + ", ".join(f"{k} {v['cpu_ms']} ms" for k, v in results[variant].items()), flush=True)
        if variant == "oauth_token":
            checks = credential_checks(harness.directory)
        if variant.startswith(("limits_", "no_limits")) and not alone:
            from django.conf import settings

            alone = limiter_alone(settings.RATE_LIMIT_STORAGE_URL)

    # Nothing consumes the publishes made here; drop them so no worker ever tries them.
    import subprocess

    subprocess.run(["redis-cli", "-n", str(args.redis_db), "FLUSHDB"], capture_output=True, check=False)

    if "oauth_token" in variants:
        print("\nthe credential check alone, CPU µs: " + ", ".join(f"{k} {v}" for k, v in checks.items()))
    if alone:
        print("\nthe rate limiter alone, CPU µs per request: " + ", ".join(f"{k} {v}" for k, v in alone.items()))
    ops = list(results[variants[0]])
    print()
    print("| operation | queries | " + " | ".join(f"{v} CPU ms" for v in variants) + " |")
    print("|---|---:|" + "---:|" * len(variants))
    for op in ops:
        cells = " | ".join(f"{results[v][op]['cpu_ms']:.2f}" for v in variants)
        print(f"| {op} | {results[variants[0]][op]['queries']} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
