"""One outbound webhook POST, safe against SSRF and bounded in time and size (SPEC §5, INTEROP S3-S5).

The address check happens inside urllib3's connection setup: `_GuardedConnectionMixin._new_conn`
resolves the host, refuses the whole attempt when any answer is non-public, then opens the socket to
the exact address it checked. The connection keeps the host name for the Host header, TLS SNI and
certificate verification, so HTTPS still proves it reached the named receiver. A DNS answer that
changes between the save-time check and the send (rebinding) is therefore judged again, on the
address actually used.

Other guards: `trust_env=False` (no proxy, .netrc or CA override from the environment),
`allow_redirects=False`, no retries, `Accept-Encoding: identity` (no decompression bombs), the
response read stops at 64 KiB, and one total deadline (WEBHOOK_TIMEOUT) covers connect, waiting for
the answer and reading it: a watchdog shuts the socket down when it passes.

Cost per event (bench/README: a new Session, Timer thread and TCP connection each time was most of the
worker's transport CPU): each thread keeps one Session, whose pool manager keeps one pool per
(scheme, host, port), so consecutive events to the same receiver reuse a keep-alive connection. The
address check still runs on every new connection; a reused one was checked when it was opened, and is
checked again against the current policy before reuse (WEBHOOK_ALLOW_PRIVATE_NETWORKS may have been
switched off since). Connections idle longer than KEEPALIVE_IDLE are not reused: a receiver that closes
idle connections (Node's default is 5 s) could otherwise close one while our request is on its way,
and an attempt is never retried. One watchdog thread per process serves every attempt's deadline
instead of a new Timer thread per attempt.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError

from webhooks.urlcheck import (
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

# Per thread: the Session reused across attempts, and the connections used by the attempt running now,
# so the watchdog can cut them. One attempt runs at a time per thread (Celery worker thread or
# in-process pool thread).
_current = threading.local()

# A pooled connection idle longer than this is closed rather than reused (see the module docstring).
KEEPALIVE_IDLE = 4.0
# Distinct receivers whose pools one thread keeps (least recently used dropped first); one connection
# each, since a thread makes one attempt at a time.
POOLS_PER_THREAD = 16


@dataclass(frozen=True)
class AttemptResult:
    delivered: bool
    status_code: int | None
    latency_ms: int
    error_class: str = ""
    error_message: str = ""
    response_excerpt: str = ""


class _GuardedConnectionMixin:
    """Replaces urllib3's `_new_conn`: resolve, check every address, connect to a checked one."""

    _dns_host: str
    host: str
    port: int
    timeout: float | None
    source_address: tuple[str, int] | None
    socket_options: list | None

    def _new_conn(self) -> socket.socket:
        try:
            addresses = resolve(self._dns_host, self.port)
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc  # type: ignore[arg-type]
        if not private_networks_allowed() and not all(address_is_public(ip) for ip in addresses):
            raise BlockedAddress()
        last_error: OSError | None = None
        for ip in addresses:
            try:
                sock = self._connect_to(ip)
            except TimeoutError as exc:
                raise ConnectTimeoutError(self, f"Connection to {self.host} timed out.") from exc
            except OSError as exc:
                last_error = exc
                continue
            self._checked_ip = ip  # what the guard approved; re-judged before each reuse
            return sock
        raise NewConnectionError(self, f"Failed to establish a new connection: {last_error}") from last_error  # type: ignore[arg-type]

    def _connect_to(self, ip: IPAddress) -> socket.socket:
        """A socket connected to exactly this address; no further name resolution happens."""
        family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            for option in self.socket_options or []:
                sock.setsockopt(*option)
            if self.timeout is not None:
                sock.settimeout(self.timeout)
            if self.source_address:
                sock.bind(self.source_address)
            sock.connect((str(ip), self.port))
        except BaseException:
            sock.close()
            raise
        return sock


class GuardedHTTPConnection(_GuardedConnectionMixin, HTTPConnection):
    pass


class GuardedHTTPSConnection(_GuardedConnectionMixin, HTTPSConnection):
    pass


