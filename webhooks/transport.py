"""One outbound webhook POST, safe against SSRF and bounded in time and size (docs/contract.md §5,
docs/interop.md S3-S5).

Built on the standard library's `http.client` and `ssl`, which every Roster process has loaded anyway
(Django's HTTP layer and the broker client import them). Kept for memory: bench/README.md, "Code kept for
speed", "Webhook sender on the standard library" (libcurl through pycurl did the same job and brought a
second OpenSSL and libcurl's own libraries into the Celery worker).

- **One total deadline per attempt.** Every socket of an attempt is a `_DeadlineSocket` (or, for
  HTTPS, a `_DeadlineTLSSocket`): before each receive and each send it sets its own timeout to the time
  left until the attempt's deadline. Connect, TLS handshake, sending, waiting for the answer and reading
  it are all bounded together, so a receiver dripping a byte at a time is cut at the deadline, with no
  watchdog thread and nothing copied out of `http.client`.
- **Connect-time address check.** Before an attempt on a new connection, the host is resolved here
  (`core.outbound.resolve`) and the whole attempt is refused when any answer is non-public. The socket
  is then opened by this module to one of the checked addresses (`_connect`), and an address that was
  not checked (an IP literal in the URL that the check saw differently) is refused before any socket
  exists. The URL keeps the host name, so the Host header, TLS SNI and certificate verification
  (certifi's CA bundle, host name checked) are for the name: HTTPS still proves it reached the named
  receiver, and a DNS answer that changes between the save-time check and the send (rebinding) is
  judged on the address actually used.
- Nothing comes from the environment: `http.client` reads no proxy variable and no `.netrc`, and the
  TLS context trusts certifi's bundle only (not SSL_CERT_FILE or the system store).
- Only http and https, no redirects (a 3xx is a failed attempt), no retries of ours but the one below,
  `Accept-Encoding: identity` (no decompression), HTTP/1.1, the path sent as configured, the response
  kept up to 64 KiB (reading stops past it and the connection is dropped; a 2xx whose status and headers
  arrived still counts as delivered, as when the deadline cuts a body short: the receiver's verdict is
  known). `http.client` skips a `100 Continue`; any other 1xx is a failed attempt.
- Celery's soft time limit raises SoftTimeLimitExceeded from a signal handler, which Python runs while
  a socket waits (the wait is interrupted and the handler's exception leaves it). It leaves `post`
  as that exception, never becoming an outcome, and the connection it cut is dropped.

Keep-alive: each thread keeps its own connections, one per receiver (scheme, host, port), at most
POOLS_PER_THREAD, least recently used dropped first, with the addresses checked for it and the time of
its last attempt. Within KEEPALIVE_IDLE they are judged again against the current policy
(WEBHOOK_ALLOW_PRIVATE_NETWORKS may have been switched off since) and the connection is reused without
resolving again, unless the receiver has closed it (checked before sending: a readable idle connection
is a closed one); past it, or after a failed attempt, the name is resolved and checked afresh on a new
connection. A receiver that closes idle connections (Node's default is 5 s) could otherwise close it
while our request is on its way: when a reused connection gives back not a single byte, the request is
sent once more on a new connection (to the same checked addresses, within the same deadline). That
covers the receiver closing the idle connection as our request left; a receiver that read the request
and then dropped the connection without answering would see it twice (event id unchanged).
"""

from __future__ import annotations

import functools
import http.client
import ipaddress
import os
import select
import socket
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import certifi

from core.outbound import (
    BLOCKED_MESSAGE,
    BlockedAddress,
    IPAddress,
    address_is_public,
    private_networks_allowed,
    resolve,
)

RESPONSE_READ_CAP = 64 * 1024
EXCERPT_CAP = 4096
USER_AGENT = "Roster-Webhooks/1.0"
READ_CHUNK = 16 * 1024

# A kept connection idle longer than this is not reused (see the module docstring).
KEEPALIVE_IDLE = 4.0
# Distinct receivers whose connection (and checked addresses) one thread keeps, least recently used
# dropped first.
POOLS_PER_THREAD = 16

# Per thread: the receivers it keeps connections to. One attempt runs at a time per thread (Celery worker
# thread or in-process pool thread).
_current = threading.local()
# Connections inherited across a fork: their sockets are the parent's, so the child never uses them; kept
# referenced so that the child's garbage collection does not touch them either.
_inherited: list[Any] = []
# The exceptions that mean the running task must stop now (Celery's SoftTimeLimitExceeded): they leave
# `post` instead of becoming an outcome. webhooks.apps hands them over from webhooks.tasks, the one module
# that knows Celery; until then (no worker) there are none.
_task_stop: tuple[type[BaseException], ...] = ()


