"""Over-long request lines and headers against a real granian: Roster's limits, then granian's hard ones.

Roster refuses a request line or a header field over 8190 bytes, and more than 64 header fields, in the
surface's format (config/requestlimits.py). granian (hyper underneath) refuses by itself, with an empty
body, a request target over 65534 bytes (414), more than 100 header fields (431) and a head larger
than its HTTP/1 buffer (431 once 1 MiB is buffered and incomplete, always past 2 MiB; `python -m
server.web` sets the 1 MiB). docs/decisions.md ("Over-long requests")
records both. Each test takes both sides of one limit. The server is `python -m server.web` in a
subprocess, on SQLite, spoken to over raw sockets.
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
SCIM_USERS = "/api/scim/v2.0/Users"
REST = "/api/v1/directory-sync"


class WebServer:
    """`python -m server.web --bind 127.0.0.1:<port> --workers 1`, as production starts it."""

    def __init__(self, tmp: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GRANIAN_", "DJANGO_", "CELERY_", "DATABASE_"))}
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "DEBUG": "false",
                "SECRET_KEY": "request-limits-test-secret-key-0123456789-abcdefghij",
                "DATABASE_URL": f"sqlite:///{tmp / 'limits.sqlite3'}",
                "METRICS_DIR": str(tmp / "metrics"),
            }
        )
        self.log = tmp / "web.log"
        argv = [sys.executable, "-m", "server.web", "--bind", f"127.0.0.1:{self.port}", "--workers", "1"]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if self.exchange(request("/healthz"))[0][0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError(f"python -m server.web did not start:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)

    def exchange(self, raw: bytes, responses: int = 1) -> list[tuple[int, dict[str, str], bytes]]:
        """Send raw bytes, read `responses` responses off the one connection."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(raw)
            stream = sock.makefile("rb")
            out = []
            for _ in range(responses):
                resp = http.client.HTTPResponse(_Once(stream))  # type: ignore[arg-type]
                resp.begin()
                out.append((resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()))
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


