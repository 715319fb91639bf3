"""CPU that operations add to each SCIM request: the /metrics counts and the request's log line.

    .venv/bin/python -m bench.opscost               # 50,000 calls per variant
    .venv/bin/python -m bench.opscost --calls 200000

Times, in one process and without a database, what scim.http.views adds to every SCIM request
(opening the request scope, scim.http.observe.scim_observed: the counter, the latency histogram and,
for a write, the roster.requests line) and what a change adds once it commits (core.metrics.
events_recorded), with time.process_time over many calls; the least of 5 rounds, in µs per call. The
log line goes through Roster's handler, filter and formatter to /dev/null. Metrics are in
prometheus-client's multiprocess mode (files in a temporary folder), as under the web server.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from collections.abc import Callable

VARIANTS = ("off", "metrics", "plain_line", "json_line", "metrics_json_line")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=50_000)
    args = parser.parse_args(argv)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="roster-opscost-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "true")
    import django

    django.setup()
    from django.conf import settings

    from core import metrics
    from core.logfilters import RequestScopeFields
    from core.logformat import JsonFormatter, PlainFormatter
    from core.requestid import scope_directory, scope_enter
    from scim.http.observe import scim_observed

    lines = logging.getLogger("roster.requests")
    sink = open(os.devnull, "w")  # noqa: SIM115 - for the whole run

    def configure(variant: str) -> None:
        settings.METRICS_TOKEN = "t" if "metrics" in variant else None
        handler = logging.StreamHandler(sink)
        handler.addFilter(RequestScopeFields())
        handler.setFormatter(JsonFormatter() if "json" in variant else PlainFormatter())
        lines.handlers, lines.propagate = [handler], False
        lines.setLevel(logging.INFO if "line" in variant else logging.ERROR)

    def scim_write() -> None:
        environ: dict = {"HTTP_X_REQUEST_ID": "bench-request-1"}
        started = time.perf_counter()
        scope, token = scope_enter(environ)
        scope_directory("7b0c4f5e-2d0a-4a51-9d7e-1c2b3a4d5e6f", "okta-scim-v2")
        scim_observed(scope, token, method="POST", resource_type="users", status=201, started=started)
        metrics.events_recorded(("user.created",))

    print(f"{args.calls} calls per round, least of 5 rounds, µs of CPU per SCIM write")
    results = {}
    for variant in VARIANTS:
        configure(variant)
        results[variant] = least(scim_write, args.calls)
        print(f"{variant:>18}: {results[variant]:.1f} µs", flush=True)
    print("\n| variant | µs per SCIM write |\n|---|---:|")
    for variant, micros in results.items():
        print(f"| {variant} | {micros:.1f} |")
    return 0


def least(call: Callable[[], object], calls: int) -> float:
    """µs of CPU per call of `call`, the least of 5 rounds of `calls` calls, after a warm-up."""
    for _ in range(min(calls, 1000)):  # warm up: children, files, caches
        call()
    rounds = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(calls):
            call()
        rounds.append((time.process_time() - started) / calls * 1e6)
    return min(rounds)


if __name__ == "__main__":
    raise SystemExit(main())
