"""A gunicorn worker that serves one request at a time, like `sync`, and keeps connections open.

Why it exists: identity providers send bursts of requests on one HTTP/1.1 connection, and gunicorn has
no worker that keeps it without handing each request to another thread. Gain: bench/README.md,
"Session 7 results", item 1 of "What changed this session" (against `sync`), and "Session 8 results",
item 3 (three kept connections per worker). Against maintained servers (bench/README.md, "Servers"):
gunicorn's `gthread` is slower; granian is faster but, without preload, heavier per worker, and it
answers an over-long request line with a bare 414 instead of the surface's error format. Delete this
worker when Roster moves to granian (2 workers fit the memory bound) after taking on the limit on
request-line and header size itself, when gunicorn's own classes match it in that comparison
(`bash bench/servers.sh`), or when a proxy in front holds the clients' connections.

gunicorn's `sync` worker closes the connection after every response, so a client that reuses its
connection (Okta, Entra, any HTTP/1.1 client) pays for a new TCP connection and a lingering close on
every request, and the worker sleeps and wakes up more often per request. `gthread` keeps
connections, but passes every request from its polling thread to a pool thread and back, and lets
connections pile onto whichever worker accepted them first.

This worker is one thread and one selector over the listening socket, the kept-alive connections and
gunicorn's wake-up pipe. When a connection has a request, the worker reads it, runs the WSGI app and
writes the response on that same thread, then leaves the connection in the selector for the next one.

When to keep a connection: while the worker has room for it (`worker_connections`), always; a client
then reuses its connection for as long as it likes (up to `keepalive` seconds idle), and a client that
waits in the listen queue meanwhile is accepted on the worker's next turn. Only a full worker gives a
connection up for a waiting client: its response says `Connection: close` (checked when the app is
done, before the headers go out) and the worker takes the next client from the queue, as `sync` does.
With one connection per worker that is the rule under load: 8 busy clients on 2 workers are served from
one shared queue in arrival order, each request on a new connection. With 4 per worker (the default)
the 8 clients all stay connected: faster, with longer write tails (bench/README.md, session 8). A
client whose worker is busy with another kept client's request waits for it, even while another worker
is idle, and a worker that is descheduled holds up every client it keeps.

Why only a full worker: when every worker with room also closed a connection whenever a client waited,
each close sent a client back to the listen queue, where the next worker to finish a request saw it
waiting and closed another: under steady load from 8 clients every request came on a new connection
(strace of a worker: one accept4, shutdown and close per request). Keeping them cut the web workers'
CPU per request by about a sixth (bench/README.md, "Session 13").

A worker holds at most `worker_connections` kept connections (default 4 in server/gunicorn.conf.py).
When it is full and a client waits, it makes room: it closes a connection that has been idle for
`IDLE_ENOUGH` seconds, or else the next response on a busy one says `Connection: close`. A kept
connection that stays idle is closed after `keepalive` seconds.

Like `sync`, a worker is busy for the whole of a request, slow clients included. Unlike `sync`, a
socket read or write that waits longer than half the worker timeout gives up that one connection
(`sync` would wait until the master kills the worker, and here that would drop the worker's other
connections too). Put a buffering proxy in front when clients cannot be trusted to send promptly.
"""

from __future__ import annotations

import errno
import os
import re
import select
import selectors
import socket
import ssl
import sys
import time
from datetime import datetime
from typing import Any

import orjson
from gunicorn import http, sock, util
from gunicorn.http import errors as http_errors
from gunicorn.http import wsgi
from gunicorn.http.errors import LimitRequestHeaders, LimitRequestLine
from gunicorn.http.unreader import SocketUnreader
from gunicorn.workers.base import Worker

from core.requestid import HEADER, request_id_new
from scim.protocol.errors import ERROR_SCHEMA

# A connection idle this long when a client is waiting is closed to make room: its client is between
# requests and will reconnect when it has one.
IDLE_ENOUGH = 0.05
# An unread request body is drained before the next request on the connection; a client that takes
# longer than this to send it loses the connection instead of holding the worker.
DRAIN_SECONDS = 5.0

_LISTENER = object()
_PIPE = object()


