"""A scripted HTTP server on 127.0.0.1 standing in for Roster where Roster cannot be made to answer what a test
needs (a 429, a 503 that does not end, a feed with a gap). It answers each request with the next scripted
answer (the last one repeats) and records what it was asked."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Scripted:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeRoster:
    url: str = ""
    answers: list[Scripted] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path with query)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *answers: Scripted) -> None:
        with self.lock:
            self.answers = list(answers)
            self.requests.clear()

    def next_answer(self, method: str, path: str) -> Scripted:
        with self.lock:
            self.requests.append((method, path))
            return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def ok(data: Any, **extra: Any) -> Scripted:
    return Scripted(200, {"data": data, "error": None, **extra})


def failed(status: int, message: str = "try later", **headers: str) -> Scripted:
    return Scripted(status, {"data": None, "error": {"message": message, "code": status}}, headers)


@contextmanager
def fake_roster() -> Iterator[FakeRoster]:
    fake = FakeRoster()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            answer = fake.next_answer(self.command, self.path)
            body = b"" if answer.status == 204 else json.dumps(answer.body).encode()
            self.send_response(answer.status)
            for name, value in {"Content-Type": "application/json", "X-Request-Id": "fake-1", **answer.headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PATCH = do_DELETE = _answer  # noqa: N815

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
