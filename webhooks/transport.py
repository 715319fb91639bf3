"""One outbound webhook POST, safe against SSRF and bounded in time and size (docs/contract.md §5,
docs/interop.md S3-S5).

Built on libcurl (pycurl), a maintained client that does natively the two things a webhook sender needs
and that the standard library does not: one total deadline per attempt (`TIMEOUT_MS` bounds connect,
send, waiting for the answer and reading it together, so a receiver dripping a byte at a time is cut
at the deadline without a watchdog thread), and connecting to an address chosen by the caller while
the URL keeps the host name (`RESOLVE`). What it costs in CPU per POST against the former hand-written
`http.client` sender is measured by `python -m bench.clients`.

- **Connect-time address check.** Before an attempt on a new connection, the host is resolved here
  (`core.outbound.resolve`) and the whole attempt is refused when any answer is non-public; the
  checked addresses are handed to libcurl with `RESOLVE`, so libcurl never resolves the name itself,
  and `OPENSOCKETFUNCTION` refuses any socket to an address that was not checked (belt and braces:
  the connection provably goes to the approved address). The URL keeps the host name, so the Host
  header, TLS SNI and certificate verification (certifi's CA bundle, host name checked) are for the
  name: HTTPS still proves it reached the named receiver, and a DNS answer that changes between the
  save-time check and the send (rebinding) is judged on the address actually used.
- Nothing comes from the environment: `PROXY` "" and `NOPROXY` "*" switch off the proxy variables,
  `.netrc` is ignored, and the CA file is given explicitly (libcurl then loads no default store).
- Only http and https (`PROTOCOLS`), no redirects (a 3xx is a failed attempt), no retries of ours,
  `Accept-Encoding: identity` (no decompression), HTTP/1.1, the path sent as configured, the response
  kept up to 64 KiB (the transfer is aborted past it; a 2xx whose status and headers arrived still
  counts as delivered, as when the deadline cuts a body short: the receiver's verdict is known).
- Celery's soft time limit raises SoftTimeLimitExceeded from a signal handler, which Python runs only
  between bytecodes. libcurl retries a wait that a signal interrupts, so a progress callback
  (`XFERINFOFUNCTION`, called on every turn of its loop) gives the handler its chance mid-transfer; a
  callback stores what it catches, and an exception that escapes one (a handler runs as the callback
  is entered) is recovered from `sys.last_value`, where pycurl's error printing leaves it; pycurl
  raises what a handler raises once `perform` returns. In every case it leaves `post`, never becoming
  an outcome.

Keep-alive: each thread keeps one Curl handle; libcurl's connection cache keeps the connections, so
consecutive events to one receiver reuse one. The addresses checked for a receiver are remembered with
the time of its last attempt: within KEEPALIVE_IDLE they are judged again against the current policy
(WEBHOOK_ALLOW_PRIVATE_NETWORKS may have been switched off since) and reused without resolving again;
past it, or after a failed attempt, the name is resolved and checked afresh and a new connection is
forced (`FRESH_CONNECT`). libcurl itself does not reuse a connection idle for KEEPALIVE_IDLE
(`MAXAGE_CONN`: a receiver that closes idle connections, Node's default is 5 s, could otherwise close it
while our request is on its way) nor one the receiver has closed (it checks before reusing). One
libcurl behaviour has no switch: when a reused connection gives back not a single byte, it sends the
request again once on a new connection (to the same checked addresses, within the same deadline). That
covers the receiver closing the idle connection as our request left; a receiver that read the request
and then dropped the connection without answering would see it twice (event id unchanged).
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import certifi
import pycurl

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

# A kept connection idle longer than this is not reused (see the module docstring).
KEEPALIVE_IDLE = 4.0
# Distinct receivers whose connection (and checked addresses) one thread keeps, least recently used
# dropped first.
POOLS_PER_THREAD = 16

# Per thread: its Curl handle and the checked addresses of the receivers it keeps connections to. One
# attempt runs at a time per thread (Celery worker thread or in-process pool thread).
_current = threading.local()
# Handles inherited across a fork: their sockets are the parent's, so the child never closes them
# (closing a TLS connection writes to it); kept referenced so that garbage collection does not either.
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


@dataclass
class _Kept:
    """A receiver's addresses as checked when its connection was opened, and when it was last used."""

    addresses: tuple[IPAddress, ...]
    released_at: float


