"""A real HTTP receiver on 127.0.0.1 (not a mock of requests), hooked directories, and a Celery worker."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.conf import settings as django_settings
from roster_client.webhooks import verify_signature

from directories.models import Directory
from directories.services import directory_create
from tests.actors import TEST_ACTOR


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Records every request. Behaviour is chosen by path:
    /ok 200, /fail 500, /redirect 302 to /ok, /slow (sleeps `slow_seconds`, then 200),
    /big (200 with a 200 KiB body), /stall-body (200 headers, then a body that never completes).
    `on_request`, when set, runs in the server's thread for every request before it is answered."""

    host: str
    port: int
    requests: list[Received] = field(default_factory=list)
    slow_seconds: float = 2.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    release: threading.Event = field(default_factory=threading.Event)
    on_request: Callable[[Received], None] | None = None

    def url(self, path: str = "/ok") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.requests) >= count:
                    return list(self.requests)
            time.sleep(0.02)
        with self.lock:
            return list(self.requests)

    def assert_signed(self, request: Received, secret: str) -> None:
        verify_signature(request.body, request.headers.get("Roster-Signature"), secret)


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The status line and headers go out in one write and the body in another; with Nagle on, the
        # body of every answer on a kept-alive connection waits for the client's delayed ACK (~40 ms),
        # which made this local receiver look like a slow one.
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            received = Received(self.path, {k: v for k, v in self.headers.items()}, body, time.monotonic())
            with receiver.lock:
                receiver.requests.append(received)
            if receiver.on_request is not None:
                receiver.on_request(received)
            path = self.path.split("?")[0]
            if path == "/fail":
                self._answer(500, b"internal receiver error")
            elif path == "/redirect":
                self.send_response(302)
                self.send_header("Location", "/ok")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif path == "/slow":
                receiver.release.wait(receiver.slow_seconds)
                self._answer(200, b"slow ok")
            elif path == "/big":
                self._answer(200, b"x" * (200 * 1024))
            elif path == "/stall-body":
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                self.wfile.write(b"partial")
                self.wfile.flush()
                receiver.release.wait(30)
            else:
                self._answer(200, b"thanks")

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(body)

    return Handler


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up at its deadline is expected here, not worth a traceback


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    holder: dict[str, Receiver] = {}
    server = _QuietServer(("127.0.0.1", 0), lambda *a: _handler(holder["r"])(*a))
    server.daemon_threads = True
    holder["r"] = Receiver("127.0.0.1", server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield holder["r"]
    holder["r"].release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def private_ok(settings):  # noqa: ANN001, ANN201
    """The receiver lives on loopback: allow it, as WEBHOOK_ALLOW_PRIVATE_NETWORKS does in development."""
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    return settings


def make_hooked_directory(
    receiver: Receiver, *, path: str = "/ok", log: bool = True, tenant: str = "acme"
) -> Directory:
    return directory_create(
        actor=TEST_ACTOR,
        data={
            "tenant": tenant,
            "product": "crm",
            "type": "okta-scim-v2",
            "webhook_url": receiver.url(path),
            "webhook_secret": f"whsec-{tenant}-0123456789abcdef",
            "log_webhook_events": log,
        },
    )


@pytest.fixture
def hooked_directory(db, receiver: Receiver, private_ok) -> Directory:  # noqa: ANN001
    return make_hooked_directory(receiver)


def closed_port() -> int:
    """A local port with nothing listening (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- a real Celery worker on the test broker ------------------------------------------------------


def use_broker(url: str | None) -> None:
    """Point the Celery app (and so webhooks.services.draining) at `url`, dropping pooled connections."""
    from config.celery import app
    from webhooks.services import draining

    draining._broker_down_until = 0.0
    app.conf.broker_url = url
    # The app keeps its connection pool and its producer pool (kombu's, for the URL it first used).
    # app.close() drops its reference to the connection pool without closing it (kombu keeps one pool
    # per broker URL in a global registry and would hand a closed pool back on the next switch to the
    # same URL); deleting the cached `amqp` drops the producer pool with it. Both are built again, for
    # the new URL, on the next publish.
    app.close()
    del app.amqp


def broker_reachable(url: str) -> bool:
    from kombu import Connection

    try:
        with Connection(url, connect_timeout=2) as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return True
    except Exception:
        return False


@pytest.fixture
def broker_url(settings) -> Iterator[str]:  # noqa: ANN001
    """The test broker (TEST_BROKER_URL). Under CI=true an unreachable broker fails the test."""
    url = django_settings.TEST_BROKER_URL
    if not broker_reachable(url):
        if getattr(django_settings, "CI", False):
            pytest.fail(f"CI=true but the test broker {url} is unreachable")
        pytest.skip(f"test broker {url} unreachable (allowed outside CI)")
    settings.CELERY_BROKER_URL = url
    use_broker(url)
    yield url
    use_broker(None)


class TaskCounter:
    """Counts finished `webhooks.drain` (and legacy `webhooks.deliver`) tasks (Celery's task_postrun
    signal), so a test can wait for the worker to be idle before it reads the database: on the
    shared-cache in-memory SQLite test database a read racing the worker's write fails with "table is
    locked" instead of waiting."""

    def __init__(self) -> None:
        self.count = 0
        self.condition = threading.Condition()

    def __call__(self, sender: Any = None, **kwargs: Any) -> None:
        if getattr(sender, "name", "") in ("webhooks.drain", "webhooks.deliver"):
            with self.condition:
                self.count += 1
                self.condition.notify_all()

    def wait_for(self, count: int, timeout: float = 20.0) -> bool:
        with self.condition:
            return self.condition.wait_for(lambda: self.count >= count, timeout=timeout)


@pytest.fixture
def delivered_tasks() -> Iterator[TaskCounter]:
    from celery.signals import task_postrun

    counter = TaskCounter()
    task_postrun.connect(counter, weak=False)
    yield counter
    task_postrun.disconnect(counter)


@pytest.fixture
def celery_worker(broker_url: str) -> Iterator[Any]:
    """A real Celery worker consuming from the test broker, in a thread of this process (so it shares
    the test database, including SQLite's shared in-memory one)."""
    from celery.contrib.testing.worker import start_worker

    from config.celery import app

    with app.connection_for_write() as conn:
        # Leftovers of an earlier, interrupted run would only be no-op claims, but keep runs clean.
        app.amqp.TaskConsumer(conn).purge()
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=15, loglevel="WARNING") as worker:
        yield worker


@contextlib.contextmanager
def single_drain_thread_on_sqlite() -> Iterator[None]:
    """On the shared-cache in-memory SQLite test database, concurrent writers fail rather than wait:
    run the in-process drain pool with one thread there (PostgreSQL runs keep the real pool size)."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    from webhooks.services import drain_pool

    if connection.vendor != "sqlite":
        yield
        return
    assert drain_pool.drain(timeout=15)
    previous = drain_pool._executor
    drain_pool._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="roster-webhook-test")
    try:
        yield
    finally:
        drain_pool.drain(timeout=15)
        drain_pool._executor.shutdown(wait=True)
        drain_pool._executor = previous


@contextlib.contextmanager
def running_worker() -> Iterator[None]:
    """A real Celery worker (solo pool) in this process, for the tests that go through the broker."""
    from celery.contrib.testing.worker import start_worker

    from config.celery import app

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=15, loglevel="WARNING"):
        yield