# --- the server's own limits, answered in the surface's format -----------------------------------------
#
# gunicorn refuses a request line longer than `limit_request_line` (414) and a header block past
# `limit_request_fields` / `limit_request_field_size` (431) before any Roster code runs, and renders the
# refusal as an HTML page. Identity providers and API clients parse JSON, so these answers are given in
# the format of the surface the request was meant for: SCIM error JSON under /api/scim/, the
# {data, error} envelope under /api/v1 and /auditlog, plain text elsewhere.
#
# Which surface is decided from the start of the request line. This worker keeps the first bytes it read
# for each request (`_HeadUnreader`), so it knows the path even when the line was cut at the limit (the
# path comes before the query string, where the length is). gunicorn's own `sync` and `gthread` workers
# do not keep them (server/gunicorn.conf.py hands them `error_handle` through `post_worker_init`), and
# then the answer is one JSON object carrying both formats' members, `schemas`/`status`/`detail` for a
# SCIM client and `data`/`error` for an envelope client, so either kind of client can read it.

# The same prefixes as the app's own not-found routes (config/urls.py).
_SCIM_PATH = re.compile(r"^/api/scim(?:/|$)")
_ENVELOPE_PATH = re.compile(r"^/(?:api/v1|auditlog)(?:/|$)")
HEAD_BYTES = 1024  # enough of a request line to hold any Roster path
_REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    414: "URI Too Long",
    417: "Expectation Failed",
    431: "Request Header Fields Too Large",
    501: "Not Implemented",
}
# The other requests gunicorn's parser refuses (a Content-Length that is not a number, a control byte
# or a non-ASCII byte in the request line or a header, a broken chunk...), with the status gunicorn gives
# them and a message that names the kind of fault without echoing the client's bytes (gunicorn's own
# page quotes them, and they may carry a credential or personal data). ConfigurationProblem is left to
# gunicorn: it is the server's fault, a 500 on purpose.
_PARSE_ERRORS: tuple[tuple[type[BaseException], int, str], ...] = (
    (http_errors.InvalidRequestLine, 400, "The request line is malformed."),
    (http_errors.InvalidRequestMethod, 400, "The request method is malformed."),
    (http_errors.InvalidHTTPVersion, 400, "The HTTP version is not supported."),
    (http_errors.ObsoleteFolding, 400, "A request header is folded over lines, which HTTP/1.1 forbids."),
    (http_errors.InvalidHeaderName, 400, "A request header name is malformed."),
    (http_errors.InvalidHeader, 400, "A request header is malformed (e.g. a Content-Length that is not a number)."),
    (http_errors.InvalidChunkSize, 400, "The chunked request body is malformed."),
    (http_errors.ChunkMissingTerminator, 400, "The chunked request body is malformed."),
    (http_errors.InvalidChunkExtension, 400, "The chunked request body is malformed."),
    (http_errors.InvalidProxyLine, 400, "The PROXY protocol line is malformed."),
    (http_errors.InvalidProxyHeader, 400, "The PROXY protocol header is malformed."),
    (http_errors.InvalidSchemeHeaders, 400, "The request's scheme headers contradict each other."),
    (http_errors.ForbiddenProxyRequest, 403, "PROXY protocol requests are not accepted from this address."),
    (http_errors.ExpectationFailed, 417, "The Expect header's expectation cannot be met."),
    (http_errors.UnsupportedTransferCoding, 501, "The request's Transfer-Encoding is not supported."),
)


def request_target(head: bytes | None) -> str | None:
    """The path of the request line at the start of `head`, or None when there is none to read."""
    if not head:
        return None
    line = head[:HEAD_BYTES].split(b"\r\n", 1)[0]
    parts = line.split(b" ", 2)
    if len(parts) < 2:
        return None
    target = parts[1].decode("latin-1")
    if "://" in target:  # absolute form: http://host/path
        target = "/" + target.split("://", 1)[1].partition("/")[2]
    return target.split("?", 1)[0]


def surface_of(path: str | None) -> str | None:
    """ "scim", "envelope" or "text" for a known path; None when the path is unknown."""
    if path is None:
        return None
    if _SCIM_PATH.match(path):
        return "scim"
    if _ENVELOPE_PATH.match(path):
        return "envelope"
    return "text"


