"""The server's request-line and header limits, answered in the surface's format by a real gunicorn.

gunicorn refuses these requests before Roster's code runs; the answers come from
server.keepalive_worker.error_handle (Roster's worker, and gunicorn's own classes through the
`post_worker_init` hook of server/gunicorn.conf.py). Each server is `gunicorn -c server/gunicorn.conf.py
config.wsgi` in a subprocess, on SQLite, spoken to over raw sockets.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCIM_ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
LONG = "a" * 9000  # past limit_request_line (8190) and limit_request_field_size (8190)


class Gunicorn:
    def __init__(self, worker_class: str, tmp: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("GUNICORN_", "DJANGO_", "CELERY_", "DATABASE_"))
        }
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "DEBUG": "false",
                "SECRET_KEY": "request-limits-test-secret-key-0123456789-abcdefghij",
                "DATABASE_URL": f"sqlite:///{tmp / 'limits.sqlite3'}",
                "GUNICORN_BIND": f"127.0.0.1:{self.port}",
                "GUNICORN_WORKERS": "1",
                "GUNICORN_THREADS": "2",
            }
        )
        if worker_class != "keepalive":
            env["GUNICORN_WORKER_CLASS"] = worker_class
        self.log = tmp / f"gunicorn-{worker_class}.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-c", "server/gunicorn.conf.py", "config.wsgi"],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
                    sock.sendall(b"GET /api/scim/v2.0/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                    if sock.recv(16).startswith(b"HTTP/1.1"):
                        return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError(f"gunicorn ({worker_class}) did not start:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)

    def exchange(self, raw: bytes, responses: int = 1) -> list[tuple[int, str, bytes]]:
        """Send raw bytes, read `responses` responses off the one connection."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(raw)
            stream = sock.makefile("rb")
            out = []
            for _ in range(responses):
                resp = http.client.HTTPResponse(_Once(stream))  # type: ignore[arg-type]
                resp.begin()
                out.append((resp.status, resp.getheader("Content-Type", ""), resp.read()))
            return out


class _Once:
    """What http.client.HTTPResponse needs of a socket: the one buffered stream, so that two responses
    read in turn off one connection do not lose bytes to two buffers."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def makefile(self, *_args: Any, **_kwargs: Any) -> Any:
        return self

    def readline(self, *args: Any) -> bytes:
        return self.stream.readline(*args)

    def read(self, *args: Any) -> bytes:
        return self.stream.read(*args)

    def readinto(self, buffer: Any) -> int:
        return self.stream.readinto(buffer)

    def close(self) -> None:
        pass  # a response read to its end closes its file; the next response is on the same stream


def request(path: str, headers: list[tuple[str, str]] = ()) -> bytes:  # type: ignore[assignment]
    lines = [f"GET {path} HTTP/1.1", "Host: localhost", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.fixture(scope="module", params=["keepalive", "sync", "gthread"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gunicorn]:
    gunicorn = Gunicorn(request.param, tmp_path_factory.mktemp(request.param))
    gunicorn.worker_class = request.param  # type: ignore[attr-defined]
    yield gunicorn
    gunicorn.stop()


def knows_path(server: Gunicorn) -> bool:
    """Roster's worker keeps the start of the request line; gunicorn's own classes do not."""
    return server.worker_class == "keepalive"  # type: ignore[attr-defined]


def assert_scim(status: int, content_type: str, body: bytes) -> dict[str, Any]:
    document = json.loads(body)
    assert document["schemas"] == [SCIM_ERROR]
    assert document["status"] == str(status)
    assert document["detail"]
    return document


def assert_envelope(status: int, body: bytes) -> dict[str, Any]:
    document = json.loads(body)
    assert document["data"] is None
    assert document["error"]["code"] == status
    assert document["error"]["message"]
    return document


def test_long_request_line_on_scim(server: Gunicorn) -> None:
    [(status, content_type, body)] = server.exchange(request(f"/api/scim/v2.0/Users?filter={LONG}"))
    assert status == 414
    assert_scim(414, content_type, body)
    if knows_path(server):
        assert content_type == "application/scim+json"
    else:
        # Path unknown: one object both kinds of client read.
        assert content_type == "application/json"
        assert_envelope(414, body)
    assert b"<html" not in body


def test_long_request_line_on_rest_and_admin(server: Gunicorn) -> None:
    for path in (f"/api/v1/directory-sync?tenant={LONG}", f"/auditlog/admin/v1/x?{LONG}"):
        [(status, content_type, body)] = server.exchange(request(path))
        assert status == 414
        assert content_type == "application/json"
        document = assert_envelope(414, body)
        assert ("schemas" in document) is not knows_path(server)


def test_long_request_line_elsewhere(server: Gunicorn) -> None:
    [(status, content_type, body)] = server.exchange(request(f"/portal/?q={LONG}"))
    assert status == 414
    assert b"<html" not in body
    if knows_path(server):
        assert content_type == "text/plain; charset=utf-8"
        assert body.decode().startswith("The request line is longer than 8190 bytes")


def test_too_many_headers(server: Gunicorn) -> None:
    headers = [(f"X-Filler-{i}", "x") for i in range(101)]
    [(status, content_type, body)] = server.exchange(request("/api/scim/v2.0/Users", headers))
    assert status == 431
    assert_scim(431, content_type, body)
    if knows_path(server):
        assert content_type == "application/scim+json"


def test_header_too_long(server: Gunicorn) -> None:
    [(status, content_type, body)] = server.exchange(request("/api/v1/directory-sync", [("X-Big", LONG)]))
    assert status == 431
    assert content_type == "application/json"
    assert_envelope(431, body)


def test_pipelined_request_then_long_line(server: Gunicorn) -> None:
    """The second request's start is already buffered when the first is answered: its head is that."""
    if not knows_path(server):
        pytest.skip("only Roster's worker knows the path of a cut request line")
    raw = request("/api/scim/v2.0/ServiceProviderConfig") + request(f"/api/scim/v2.0/Groups?filter={LONG}")
    first, second = server.exchange(raw, responses=2)
    assert first[0] == 401  # no bearer token: the app answered it
    assert second[0] == 414
    assert second[1] == "application/scim+json"
    assert_scim(414, second[1], second[2])