def task_stop_set(*exceptions: type[BaseException]) -> None:
    global _task_stop
    _task_stop = exceptions


@dataclass(frozen=True)
class AttemptResult:
    delivered: bool
    status_code: int | None
    latency_ms: int
    error_class: str = ""
    error_message: str = ""
    response_excerpt: str = ""


class InvalidEndpoint(Exception):
    """The URL is not an http(s) URL with a host; nothing was sent."""


# --- sockets bounded by one deadline ----------------------------------------------------------------


def _time_left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the attempt's deadline has passed")
    return left


class _DeadlineSocket(socket.socket):
    """A TCP socket whose every wait ends at `deadline` (time.monotonic()): each receive and send first
    sets the socket's timeout to the time left. `http.client` reads through `makefile`, whose reads
    come here, so the status line, the headers and the body share the one deadline."""

    deadline = 0.0

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        self.settimeout(_time_left(self.deadline))
        return super().recv(bufsize, flags)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self.settimeout(_time_left(self.deadline))
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        self.settimeout(_time_left(self.deadline))
        super().sendall(data, flags)


class _DeadlineTLSSocket(ssl.SSLSocket):
    """The TLS counterpart of _DeadlineSocket (what `_tls_context` wraps sockets in)."""

    deadline = 0.0

    def recv(self, buflen: int = 1024, flags: int = 0) -> bytes:
        self.settimeout(_time_left(self.deadline))
        return super().recv(buflen, flags)

    def recv_into(self, buffer: Any, nbytes: int | None = None, flags: int = 0) -> int:
        self.settimeout(_time_left(self.deadline))
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        self.settimeout(_time_left(self.deadline))
        super().sendall(data, flags)


@functools.lru_cache(maxsize=4)
def _tls_context(cafile: str) -> ssl.SSLContext:
    """A client context trusting `cafile` only, checking the host name; one per bundle, shared by the
    threads (made at the first HTTPS attempt: a worker that only ever posts over http never parses it)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED and check_hostname
    context.load_verify_locations(cafile=cafile)
    context.sslsocket_class = _DeadlineTLSSocket
    return context


def _socket_for(ip: IPAddress, family: int, socktype: int, protocol: int) -> socket.socket:
    """A new socket for a connection to `ip`."""
    return _DeadlineSocket(family, socktype, protocol)


# --- connections kept per thread ----------------------------------------------------------------------


def _idle_and_open(sock: socket.socket) -> bool:
    """True unless the receiver has closed the kept connection (or sent something unasked, which makes
    it unusable too): an idle HTTP/1.1 connection has nothing to read."""
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLERR | select.POLLHUP)
    return not poller.poll(0)


@dataclass
class _Kept:
    """A receiver's addresses as checked when its connection was opened, when it was last used, and the
    connection (None once it was dropped)."""

    addresses: tuple[IPAddress, ...]
    released_at: float
    sock: socket.socket | None = None


def _kept() -> OrderedDict[tuple[str, str, int], _Kept]:
    kept = getattr(_current, "kept", None)
    if kept is None:
        kept = _current.kept = OrderedDict()
    return kept


def _drop(entry: _Kept | None) -> None:
    if entry is not None and entry.sock is not None:
        entry.sock.close()
        entry.sock = None


def _after_fork_in_child() -> None:
    global _current
    kept = getattr(_current, "kept", None)
    if kept:
        _inherited.append(kept)
    _current = threading.local()


os.register_at_fork(after_in_child=_after_fork_in_child)


def connections_close() -> None:
    """Close this thread's kept connections (tests, and a thread about to end)."""
    kept = getattr(_current, "kept", None)
    if kept:
        for entry in kept.values():
            _drop(entry)
    _current.kept = None


# --- the attempt -----------------------------------------------------------------------------------


class _Attempt:
    """What one attempt's answer brought: `head` when the final status and headers have arrived (from
    then on the receiver's verdict is known), `write` for each piece of the body read (what it meets is
    kept in `error`; `post` re-raises a task stop found there)."""

    __slots__ = ("body", "capped", "error", "headers_done", "received")

    def __init__(self) -> None:
        self.body: list[bytes] = []
        self.received = 0
        self.capped = False
        self.headers_done = False
        self.error: BaseException | None = None

    def head(self, status: int) -> None:
        self.headers_done = True

    def write(self, chunk: bytes) -> int | None:
        """Keeps at most RESPONSE_READ_CAP bytes of the answer; 0 stops reading (the rest is never read
        and the connection is dropped)."""
        try:
            room = RESPONSE_READ_CAP - self.received
            if len(chunk) <= room:
                self.body.append(chunk)
                self.received += len(chunk)
                return None
            if room > 0:
                self.body.append(chunk[:room])
                self.received += room
            self.capped = True
            return 0
        except BaseException as exc:  # noqa: BLE001 - kept for post()
            self.error = exc
            return 0


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        linked = [current.__cause__, current.__context__, *current.args]
        stack.extend(e for e in linked if isinstance(e, BaseException))