class _GuardedPoolMixin:
    """Hands the attempt's connection (new or reused) to the watchdog registry, and refuses to reuse a
    connection that sat idle too long or whose address the current policy no longer allows."""

    def _get_conn(self, timeout: float | None = None):  # noqa: ANN202
        conn = super()._get_conn(timeout)  # type: ignore[misc]
        if getattr(conn, "sock", None) is not None:
            checked = getattr(conn, "_checked_ip", None)
            idle = time.monotonic() - getattr(conn, "_released_at", 0.0)
            allowed = checked is not None and (private_networks_allowed() or address_is_public(checked))
            if idle > KEEPALIVE_IDLE or not allowed:
                conn.close()  # the next request on it opens (and checks) a new connection
        registry = getattr(_current, "connections", None)
        if registry is not None:
            registry.append(conn)
        return conn

    def _put_conn(self, conn) -> None:  # noqa: ANN001
        if conn is not None:
            conn._released_at = time.monotonic()
        super()._put_conn(conn)  # type: ignore[misc]


class GuardedHTTPConnectionPool(_GuardedPoolMixin, HTTPConnectionPool):
    ConnectionCls = GuardedHTTPConnection


class GuardedHTTPSConnectionPool(_GuardedPoolMixin, HTTPSConnectionPool):
    ConnectionCls = GuardedHTTPSConnection


class GuardedAdapter(HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": GuardedHTTPConnectionPool,
            "https": GuardedHTTPSConnectionPool,
        }


def session_create() -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # INTEROP S4: no HTTP(S)_PROXY, .netrc or REQUESTS_CA_BUNDLE from the environment
    # max_retries=0: one attempt, never retried (SPEC §5).
    adapter = GuardedAdapter(max_retries=0, pool_connections=POOLS_PER_THREAD, pool_maxsize=1)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def _thread_session() -> requests.Session:
    session = getattr(_current, "session", None)
    if session is None:
        session = _current.session = session_create()
    return session


class _Deadline:
    """One attempt's deadline. `cancel` and the watchdog's `cut` take the same lock, so a deadline that
    passes just as the attempt ends can never cut a connection already handed to the next attempt."""

    __slots__ = ("at", "connections", "done", "fired")

    def __init__(self, at: float, connections: list) -> None:
        self.at = at
        self.connections = connections
        self.done = False
        self.fired = False

    def cut(self) -> None:
        with _watch_lock:
            if self.done:
                return
            self.fired = True
            for conn in list(self.connections):
                sock = getattr(conn, "sock", None)
                if sock is None:
                    continue
                try:
                    sock.shutdown(socket.SHUT_RDWR)  # wakes the reader blocked in recv() on the attempt's thread
                except OSError:
                    pass

    def cancel(self) -> None:
        with _watch_lock:
            self.done = True


_watch_lock = threading.Lock()
_watch_wake = threading.Condition(_watch_lock)
_watch_heap: list[tuple[float, int, _Deadline]] = []
_watch_seq = itertools.count()
_watch_thread: threading.Thread | None = None


def _watch() -> None:
    """The process's one watchdog: sleeps until the earliest deadline, cuts the attempts past it."""
    while True:
        with _watch_wake:
            while _watch_heap and _watch_heap[0][2].done:
                heapq.heappop(_watch_heap)  # finished in time: forget it
            if not _watch_heap:
                _watch_wake.wait()
                continue
            wait = _watch_heap[0][0] - time.monotonic()
            if wait > 0:
                _watch_wake.wait(wait)
                continue
            _at, _seq, due = heapq.heappop(_watch_heap)
        due.cut()


def _watch_start(timeout: float, connections: list) -> _Deadline:
    global _watch_thread
    deadline = _Deadline(time.monotonic() + timeout, connections)
    with _watch_wake:
        # A forked child (Celery prefork) inherits no running thread: start one there too.
        if _watch_thread is None or not _watch_thread.is_alive():
            _watch_thread = threading.Thread(target=_watch, name="roster-webhook-deadline", daemon=True)
            _watch_thread.start()
        heapq.heappush(_watch_heap, (deadline.at, next(_watch_seq), deadline))
        if _watch_heap[0][2] is deadline:
            _watch_wake.notify()  # the new deadline is the earliest: the watchdog must wake sooner
    return deadline


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        linked = [current.__cause__, current.__context__, getattr(current, "reason", None), *current.args]
        stack.extend(e for e in linked if isinstance(e, BaseException))