def test_one_log_line_per_refusal(server: Gunicorn) -> None:
    before = server.log.read_text().count("Invalid request from ip=")
    server.exchange(request(f"/api/scim/v2.0/Users?filter={LONG}"))
    time.sleep(0.2)
    text = server.log.read_text()
    assert text.count("Invalid request from ip=") == before + 1
    assert "Traceback" not in text
    assert LONG[:100] not in text  # the request line (it may carry personal data) is not logged


def test_request_within_the_limits_still_served(server: Gunicorn) -> None:
    [(status, content_type, body)] = server.exchange(request("/api/scim/v2.0/Users?filter=" + "a" * 7000))
    assert status == 401
    assert content_type == "application/scim+json"


MALFORMED = {
    "content_length_word": b"Content-Length: abc\r\n",
    "content_length_negative": b"Content-Length: -1\r\n",
    "content_length_hex": b"Content-Length: 0x10\r\n",
    "header_control_byte": b"X-Request-Id: \xff\x00bad\r\n",
}


@pytest.mark.parametrize("fault", list(MALFORMED))
def test_a_request_gunicorns_parser_refuses_is_a_400_in_the_surface_format(server: Gunicorn, fault: str) -> None:
    # gunicorn answered these with its HTML "Bad Request" page, which quotes the offending bytes.
    for path, kind in (("/api/scim/v2.0/x/Users", "scim"), ("/api/v1/directory-sync", "envelope")):
        raw = f"POST {path} HTTP/1.1\r\nHost: localhost\r\n".encode() + MALFORMED[fault] + b"\r\n{}"
        [(status, content_type, body)] = server.exchange(raw)
        assert status == 400
        assert b"<html" not in body and b"bad" not in body
        if kind == "scim":
            assert_scim(400, content_type, body)
        else:
            assert_envelope(400, body)
        if knows_path(server):
            assert content_type == ("application/scim+json" if kind == "scim" else "application/json")


def test_a_non_utf8_byte_in_the_request_line_is_a_400_in_the_surface_format(server: Gunicorn) -> None:
    [(status, content_type, body)] = server.exchange(
        b"GET /api/scim/v2.0/x/Users?a=\xff\xfe HTTP/1.1\r\nHost: localhost\r\n\r\n"
    )
    assert status == 400
    assert_scim(400, content_type, body)
    assert b"<html" not in body