def limit_error(exc: BaseException, cfg: Any) -> tuple[int, str] | None:
    """(status, message) for a request refused by one of the server's limits or by its parser; None for
    other errors (gunicorn answers those itself)."""
    if isinstance(exc, LimitRequestLine):
        return 414, f"The request line is longer than {cfg.limit_request_line} bytes."
    if isinstance(exc, LimitRequestHeaders):
        return 431, (
            f"The request headers are too large: at most {cfg.limit_request_fields} fields of at most "
            f"{cfg.limit_request_field_size} bytes each."
        )
    for kind, status, message in _PARSE_ERRORS:
        if isinstance(exc, kind):
            return status, message
    return None


def error_response(status: int, message: str, path: str | None, request_id: str = "") -> bytes:
    """The whole HTTP response (it closes the connection) for `status` in the format of `path`'s surface,
    with the `X-Request-Id` its log line names (every answer carries one, contract §7.1)."""
    surface = surface_of(path)
    scim = {"schemas": [ERROR_SCHEMA], "status": str(status), "detail": message}
    envelope = {"data": None, "error": {"message": message, "code": status}}
    if surface == "scim":
        content_type, body = "application/scim+json", orjson.dumps(scim)
    elif surface == "envelope":
        content_type, body = "application/json", orjson.dumps(envelope)
    elif surface == "text":
        content_type, body = "text/plain; charset=utf-8", message.encode() + b"\n"
    else:
        content_type, body = "application/json", orjson.dumps({**scim, **envelope})
    request_id = request_id or request_id_new()
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Bad Request')}\r\nConnection: close\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n{HEADER}: {request_id}\r\n\r\n"
    )
    return head.encode("latin-1") + body


def error_handle(
    worker: Worker, req: Any, client: Any, addr: Any, exc: BaseException, head: bytes | None = None
) -> None:
    """A worker's `handle_error`: the server's limits and parse refusals answered in format, anything else
    as gunicorn does."""
    refused = limit_error(exc, worker.cfg)
    if refused is None:
        Worker.handle_error(worker, req, client, addr, exc)
        return
    status, message = refused
    # The client's X-Request-Id cannot be trusted to have been parsed: a new id ties answer and line.
    request_id = request_id_new()
    # One line, as gunicorn logs it; never the request line itself (it may carry personal data).
    worker.log.warning(
        "Invalid request from ip=%s: %s (%d) request_id=%s", (addr or ("",))[0], type(exc).__name__, status, request_id
    )
    try:
        util.write_nonblock(client, error_response(status, message, request_target(head), request_id))
    except Exception:  # noqa: BLE001 - the client is gone: nothing to tell it
        worker.log.debug("Failed to send error message.")


class _HeadUnreader(SocketUnreader):
    """gunicorn's socket reader, keeping the first chunk read for the current request (`head`), so an
    error raised while parsing its request line can still name the path."""

    def __init__(self, sock: Any) -> None:
        super().__init__(sock)
        self.head: bytes | None = None

    def chunk(self, size_hint: int | None = None) -> bytes:
        data = super().chunk(size_hint)
        if self.head is None:
            self.head = data
        return data

    def request_start(self) -> None:
        """A new request starts: its head is what is already buffered (pipelined), else the next read."""
        self.head = self.buf.getvalue() or None


class _Connection:
    __slots__ = ("addr", "fd", "idle_since", "listener", "parser", "sock", "unreader")

    def __init__(self, client: Any, addr: Any, listener: Any, cfg: Any) -> None:
        self.sock = client
        self.fd = client.fileno()
        self.addr = addr
        self.listener = listener
        self.parser = http.get_parser(cfg, client, addr)
        self.parser.unreader = self.unreader = _HeadUnreader(client)
        self.idle_since = time.monotonic()

    def has_buffered_request(self) -> bool:
        """Whether bytes of a pipelined request were already read off the socket (select() cannot see them)."""
        buffered = self.parser.unreader.buf
        buffered.seek(0, os.SEEK_END)
        return buffered.tell() > 0