def _classify(exc: BaseException, timeout: float) -> tuple[str, str]:
    """An (error_class, message) pair for what ended an attempt, in the delivery log's vocabulary."""
    chain = list(_causes(exc))
    if any(isinstance(e, BlockedAddress) for e in chain):
        return "BlockedAddress", BLOCKED_MESSAGE
    if any(isinstance(e, TimeoutError) for e in chain):
        return "Timeout", f"no complete answer within {timeout:g} s"
    if any(isinstance(e, ssl.SSLError | ssl.CertificateError) for e in chain):
        return "TLSError", "TLS handshake or certificate verification failed"
    if any(isinstance(e, socket.gaierror) for e in chain):
        return "DNSError", "the endpoint's host name does not resolve"
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return "ConnectionRefused", "connection refused"
    if any(isinstance(e, InvalidEndpoint | UnicodeError) for e in chain):
        return "InvalidURL", "the endpoint is not a valid http or https URL"
    # Connect failures other than a refusal, resets, an empty or garbled answer, a body cut short.
    if any(isinstance(e, OSError | http.client.HTTPException) for e in chain):
        return "ConnectionError", "the connection failed or was closed before an answer"
    return "Error", f"unexpected {type(exc).__name__}"


def _split(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, request target) of an http(s) URL; InvalidEndpoint otherwise. What is sent
    is rebuilt from these parts, so user info (it would be sent as Basic auth by some clients) and a
    fragment never leave, and the host connected to is the host this module checked."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = parts.hostname
        port = parts.port
    except ValueError as exc:
        raise InvalidEndpoint() from exc
    if scheme not in ("http", "https") or not host:
        raise InvalidEndpoint()
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise InvalidEndpoint() from exc
    target = parts.path or "/"
    if parts.query:
        target = f"{target}?{parts.query}"
    return scheme, host, port or (443 if scheme == "https" else 80), target