class _Attempt:
    """One attempt's callbacks and what they saw. Each callback catches everything it raises and
    stores it (pycurl would print an ordinary exception and abort the transfer); `post` re-raises or
    classifies it once `perform` returns."""

    __slots__ = ("allowed", "body", "capped", "error", "final_status", "headers_done", "received", "refused")

    def __init__(self, allowed: tuple[IPAddress, ...]) -> None:
        self.allowed = allowed
        self.body: list[bytes] = []
        self.received = 0
        self.capped = False
        self.refused = False
        self.final_status = False
        self.headers_done = False
        self.error: BaseException | None = None

    def header(self, line: bytes) -> int | None:
        """Notes when the headers of the final (non-1xx) answer are complete: from then on the
        receiver's verdict is known, whatever happens to the body."""
        try:
            if line[:5] == b"HTTP/":
                code = line.split(None, 2)[1:2]
                self.final_status = bool(code) and code[0][:1] != b"1"
                self.headers_done = False
            elif self.final_status and line.strip() == b"":
                self.headers_done = True
            return None
        except BaseException as exc:  # noqa: BLE001 - kept for post(); pycurl would only print it
            self.error = exc
            return 0

    def write(self, chunk: bytes) -> int | None:
        """Keeps at most RESPONSE_READ_CAP bytes of the answer; past that the transfer is aborted
        (returning a short count is libcurl's way to stop reading)."""
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
        except BaseException as exc:  # noqa: BLE001 - kept for post(); pycurl would only print it
            self.error = exc
            return 0

    @staticmethod
    def progress(_down_total: int, _down: int, _up_total: int, _up: int) -> None:
        """Does nothing, on purpose: libcurl calls it on every turn of its wait loop (a signal wakes
        that wait), and running Python code is what lets a pending signal handler run mid-transfer."""
        return None

    def open_socket(self, _purpose: int, address: Any) -> Any:
        """The socket for a new connection, only to an address this attempt checked (libcurl was
        given those addresses; anything else is refused)."""
        try:
            ip = ipaddress.ip_address(str(address.addr[0]).split("%", 1)[0])
            if ip not in self.allowed or not (private_networks_allowed() or address_is_public(ip)):
                self.refused = True
                return pycurl.SOCKET_BAD
            return _socket_for(ip, address.family, address.socktype, address.protocol)
        except BaseException as exc:  # noqa: BLE001 - kept for post(); pycurl would only print it
            self.error = exc
            return pycurl.SOCKET_BAD


def _socket_for(ip: IPAddress, family: int, socktype: int, protocol: int) -> socket.socket:
    """A new socket for a connection to `ip` (pycurl hands libcurl a duplicate of its descriptor)."""
    return socket.socket(family, socktype, protocol)