def request(target: str, headers: list[tuple[str, str]] = (), method: str = "GET") -> bytes:  # type: ignore[assignment]
    lines = [f"{method} {target} HTTP/1.1", "Host: localhost", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def target_of_line_length(path: str, length: int, method: str = "GET") -> str:
    """`path?q=aaa…` such that the request line `METHOD target HTTP/1.1` is `length` bytes."""
    padding = length - len(f"{method} {path}?q= HTTP/1.1")
    return f"{path}?q={'a' * padding}"


def fillers(count: int, size: int = 1) -> list[tuple[str, str]]:
    """`count` header fields (`Host` is one more), each `size` bytes of value."""
    return [(f"X-Filler-{i}", "x" * size) for i in range(count)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    web = WebServer(tmp_path_factory.mktemp("limits"))
    yield web
    web.stop()


def assert_scim(status: int, headers: dict[str, str], body: bytes) -> None:
    assert headers["content-type"] == "application/scim+json"
    document = json.loads(body)
    assert document["schemas"] == [SCIM_ERROR]
    assert document["status"] == str(status)
    assert document["detail"]
    assert headers["x-request-id"]


def assert_envelope(status: int, headers: dict[str, str], body: bytes) -> None:
    assert headers["content-type"] == "application/json"
    document = json.loads(body)
    assert document["data"] is None
    assert document["error"]["code"] == status
    assert document["error"]["message"]
    assert headers["x-request-id"]


def assert_granian_bare(status: int, expected: int, body: bytes) -> None:
    assert status == expected
    assert body == b""  # granian's own answer: no HTML, nothing echoed


# --- Roster's limit on the request line: 8190 bytes -------------------------------------------------------


def test_a_request_line_of_8190_bytes_reaches_roster(server: WebServer) -> None:
    [(status, headers, body)] = server.exchange(request(target_of_line_length(SCIM_USERS, 8190)))
    assert status == 401  # no bearer token: the SCIM endpoint answered
    assert_scim(401, headers, body)


def test_a_request_line_of_8191_bytes_is_a_scim_414_on_scim_paths(server: WebServer) -> None:
    [(status, headers, body)] = server.exchange(request(target_of_line_length(SCIM_USERS, 8191)))
    assert status == 414
    assert_scim(414, headers, body)
    assert json.loads(body)["detail"] == "The request line is longer than 8190 bytes."


def test_a_long_request_line_is_an_envelope_414_on_the_rest_and_admin_apis(server: WebServer) -> None:
    for path in (REST, "/auditlog/admin/v1/user"):
        [(status, headers, body)] = server.exchange(request(target_of_line_length(path, 9000)))
        assert status == 414
        assert_envelope(414, headers, body)


def test_a_long_request_line_elsewhere_is_plain_text(server: WebServer) -> None:
    [(status, headers, body)] = server.exchange(request(target_of_line_length("/portal/", 9000)))
    assert status == 414
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert body == b"The request line is longer than 8190 bytes.\n"


def test_a_percent_encoded_path_counts_as_sent(server: WebServer) -> None:
    # 3,000 escapes are 9,000 bytes on the line (granian hands over the path decoded, 3,000 bytes).
    [(status, headers, body)] = server.exchange(request(SCIM_USERS + "/" + "%C3" * 3000))
    assert status == 414
    assert_scim(414, headers, body)


# --- granian's hard limit on the request target: 65534 bytes ----------------------------------------------


def test_a_request_target_of_65534_bytes_still_gets_roster_s_414(server: WebServer) -> None:
    target = SCIM_USERS + "?q=" + "a" * (65534 - len(SCIM_USERS) - 3)
    [(status, headers, body)] = server.exchange(request(target))
    assert status == 414
    assert_scim(414, headers, body)


def test_a_request_target_of_65535_bytes_gets_granian_s_bare_414(server: WebServer) -> None:
    target = SCIM_USERS + "?q=" + "a" * (65535 - len(SCIM_USERS) - 3)
    [(status, _headers, body)] = server.exchange(request(target))
    assert_granian_bare(status, 414, body)


# --- Roster's limit on one header field: 8190 bytes -------------------------------------------------------


def test_a_header_field_of_8190_bytes_reaches_roster(server: WebServer) -> None:
    value = "x" * (8190 - len("X-Big: "))
    [(status, headers, body)] = server.exchange(request(REST, [("X-Big", value)]))
    assert status == 401  # no API key: the REST API answered
    assert_envelope(401, headers, body)


def test_a_header_field_of_8191_bytes_is_a_431_in_the_surface_format(server: WebServer) -> None:
    value = "x" * (8191 - len("X-Big: "))
    [(status, headers, body)] = server.exchange(request(REST, [("X-Big", value)]))
    assert status == 431
    assert_envelope(431, headers, body)
    [(status, headers, body)] = server.exchange(request(SCIM_USERS, [("X-Big", value)]))
    assert status == 431
    assert_scim(431, headers, body)


# --- Roster's limit on the number of header fields: 64 ----------------------------------------------------


def test_64_header_fields_reach_roster(server: WebServer) -> None:
    [(status, headers, body)] = server.exchange(request(SCIM_USERS, fillers(63)))  # + Host
    assert status == 401
    assert_scim(401, headers, body)


def test_65_header_fields_are_a_431_in_the_surface_format(server: WebServer) -> None:
    [(status, headers, body)] = server.exchange(request(SCIM_USERS, fillers(64)))
    assert status == 431
    assert_scim(431, headers, body)
    assert json.loads(body)["detail"] == "The request has more than 64 header fields."


# --- granian's hard limit on the number of header fields: 100 ---------------------------------------------


def test_100_header_fields_still_get_roster_s_431(server: WebServer) -> None:
    [(status, headers, body)] = server.exchange(request(SCIM_USERS, fillers(99)))
    assert status == 431
    assert_scim(431, headers, body)


def test_101_header_fields_get_granian_s_bare_431(server: WebServer) -> None:
    [(status, _headers, body)] = server.exchange(request(SCIM_USERS, fillers(100)))
    assert_granian_bare(status, 431, body)


# --- granian's hard limit on the whole head: its HTTP/1 buffer, 1 MiB -------------------------------------


def test_a_head_within_granian_s_buffer_gets_roster_s_431(server: WebServer) -> None:
    [(status, headers, body)] = server.exchange(request(REST, [("X-Big", "x" * 1_000_000)]))
    assert status == 431
    assert_envelope(431, headers, body)


def test_a_head_past_twice_granian_s_buffer_gets_granian_s_bare_431(server: WebServer) -> None:
    # hyper refuses a head when 1 MiB of it is buffered and still incomplete; one read can add up to the
    # buffer's size again, so heads between 1 and 2 MiB may still reach Roster (and get its 431).
    [(status, _headers, body)] = server.exchange(request(REST, [("X-Big", "x" * (2 * 1024 * 1024))]))
    assert_granian_bare(status, 431, body)


# --- on one connection, in the log ------------------------------------------------------------------------


def test_a_kept_connection_serves_a_request_then_refuses_the_next_in_format(server: WebServer) -> None:
    raw = request("/api/scim/v2.0/ServiceProviderConfig") + request(target_of_line_length(SCIM_USERS, 9000))
    first, second = server.exchange(raw, responses=2)
    assert first[0] == 401  # no bearer token: the app answered, and the connection stayed open
    assert second[0] == 414
    assert_scim(414, second[1], second[2])
    assert second[1]["connection"] == "close"


def test_one_log_line_per_refusal_without_the_request(server: WebServer) -> None:
    before = server.log.read_text().count("request refused")
    [(_, headers, _)] = server.exchange(request(target_of_line_length(SCIM_USERS, 9000)))
    time.sleep(0.3)
    text = server.log.read_text()
    assert text.count("request refused") == before + 1
    assert headers["x-request-id"] in text
    assert "Traceback" not in text
    assert "a" * 200 not in text  # the request line (it may carry personal data) is not logged


# --- what granian's parser refuses before Roster sees it --------------------------------------------------

MALFORMED = {
    "content_length_word": b"Content-Length: abc\r\n",
    "content_length_negative": b"Content-Length: -1\r\n",
    "content_length_hex": b"Content-Length: 0x10\r\n",
    "header_control_byte": b"X-Request-Id: \x00bad\r\n",
}


@pytest.mark.parametrize("fault", list(MALFORMED))
def test_a_request_granian_cannot_parse_is_a_bare_400_without_echo(server: WebServer, fault: str) -> None:
    # A request whose framing cannot be trusted never reaches Roster: granian answers 400, with no body
    # (so nothing of the client's bytes, which may carry a credential, is echoed) and closes.
    for path in (SCIM_USERS, REST):
        raw = f"POST {path} HTTP/1.1\r\nHost: localhost\r\n".encode() + MALFORMED[fault] + b"\r\n{}"
        [(status, _headers, body)] = server.exchange(raw)
        assert_granian_bare(status, 400, body)


def test_a_non_ascii_byte_in_the_request_line_never_gets_a_5xx(server: WebServer) -> None:
    [(status, headers, body)] = server.exchange(
        b"GET /api/scim/v2.0/x/Users?a=\xff\xfe HTTP/1.1\r\nHost: localhost\r\n\r\n"
    )
    assert 400 <= status < 500
    assert b"<html" not in body.lower()
    if body:  # reached Roster
        assert_scim(status, headers, body)
