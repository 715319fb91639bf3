"""A local webhook receiver, run as its own process, that checks every signature.

    python -m bench.receiver --port 8765 --secret <webhook secret>

POST /<scheme>/<tag>  a delivery; `scheme` is `roster` or `jackson` (picks the signature header and
                      timestamp unit, see bench.signatures), `tag` separates workload runs.
GET  /stats/<scheme>/<tag>  JSON: received, valid, invalid (with reasons), duplicates, count per event
                      type, first/last arrival (unix seconds, this machine's clock).
GET  /ids/<scheme>/<tag>    JSON: the id of every event received (each once), for a run that checks them
                      one by one against what the system recorded (bench.soak).
GET  /health

It answers 200 with an empty body at once, like a well-behaved application endpoint, so the
receiver's own cost is the same for both systems.
"""

from __future__ import annotations

import argparse
import collections
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from bench.signatures import SCHEMES, verify


class Tally:
    def __init__(self) -> None:
        self.received = 0
        self.valid = 0
        self.invalid = 0
        self.reasons: collections.Counter[str] = collections.Counter()
        self.by_type: collections.Counter[str] = collections.Counter()
        self.event_ids: set[str] = set()
        self.duplicates = 0
        self.first_at: float | None = None
        self.last_at: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "received": self.received,
            "valid": self.valid,
            "invalid": self.invalid,
            "invalid_reasons": dict(self.reasons),
            "by_type": dict(self.by_type),
            "duplicates": self.duplicates,
            "first_at": self.first_at,
            "last_at": self.last_at,
        }


class Receiver:
    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.lock = threading.Lock()
        self.tallies: dict[str, Tally] = collections.defaultdict(Tally)

    def record(self, scheme: str, tag: str, headers: Any, body: bytes) -> None:
        header_name, _ = SCHEMES[scheme]
        ok, reason = verify(scheme=scheme, secret=self.secret, header=headers.get(header_name), body=body)
        event_type, event_id = "?", None
        try:
            payload = orjson.loads(body)
            # Jackson may batch events into a JSON array; Roster sends one object per request.
            events = payload if isinstance(payload, list) else [payload]
        except orjson.JSONDecodeError:
            events = [{}]
            ok, reason = False, reason or "body is not JSON"
        now = time.time()
        with self.lock:
            tally = self.tallies[f"{scheme}/{tag}"]
            for event in events:
                event_type = event.get("event", "?") if isinstance(event, dict) else "?"
                event_id = event.get("id") if isinstance(event, dict) else None
                tally.received += 1
                tally.by_type[event_type] += 1
                if ok:
                    tally.valid += 1
                else:
                    tally.invalid += 1
                    tally.reasons[reason] += 1
                if event_id:
                    if event_id in tally.event_ids:
                        tally.duplicates += 1
                    tally.event_ids.add(event_id)
            tally.first_at = tally.first_at or now
            tally.last_at = now

    def ids(self, key: str) -> list[str]:
        with self.lock:
            tally = self.tallies.get(key)
            return sorted(tally.event_ids) if tally else []

    def stats(self, key: str) -> dict[str, Any]:
        with self.lock:
            tally = self.tallies.get(key)
            return tally.as_dict() if tally else Tally().as_dict()


def make_handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a production endpoint would offer

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # one line per delivery would cost more than the delivery

        def _send(self, status: int, body: bytes = b"", content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body:
                self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            parts = self.path.strip("/").split("/")
            if len(parts) != 2 or parts[0] not in SCHEMES:
                self._send(404)
                return
            receiver.record(parts[0], parts[1], self.headers, body)
            self._send(200)

        def do_GET(self) -> None:  # noqa: N802
            if self.path == "/health":
                self._send(200, b'{"ok":true}')
                return
            parts = self.path.strip("/").split("/")
            if len(parts) == 3 and parts[0] == "stats":
                self._send(200, orjson.dumps(receiver.stats(f"{parts[1]}/{parts[2]}")))
                return
            if len(parts) == 3 and parts[0] == "ids":
                self._send(200, orjson.dumps(receiver.ids(f"{parts[1]}/{parts[2]}")))
                return
            self._send(404)

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--max-seconds", type=float, default=3 * 3600, help="stop by itself after this long")
    args = parser.parse_args(argv)
    server = Server((args.host, args.port), make_handler(Receiver(args.secret)))
    timer = threading.Timer(args.max_seconds, server.shutdown)
    timer.daemon = True
    timer.start()
    print(f"receiver listening on http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