def _classify(exc: BaseException, timeout: float, deadline_passed: bool) -> tuple[str, str]:
    """An (error_class, message) pair that names what happened without echoing internals."""
    chain = list(_causes(exc))
    if any(isinstance(e, BlockedAddress) for e in chain):
        return "BlockedAddress", BLOCKED_MESSAGE
    if deadline_passed or isinstance(exc, requests.exceptions.Timeout):
        return "Timeout", f"no complete answer within {timeout:g} s"
    if any(isinstance(e, NameResolutionError | socket.gaierror) for e in chain):
        return "DNSError", "the endpoint's host name does not resolve"
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return "ConnectionRefused", "connection refused"
    if isinstance(exc, requests.exceptions.SSLError):
        return "TLSError", "TLS handshake or certificate verification failed"
    if isinstance(exc, requests.exceptions.InvalidURL | requests.exceptions.InvalidSchema):
        return "InvalidURL", "the endpoint is not a valid http or https URL"
    if isinstance(exc, requests.exceptions.ConnectionError):
        return "ConnectionError", "the connection failed or was closed before an answer"
    return "Error", f"unexpected {type(exc).__name__}"


def _read_capped(response: requests.Response, cap: int, into: list[bytes] | None = None) -> bytes:
    """Read at most `cap` bytes; chunks land in `into` as they arrive, so a read cut short by the
    deadline or a reset still leaves what did arrive."""
    chunks: list[bytes] = [] if into is None else into
    total = 0
    while total < cap:
        # read1 returns whatever has arrived (up to the size) instead of waiting to fill a buffer.
        chunk = response.raw.read1(min(8192, cap - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> AttemptResult:
    """POST `body` once to `url`; never raises for network or receiver trouble, returns the outcome."""
    started = time.monotonic()
    connections: list = []
    _current.connections = connections
    session = _thread_session()
    send_headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity", **headers}
    status: int | None = None
    received: list[bytes] = []
    deadline = _watch_start(timeout, connections)
    try:
        response = session.post(
            url, data=body, headers=send_headers, timeout=(timeout, timeout), allow_redirects=False, stream=True
        )
        status = response.status_code
        try:
            _read_capped(response, RESPONSE_READ_CAP, into=received)
        except Exception:  # noqa: S110 - urllib3 ProtocolError, OSError, ...: see below
            # The status line arrived, so the receiver's verdict is known; a body cut short by the
            # deadline or a reset only shortens the excerpt.
            pass
        finally:
            response.close()
    except Exception as exc:  # noqa: BLE001 - every failure becomes a recorded outcome, never an exception
        deadline.cancel()
        if deadline.fired:
            _drop_connections(connections)
        error_class, message = _classify(exc, timeout, deadline.fired)
        return AttemptResult(False, None, _ms_since(started), error_class, message)
    finally:
        deadline.cancel()
        if deadline.fired:
            _drop_connections(connections)
        _current.connections = None
    text = b"".join(received)[:EXCERPT_CAP].decode("utf-8", "replace")
    if 200 <= status < 300:
        return AttemptResult(True, status, _ms_since(started), response_excerpt=text)
    if 300 <= status < 400:
        return AttemptResult(
            False, status, _ms_since(started), "Redirect", f"answered {status}; redirects are not followed", text
        )
    return AttemptResult(False, status, _ms_since(started), "HTTPStatus", f"answered {status}", text)


def _drop_connections(connections: list) -> None:
    """A connection the watchdog shut down must not go back into use."""
    for conn in connections:
        try:
            conn.close()
        except Exception:  # noqa: S110, BLE001 - closing a dead socket: nothing to report
            pass


def _ms_since(started: float) -> int:
    return max(0, int((time.monotonic() - started) * 1000))
