"""The worker's CPU per delivered event with 1 and with 10 webhook endpoints (contract §5.2).

    .venv/bin/python -m bench.fanout                      # 1 and 10 endpoints, 300 events each
    .venv/bin/python -m bench.fanout --endpoints 1,10,50 --events 500

On a fresh PostgreSQL database with production settings, one directory without a webhook of its own
records `--events` user events (untimed, the after-commit kick switched off), with N enabled endpoints
matching every event, each pointing at a local receiver that answers 204 (another process, so its CPU
does not count). Then one drain, in this process, matches the events and makes every delivery, as a
Celery worker's `webhooks.drain` does. Reported: the drain's process CPU (time.process_time: waiting for
the receiver and PostgreSQL does not count) per event and per delivery (N per event), the least loaded
of 3 rounds. First, before any endpoint exists, the CPU of the read of the fan-out's start that every
drain batch makes until an endpoint is enabled, beside the ORM's aggregate it replaced.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from typing import Any

from bench import systems

RECEIVER = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(204); self.send_header("Content-Length", "0"); self.end_headers()
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def one_round(endpoints: int, events: int, url: str, tag: str) -> dict[str, float]:
    from directories.services import directory_create
    from webhooks.models import EndpointDelivery, EventState, WebhookEndpoint
    from webhooks.services import draining, drains, events_record
    from webhooks.services.endpoints import endpoint_create

    directory = directory_create(
        data={"tenant": f"fanout-{tag}", "product": "bench", "type": "okta-scim-v2"},
        **systems.service_actor(directory_create),
    )
    made = [
        endpoint_create(data={"url": url, "tenant": directory.tenant}, **systems.service_actor(endpoint_create))
        for _ in range(endpoints)
    ]
    kick, draining.kick = draining.kick, lambda directory_id, target: None
    try:
        for i in range(events):
            events_record(directory=directory, events=[("user.created", {"id": f"u{i}", "email": f"u{i}@example.com"})])
    finally:
        draining.kick = kick
    cpu0, wall0 = time.process_time(), time.perf_counter()
    drain = drains.Drain((str(directory.id), "directory"))
    while drain.run():
        drain.stop_at = time.monotonic() + drains.DRAIN_BUDGET  # one long drain, not hand-overs
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    delivered = EndpointDelivery.objects.filter(directory_id=directory.id, state=EventState.DELIVERED).count()
    assert delivered == endpoints * events, (delivered, endpoints * events)
    WebhookEndpoint.objects.filter(id__in=[e.id for e in made]).delete()
    return {
        "cpu_ms_per_event": cpu / events * 1000,
        "cpu_ms_per_delivery": cpu / (events * endpoints) * 1000,
        "wall_ms_per_delivery": wall / (events * endpoints) * 1000,
    }


def start_read_print(calls: int = 2000) -> None:
    """Before any endpoint exists, as in a deployment without one: what asking for the fan-out's start
    costs (`enabled_since`, which every drain batch asks until an endpoint is enabled), beside the ORM's
    aggregate it replaced. µs of CPU per call, the least of 5 rounds."""
    from django.db.models import Min

    from webhooks.models import WebhookEndpointRevision
    from webhooks.services import fanout

    def fixed() -> None:
        fanout.enabled_since_forget()
        fanout.enabled_since()

    def orm() -> None:
        WebhookEndpointRevision.objects.filter(enabled=True).aggregate(first=Min("valid_from"))

    for name, call in (("the fan-out's start, fixed SQL", fixed), ("the same, the ORM's aggregate", orm)):
        best = float("inf")
        for _ in range(5):
            started = time.process_time()
            for _ in range(calls):
                call()
            best = min(best, (time.process_time() - started) / calls * 1e6)
        print(f"{name}: {best:.1f} µs per call", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoints", default="1,10")
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--database", default="roster_fanout")
    parser.add_argument("--redis-db", type=int, default=13)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    port = free_port()
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port)])
    try:
        systems.roster_in_process(database=args.database, redis_db=args.redis_db)
        start_read_print()
        time.sleep(0.5)
        rows: dict[int, dict[str, Any]] = {}
        for count in [int(n) for n in args.endpoints.split(",") if n]:
            rounds = [one_round(count, args.events, f"http://127.0.0.1:{port}/hook", f"{count}-{r}") for r in range(3)]
            rows[count] = min(rounds, key=lambda r: r["cpu_ms_per_event"])
            print(f"{count} endpoint(s): " + ", ".join(f"{k} {v:.3f}" for k, v in rows[count].items()), flush=True)
    finally:
        receiver.terminate()
        receiver.wait()
    print()
    print("| endpoints | CPU ms per event | CPU ms per delivery | wall ms per delivery |")
    print("|---:|---:|---:|---:|")
    for count, row in rows.items():
        print(
            f"| {count} | {row['cpu_ms_per_event']:.2f} | {row['cpu_ms_per_delivery']:.3f} | "
            f"{row['wall_ms_per_delivery']:.3f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