def _new_handle() -> Any:
    """A Curl handle with everything that does not change between attempts."""
    curl = pycurl.Curl()
    curl.setopt(pycurl.NOSIGNAL, 1)  # no SIGALRM: a handle per thread, and our own name resolution
    curl.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
    curl.setopt(pycurl.REDIR_PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
    curl.setopt(pycurl.FOLLOWLOCATION, 0)
    curl.setopt(pycurl.PROXY, "")
    curl.setopt(pycurl.NOPROXY, "*")
    curl.setopt(pycurl.NETRC, pycurl.NETRC_IGNORED)
    curl.setopt(pycurl.CAINFO, certifi.where())
    curl.unsetopt(pycurl.CAPATH)  # no compiled-in system store next to certifi's bundle
    curl.setopt(pycurl.SSL_VERIFYPEER, 1)
    curl.setopt(pycurl.SSL_VERIFYHOST, 2)
    curl.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
    curl.setopt(pycurl.PATH_AS_IS, 1)
    curl.setopt(pycurl.MAXCONNECTS, POOLS_PER_THREAD)
    curl.setopt(pycurl.USERAGENT, USER_AGENT)
    curl.setopt(pycurl.NOPROGRESS, 0)
    curl.setopt(pycurl.XFERINFOFUNCTION, _Attempt.progress)
    return curl


def _thread_state() -> tuple[Any, OrderedDict[tuple[str, str, int], _Kept]]:
    curl = getattr(_current, "curl", None)
    if curl is None:
        curl = _current.curl = _new_handle()
        _current.kept = OrderedDict()
    return curl, _current.kept


def _after_fork_in_child() -> None:
    global _current
    handle = getattr(_current, "curl", None)
    if handle is not None:
        _inherited.append(handle)
    _current = threading.local()


os.register_at_fork(after_in_child=_after_fork_in_child)


def connections_close() -> None:
    """Close this thread's kept connections (tests, and a thread about to end)."""
    curl = getattr(_current, "curl", None)
    if curl is not None:
        curl.close()
        _current.curl = None
        _current.kept = None


# --- the attempt -----------------------------------------------------------------------------------


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
    """An (error_class, message) pair for an exception raised before or around the transfer."""
    chain = list(_causes(exc))
    if any(isinstance(e, BlockedAddress) for e in chain):
        return "BlockedAddress", BLOCKED_MESSAGE
    if any(isinstance(e, TimeoutError) for e in chain):
        return "Timeout", f"no complete answer within {timeout:g} s"
    if any(isinstance(e, socket.gaierror) for e in chain):
        return "DNSError", "the endpoint's host name does not resolve"
    if any(isinstance(e, InvalidEndpoint | UnicodeError) for e in chain):
        return "InvalidURL", "the endpoint is not a valid http or https URL"
    if any(isinstance(e, OSError) for e in chain):
        return "ConnectionError", "the connection failed or was closed before an answer"
    return "Error", f"unexpected {type(exc).__name__}"


_TLS_ERRORS = frozenset(
    code
    for name in (
        "E_SSL_CONNECT_ERROR",
        "E_PEER_FAILED_VERIFICATION",
        "E_SSL_CACERT",
        "E_SSL_CERTPROBLEM",
        "E_SSL_CIPHER",
        "E_SSL_CACERT_BADFILE",
        "E_SSL_ENGINE_NOTFOUND",
        "E_SSL_ENGINE_SETFAILED",
        "E_SSL_ENGINE_INITFAILED",
        "E_SSL_SHUTDOWN_FAILED",
        "E_SSL_CRL_BADFILE",
        "E_SSL_ISSUER_ERROR",
        "E_SSL_PINNEDPUBKEYNOTMATCH",
        "E_SSL_INVALIDCERTSTATUS",
        "E_SSL_CLIENTCERT",
    )
    if (code := getattr(pycurl, name, None)) is not None
)


def _classify_curl(code: int, os_errno: int, timeout: float) -> tuple[str, str]:
    """An (error_class, message) pair for a libcurl error code, in the delivery log's vocabulary."""
    if code == pycurl.E_OPERATION_TIMEDOUT:
        return "Timeout", f"no complete answer within {timeout:g} s"
    if code == pycurl.E_COULDNT_RESOLVE_HOST:
        return "DNSError", "the endpoint's host name does not resolve"
    if code == pycurl.E_COULDNT_CONNECT and os_errno == errno.ECONNREFUSED:
        return "ConnectionRefused", "connection refused"
    if code in _TLS_ERRORS:
        return "TLSError", "TLS handshake or certificate verification failed"
    if code == pycurl.E_URL_MALFORMAT:
        return "InvalidURL", "the endpoint is not a valid http or https URL"
    # Connect failures other than a refusal, resets, an empty or garbled answer, a body cut short.
    return "ConnectionError", "the connection failed or was closed before an answer"


def _split(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, request target) of an http(s) URL; InvalidEndpoint otherwise. libcurl is
    given a URL rebuilt from these parts, so it never sees user info (it would send it as Basic auth)
    or a fragment, and parses the same host this module checked."""
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
) -> tuple[tuple[IPAddress, ...], bool]:
    """The addresses this attempt may connect to, and whether a new connection must be forced. A
    receiver used within KEEPALIVE_IDLE whose addresses the current policy still allows keeps them;
    otherwise its name is resolved and checked again (BlockedAddress when any answer is non-public)."""
    entry = kept.get(key)
    if entry is not None:
        kept.move_to_end(key)
        if now - entry.released_at <= KEEPALIVE_IDLE and (
            private_networks_allowed() or all(address_is_public(ip) for ip in entry.addresses)
        ):
            return entry.addresses, False
        del kept[key]
    addresses = tuple(resolve(key[1], key[2]))  # socket.gaierror when the name does not resolve
    if not private_networks_allowed() and not all(address_is_public(ip) for ip in addresses):
        raise BlockedAddress()
    return addresses, True


def _resolve_entry(host: str, port: int, addresses: tuple[IPAddress, ...]) -> list[str]:
    """libcurl's RESOLVE entry for host:port ("+" lets it age out of the handle's DNS cache; it is set
    again before every attempt, so libcurl never looks the name up itself)."""
    if _is_ip_literal(host):
        return []  # libcurl connects to a literal without resolving
    listed = ",".join(f"[{ip}]" if ip.version == 6 else str(ip) for ip in addresses)
    return [f"+{host}:{port}:{listed}"]


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> AttemptResult:
    """POST `body` once to `url`; never raises for network or receiver trouble, returns the outcome."""
    started = time.monotonic()
    try:
        scheme, host, port, target = _split(url)
        send_headers = {"Accept-Encoding": "identity", **headers}
        if any("\r" in f"{name}{value}" or "\n" in f"{name}{value}" for name, value in send_headers.items()):
            raise ValueError("a header contains a line break")  # libcurl would send it as it is
        curl, kept = _thread_state()
        key = (scheme, host, port)
        addresses, fresh = _addresses(kept, key, started)
    except _task_stop:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure becomes a recorded outcome, never an exception
        error_class, message = _classify(exc, timeout)
        return AttemptResult(False, None, _ms_since(started), error_class, message)

    attempt = _Attempt(addresses)
    url_host = f"[{host}]" if ":" in host else host
    curl.setopt(pycurl.URL, f"{scheme}://{url_host}:{port}{target}")
    curl.setopt(
        pycurl.HTTPHEADER,
        # "Expect:" and "Accept:" remove libcurl's own additions (a 100-continue wait on large bodies).
        [f"{name}: {value}" for name, value in send_headers.items()] + ["Expect:", "Accept:"],
    )
    curl.setopt(pycurl.POSTFIELDS, body)
    curl.setopt(pycurl.TIMEOUT_MS, max(1, int(timeout * 1000)))
    curl.setopt(pycurl.MAXAGE_CONN, int(KEEPALIVE_IDLE))
    curl.setopt(pycurl.FRESH_CONNECT, 1 if fresh else 0)
    curl.setopt(pycurl.RESOLVE, _resolve_entry(host, port, addresses))
    curl.setopt(pycurl.OPENSOCKETFUNCTION, attempt.open_socket)
    curl.setopt(pycurl.HEADERFUNCTION, attempt.header)
    curl.setopt(pycurl.WRITEFUNCTION, attempt.write)
    printed_before = getattr(sys, "last_value", None)
    failure: tuple[str, str] | None = None
    try:
        curl.perform()
    except pycurl.error as exc:
        escaped = getattr(sys, "last_value", None)
        if isinstance(escaped, _task_stop) and escaped is not printed_before:
            raise escaped from None  # raised as a callback was entered: pycurl printed it, we honour it
        if isinstance(attempt.error, _task_stop):
            raise attempt.error from None
        code = exc.args[0] if exc.args else -1
        if attempt.refused:
            failure = "BlockedAddress", BLOCKED_MESSAGE
        elif attempt.error is not None:
            failure = _classify(attempt.error, timeout)
        elif not attempt.headers_done:
            failure = _classify_curl(code, curl.getinfo(pycurl.OS_ERRNO), timeout)
        # Otherwise the final answer's headers arrived before the cap, the deadline or a reset cut the
        # body short: the receiver's verdict is known, the excerpt is what arrived.
    except _task_stop:
        raise  # run by pycurl as perform returned: the task must stop, this is no outcome
    except Exception as exc:  # noqa: BLE001 - every failure becomes a recorded outcome, never an exception
        failure = _classify(exc, timeout)
    finally:
        curl.setopt(pycurl.POSTFIELDS, b"")  # the handle outlives the attempt: hold no event body
    if failure is not None:
        kept.pop(key, None)  # whatever was learnt about this receiver is judged afresh next time
        return AttemptResult(False, None, _ms_since(started), *failure)
    status = curl.getinfo(pycurl.RESPONSE_CODE)
    if attempt.capped or not attempt.headers_done:
        kept.pop(key, None)
    else:
        kept[key] = _Kept(addresses, time.monotonic())
        while len(kept) > POOLS_PER_THREAD:
            kept.popitem(last=False)
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