def _addresses(
    kept: OrderedDict[tuple[str, str, int], _Kept], key: tuple[str, str, int], now: float
) -> tuple[tuple[IPAddress, ...], socket.socket | None]:
    """The addresses this attempt may connect to, and the kept connection it may reuse (None: open a
    new one). A receiver used within KEEPALIVE_IDLE whose addresses the current policy still allows keeps
    them; otherwise its name is resolved and checked again (BlockedAddress when any answer is
    non-public)."""
    entry = kept.get(key)
    if entry is not None:
        kept.move_to_end(key)
        if now - entry.released_at <= KEEPALIVE_IDLE and (
            private_networks_allowed() or all(address_is_public(ip) for ip in entry.addresses)
        ):
            sock = entry.sock
            if sock is not None and not _idle_and_open(sock):
                _drop(entry)  # the receiver closed it while it was idle: never write into it
                sock = None
            entry.sock = None  # the attempt holds it now; put back when it may be reused
            return entry.addresses, sock
        _drop(entry)
        del kept[key]
    addresses = tuple(resolve(key[1], key[2]))  # socket.gaierror when the name does not resolve
    if not private_networks_allowed() and not all(address_is_public(ip) for ip in addresses):
        raise BlockedAddress()
    return addresses, None


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _connect(scheme: str, host: str, port: int, addresses: tuple[IPAddress, ...], deadline: float) -> socket.socket:
    """A new connection to the first of the checked addresses that answers (to the literal itself when
    the URL names an address, which must then be one of them), TLS verified for the URL's host name."""
    targets = (ipaddress.ip_address(host),) if _is_ip_literal(host) else addresses
    last: BaseException = ConnectionError("no address to connect to")
    for ip in targets:
        if ip not in addresses or not (private_networks_allowed() or address_is_public(ip)):
            raise BlockedAddress()  # never a socket to an address that was not checked
        family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        sock = _socket_for(ip, family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.deadline = deadline  # type: ignore[attr-defined]
            sock.settimeout(_time_left(deadline))
            sock.connect((str(ip), port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if scheme == "https":
                sock.settimeout(_time_left(deadline))  # the handshake is bounded by the same deadline
                sock = _tls_context(certifi.where()).wrap_socket(sock, server_hostname=host)
                sock.deadline = deadline  # type: ignore[attr-defined]
        except BaseException as exc:
            sock.close()
            if isinstance(exc, ConnectionRefusedError | ConnectionResetError | ConnectionAbortedError):
                last = exc
                continue  # like a client's connect: the next address may answer
            raise
        return sock
    raise last


def _request(scheme: str, host: str, port: int, target: str, body: bytes, headers: dict[str, str]) -> bytes:
    """The request's head and body as one buffer: one write, so a small event leaves in one segment (one
    TLS record), and a receiver that reads once sees all of it."""
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in target):
        raise InvalidEndpoint()  # a space or control character would break the request line
    named = f"[{host}]" if ":" in host else host
    lines = [
        f"POST {target} HTTP/1.1",
        f"Host: {named}" if port == (443 if scheme == "https" else 80) else f"Host: {named}:{port}",
        *(f"{name}: {value}" for name, value in headers.items()),
        f"Content-Length: {len(body)}",
        "",
        "",
    ]
    return "\r\n".join(lines).encode("latin-1") + body


def _exchange(sock: socket.socket, request: bytes, attempt: _Attempt) -> tuple[int, bool]:
    """Send the request and read the answer into `attempt`; (status, whether the connection may be kept).
    Raises for anything before the final status and headers arrived; once they have, a failure while
    reading the body only ends the reading (the verdict is known). `http.client` reads the answer: the
    status line (skipping a 100 Continue), the headers, and the body by its framing."""
    sock.sendall(request)
    response = http.client.HTTPResponse(sock, method="POST")
    try:
        response.begin()
        status = response.status
        attempt.head(status)
        reusable = status >= 200 and not response.will_close  # a 1xx but 100 leaves the final answer unread
        try:
            while chunk := response.read1(READ_CHUNK):
                if attempt.write(chunk) == 0:
                    reusable = False  # stopped mid-answer: the rest is never read
                    break
            else:
                response.read()  # everything arrived: this marks the answer complete (b"" left to read)
        except _task_stop:
            raise
        except Exception:  # noqa: BLE001 - a body cut short by the deadline or a reset: the verdict stands
            reusable = False
        return status, reusable and response.isclosed()
    finally:
        response.close()  # the reader on the socket; the socket itself stays open


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> AttemptResult:
    """POST `body` once to `url`; never raises for network or receiver trouble, returns the outcome."""
    started = time.monotonic()
    deadline = started + timeout
    kept = _kept()
    key: tuple[str, str, int] | None = None
    sock: socket.socket | None = None
    attempt = _Attempt()
    try:
        scheme, host, port, target = _split(url)
        send_headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity", **headers}
        if any("\r" in f"{name}{value}" or "\n" in f"{name}{value}" for name, value in send_headers.items()):
            raise ValueError("a header contains a line break")
        request = _request(scheme, host, port, target, body, send_headers)
        key = (scheme, host, port)
        addresses, sock = _addresses(kept, key, started)
        reused = sock is not None
        if sock is None:
            sock = _connect(scheme, host, port, addresses, deadline)
        sock.deadline = deadline  # type: ignore[attr-defined]
        try:
            status, reusable = _exchange(sock, request, attempt)
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            if not reused or attempt.headers_done:
                raise
            # The kept connection gave back nothing: the receiver closed it as the request left. Once
            # more on a new connection, to the same checked addresses, within the same deadline.
            sock.close()
            sock = _connect(scheme, host, port, addresses, deadline)
            status, reusable = _exchange(sock, request, attempt)
        if isinstance(attempt.error, _task_stop):
            raise attempt.error
    except _task_stop:
        if sock is not None:
            sock.close()
        raise
    except Exception as exc:  # noqa: BLE001 - every failure becomes a recorded outcome, never an exception
        if sock is not None:
            sock.close()
        if key is not None:
            _drop(kept.pop(key, None))  # whatever was learnt about this receiver is judged afresh next time
        error_class, message = _classify(exc, timeout)
        return AttemptResult(False, None, _ms_since(started), error_class, message)
    if not reusable:
        sock.close()
    if attempt.capped:
        kept.pop(key, None)
    else:
        kept[key] = _Kept(addresses, time.monotonic(), sock if reusable else None)
        while len(kept) > POOLS_PER_THREAD:
            _drop(kept.popitem(last=False)[1])
    text = b"".join(attempt.body)[:EXCERPT_CAP].decode("utf-8", "replace")
    if 200 <= status < 300:
        return AttemptResult(True, status, _ms_since(started), response_excerpt=text)
    if 300 <= status < 400:
        return AttemptResult(
            False, status, _ms_since(started), "Redirect", f"answered {status}; redirects are not followed", text
        )
    return AttemptResult(False, status, _ms_since(started), "HTTPStatus", f"answered {status}", text)


def _ms_since(started: float) -> int:
    return max(0, int((time.monotonic() - started) * 1000))
