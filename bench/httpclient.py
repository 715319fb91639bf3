"""A small keep-alive HTTP/1.1 client on a plain socket: one connection per worker thread.

The load generator shares the 2 cores with both servers, so whatever it spends per request is
taken from the system under test (more from Roster, whose processes can use both cores, than from
Jackson, whose Node process runs on one). `http.client` cost 0.33 ms of CPU per request here, 0.18
of it in user space (building the request, and parsing every response's headers with the email
package). This client writes the request bytes itself and reads the status line, the headers it
needs (Content-Length, Transfer-Encoding, Connection) and the body, and nothing else: 0.18 ms per
request, 0.06 of it in user space.

What it handles: Content-Length bodies, chunked bodies, bodies that end when the server closes,
responses without a body (HEAD, 1xx, 204, 304), `Connection: close` (a server that closes after a
response, e.g. after refusing an over-long request, so the next request reconnects), and a kept-alive
connection that the server closed while it sat idle (retried once on a new connection, since the server
never saw the request)."""

from __future__ import annotations

import ipaddress
import socket
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

_MAX_HEAD = 64 * 1024
# recv_into a buffer kept per client: a fresh 256 KiB bytes object per recv() would be its own
# mmap/munmap pair (above glibc's mmap threshold) and cost more kernel time than the read.
_RECV = 64 * 1024


class ProtocolError(Exception):
    """The server's answer is not HTTP/1.x as this client reads it."""


class _StaleConnection(Exception):
    """A reused connection was closed by the server before any byte of the answer arrived."""


@dataclass(slots=True)
class Response:
    status: int
    body: bytes
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    seconds: float

    def json(self) -> Any:
        return orjson.loads(self.body) if self.body else None


class Client:
    """One connection, reused while the server keeps it open (Node and granian do)."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout: float = 30.0) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"only http:// base URLs are supported, got {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        host = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 literal goes in brackets
        fixed = [f"Host: {host}:{self.port}", "Accept: application/scim+json, application/json"]
        if token:
            fixed.append(f"Authorization: Bearer {token}")
        self._fixed = "".join(f"{line}\r\n" for line in fixed)
        try:
            self._family = socket.AF_INET if ipaddress.ip_address(self.host).version == 4 else socket.AF_INET6
        except ValueError:
            self._family = None  # a name: resolved on each connect
        self._sock: socket.socket | None = None
        self._buf = bytearray()
        self._scratch = memoryview(bytearray(_RECV))
        self.connects = 0

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buf.clear()

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json") -> Response:
        data = b"" if body is None else orjson.dumps(body)
        head = f"{method} {self.prefix}{path} HTTP/1.1\r\n{self._fixed}"
        if body is not None:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(data)}\r\n"
        elif method in ("POST", "PUT", "PATCH"):
            head += "Content-Length: 0\r\n"
        message = head.encode("latin-1") + b"\r\n" + data
        started = time.perf_counter()
        for attempt in (0, 1):
            reused = self._sock is not None
            if not reused:
                self._connect()
            try:
                try:
                    self._sock.sendall(message)
                except (BrokenPipeError, ConnectionResetError):
                    if not reused:
                        raise
                    raise _StaleConnection from None
                status, headers, payload, will_close = self._read_response(method, reused)
            except _StaleConnection:
                self.close()
                if attempt:
                    raise ConnectionError("the server closed the connection before answering") from None
                continue
            except Exception:
                self.close()
                raise
            if will_close:
                self.close()
            return Response(status, payload, headers, time.perf_counter() - started)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- the connection -------------------------------------------------------------------------

    def _connect(self) -> None:
        if self._family is None:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        else:
            sock = socket.socket(self._family, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            try:
                sock.connect((self.host, self.port))
            except BaseException:
                sock.close()
                raise
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        self._buf.clear()
        self.connects += 1

    def _fill(self, *, stale_ok: bool = False) -> None:
        """Append what the socket has to the buffer; a close here is an error (or stale, see request)."""
        try:
            n = self._sock.recv_into(self._scratch)
        except (ConnectionResetError, BrokenPipeError):
            n = 0
        if not n:
            if stale_ok:
                raise _StaleConnection
            raise ConnectionError("the server closed the connection in the middle of an answer")
        self._buf += self._scratch[:n]

    def _read_response(self, method: str, reused: bool) -> tuple[int, dict[str, str], bytes, bool]:
        first = True
        while True:  # skip interim 1xx answers
            status, version, headers = self._read_head(stale_ok=reused and first)
            first = False
            if status >= 200:
                break
        connection = headers.get("connection", "").lower()
        will_close = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
        if method == "HEAD" or status in (204, 304):
            return status, headers, b"", will_close
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return status, headers, self._read_chunked(), will_close
        length = headers.get("content-length")
        if length is not None:
            try:
                n = int(length)
            except ValueError:
                raise ProtocolError(f"bad Content-Length {length!r}") from None
            return status, headers, self._take(n), will_close
        return status, headers, self._read_to_close(), True

    def _read_head(self, *, stale_ok: bool) -> tuple[int, str, dict[str, str]]:
        buf = self._buf
        while (end := buf.find(b"\r\n\r\n")) < 0:
            if len(buf) > _MAX_HEAD:
                raise ProtocolError("response headers larger than 64 KiB")
            self._fill(stale_ok=stale_ok and not buf)
        lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
        del buf[: end + 4]
        status_line = lines[0].split(" ", 2)
        if len(status_line) < 2 or not status_line[0].startswith("HTTP/1.") or not status_line[1].isdigit():
            raise ProtocolError(f"bad status line {lines[0][:100]!r}")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise ProtocolError(f"bad header line {line[:100]!r}")
            name = name.strip().lower()
            value = value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        return int(status_line[1]), status_line[0], headers

    def _take(self, n: int) -> bytes:
        buf = self._buf
        while len(buf) < n:
            self._fill()
        data = bytes(buf[:n])
        del buf[:n]
        return data

    def _line(self) -> bytes:
        buf = self._buf
        while (end := buf.find(b"\r\n")) < 0:
            if len(buf) > _MAX_HEAD:
                raise ProtocolError("chunk header line too long")
            self._fill()
        line = bytes(buf[:end])
        del buf[: end + 2]
        return line

    def _read_chunked(self) -> bytes:
        parts = []
        while True:
            size_text = self._line().split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ProtocolError(f"bad chunk size {size_text[:20]!r}") from None
            if size == 0:
                while self._line():  # trailer fields, up to the empty line
                    pass
                return b"".join(parts)
            parts.append(self._take(size))
            if self._take(2) != b"\r\n":
                raise ProtocolError("chunk not followed by CRLF")

    def _read_to_close(self) -> bytes:
        while True:
            try:
                n = self._sock.recv_into(self._scratch)
            except ConnectionResetError:
                n = 0
            if not n:
                data = bytes(self._buf)
                self._buf.clear()
                return data
            self._buf += self._scratch[:n]