def _readable(sock: Any) -> bool:
    """Whether `sock` can be read now, without waiting (poll: select() cannot take descriptors past 1023)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def _has_data(client: Any) -> bool:
    """Whether a request (or the client's close) is waiting on the socket.

    A connection whose request arrived while the worker was busy with others has been "idle" for as
    long as that took; closing it then would throw its request away (and reset the connection)."""
    try:
        return _readable(client) and client.recv(1, socket.MSG_PEEK) != b""  # b"": the client closed
    except (OSError, ValueError):
        return False  # broken or closed: close it


def _client_waiting(listener: Any) -> bool:
    """Whether a client waits in the listen queue (for this or any other worker)."""
    try:
        return _readable(listener)
    except (OSError, ValueError):
        return False


class KeepAliveWorker(Worker):
    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        error_handle(self, req, client, addr, exc)

    def init_process(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.connections: dict[int, _Connection] = {}
        self.ready: list[_Connection] = []
        self.accepting = False
        self.room_wanted = False  # full, and a client waits: close the first connection that goes idle
        self.max_connections = max(1, int(self.cfg.worker_connections))
        super().init_process()  # runs the loop

    def run(self) -> None:
        for listener in self.sockets:
            listener.setblocking(False)
        self.selector.register(self.PIPE[0], selectors.EVENT_READ, _PIPE)
        while self.alive:
            self.notify()
            if self.room_wanted:
                self._make_room()
            # Watch the listener while there is room, and while full until a client is seen waiting
            # (then a response or an idle connection makes room; watching would only spin).
            self._accept_enable(not self._full() or not self.room_wanted)
            self._turn(0.0 if self.ready else self._wait_timeout())
            self._close_idle(time.monotonic() - self.cfg.keepalive)
            if self.ppid != os.getppid():
                self.log.info("Parent changed, shutting down: %s", self)
                self.alive = False
        self._shutdown()

    def _turn(self, timeout: float) -> None:
        """Wait up to `timeout` seconds, then serve one request on each connection that has one."""
        try:
            events = self.selector.select(timeout)
        except OSError as error:
            if error.errno != errno.EINTR:
                raise
            events = []
        ready, self.ready = self.ready, []
        for key, _ in events:
            if key.data is _PIPE:
                os.read(self.PIPE[0], 4096)  # a signal woke us; the handler has done its part
            elif key.data is _LISTENER:
                self._accept_or_make_room(key.fileobj)
            else:
                ready.append(key.data)
        for connection in ready:
            self._serve(connection)

    def _wait_timeout(self) -> float:
        timeout = float(self.timeout or 0.5)  # the heartbeat must be written at least this often
        if self.room_wanted:
            timeout = min(timeout, IDLE_ENOUGH)
        if self.connections:
            oldest = min(c.idle_since for c in self.connections.values())
            timeout = min(timeout, max(0.0, oldest + self.cfg.keepalive - time.monotonic()))
        return timeout

    def _accept_enable(self, enabled: bool) -> None:
        if enabled == self.accepting:
            return
        for listener in self.sockets:
            if enabled:
                self.selector.register(listener, selectors.EVENT_READ, _LISTENER)
            else:
                self.selector.unregister(listener)
        self.accepting = enabled

    def _full(self) -> bool:
        return len(self.connections) >= self.max_connections

    def _accept_or_make_room(self, listener: Any) -> None:
        if self._full():
            self._make_room()
            return
        try:
            client, addr = listener.accept()
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return  # another worker took it
        # Blocking, with a bound on each read and write (self.timeout is half gunicorn's worker timeout).
        client.settimeout(float(self.timeout or 15.0))
        util.close_on_exec(client)
        if self.cfg.is_ssl:
            try:
                client = sock.ssl_wrap_socket(client, self.cfg)
            except (OSError, ssl.SSLError) as error:
                self.log.debug("TLS handshake failed: %s", error)
                client.close()
                return
        connection = _Connection(client, addr, listener, self.cfg)
        self.connections[connection.fd] = connection
        self.selector.register(client, selectors.EVENT_READ, connection)

    def _make_room(self) -> None:
        """This worker is full and a client may be waiting: close a connection idle for `IDLE_ENOUGH`.

        Until one is, `room_wanted` stays set: the loop comes back here every `IDLE_ENOUGH` seconds,
        and a response on a busy connection closes it anyway (`_client_waiting`).
        """
        if not self._full() or not any(map(_client_waiting, self.sockets)):
            self.room_wanted = False  # room already, or another worker took the client
            return
        self.room_wanted = True
        now = time.monotonic()
        idle = sorted(
            (c for c in self.connections.values() if c not in self.ready and now - c.idle_since >= IDLE_ENOUGH),
            key=lambda c: c.idle_since,
        )
        for connection in idle:
            if not _has_data(connection.sock):
                self._close(connection)
                self.room_wanted = False
                return

    def _close_idle(self, idle_before: float) -> None:
        for connection in [c for c in self.connections.values() if c.idle_since <= idle_before]:
            if connection not in self.ready and not _has_data(connection.sock):
                self._close(connection)

    def _close(self, connection: _Connection, *, graceful: bool = False) -> None:
        """Forget a connection and close it.

        `graceful` after a response: a lingering close, so that a request body the app left unread
        does not make the kernel reset the connection before the client has read the response. An
        idle connection has nothing in flight and is closed at once, which does not keep the worker
        waiting on the client's side of the close.
        """
        if self.connections.pop(connection.fd, None) is None:
            return
        try:
            self.selector.unregister(connection.sock)
        except (KeyError, ValueError):
            pass
        if graceful:
            util.close_graceful(connection.sock)
        else:
            connection.sock.close()

    def _shutdown(self) -> None:
        """Answer requests already sent (with Connection: close, since the worker is stopping), close the rest."""
        self._accept_enable(False)
        if self.connections:
            self._turn(0.0)
        for connection in list(self.connections.values()):
            self._close(connection)
        self.selector.close()

    def _serve(self, connection: _Connection) -> None:
        if self.connections.get(connection.fd) is not connection:
            return  # closed earlier in this turn (its descriptor may already be another connection's)
        keep = False
        answered = False  # a response (or an error page) went out: close gracefully after it
        req = None
        connection.unreader.request_start()
        try:
            req = next(connection.parser)
            keep = self._handle_request(connection, req)
            answered = True
            keep = keep and connection.parser.finish_body(deadline=time.monotonic() + DRAIN_SECONDS)
        except http.errors.NoMoreData as error:
            self.log.debug("Ignored premature client disconnection. %s", error)
        except StopIteration as error:
            self.log.debug("Closing connection. %s", error)
        except ssl.SSLError as error:
            if error.args[0] != ssl.SSL_ERROR_EOF:
                self.log.debug("Error processing SSL request.")
                self.handle_error(req, connection.sock, connection.addr, error)
                answered = True
        except TimeoutError:
            self.log.debug("Closing a connection that stalled for %ss.", self.timeout)
        except OSError as error:
            if error.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                self.log.exception("Socket error processing request.")
        except BaseException as error:  # noqa: BLE001 - as sync: a 400 or 500 to the client, then close
            error_handle(self, req, connection.sock, connection.addr, error, connection.unreader.head)
            answered = True
        if not keep:
            self._close(connection, graceful=answered)
            return
        connection.idle_since = time.monotonic()
        if connection.has_buffered_request():
            self.ready.append(connection)

    def _handle_request(self, connection: _Connection, req: Any) -> bool:
        """Run the app for one request; whether the connection may carry another."""
        environ: dict[str, Any] = {}
        resp = None
        try:
            self.cfg.pre_request(self, req)
            request_start = datetime.now()
            resp, environ = wsgi.create(
                req, connection.sock, connection.addr, connection.listener.getsockname(), self.cfg
            )
            self.nr += 1
            if self.nr >= self.max_requests and self.alive:
                self.log.info("Autorestarting worker after current request.")
                self.alive = False
            if not self.alive or not self.cfg.keepalive:
                resp.force_close()
            respiter = self.wsgi(environ, resp.start_response)
            # Decided now, when the app is done and the headers are not out yet: stopping (a signal
            # while the app ran), or full while a client waits for a worker (module docstring).
            if not self.alive or (self._full() and _client_waiting(connection.listener)):
                resp.force_close()
            try:
                if isinstance(respiter, environ["wsgi.file_wrapper"]):
                    resp.write_file(respiter)
                else:
                    for item in respiter:
                        resp.write(item)
                resp.close()
            finally:
                self.log.access(resp, req, environ, datetime.now() - request_start)
                if hasattr(respiter, "close"):
                    respiter.close()
            return not resp.should_close()
        except OSError:
            util.reraise(*sys.exc_info())
        except (Exception, SystemExit):
            if resp and resp.headers_sent:
                # The response has started: a 500 written now would corrupt it.
                self.log.exception("Error handling request")
                raise StopIteration() from None
            raise
        finally:
            try:
                self.cfg.post_request(self, req, environ, resp)
            except Exception:
                self.log.exception("Exception in post_request hook")
