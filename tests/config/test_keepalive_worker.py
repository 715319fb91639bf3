"""server.keepalive_worker under a real gunicorn, on raw sockets, with a small WSGI app (below).

Each server is a gunicorn master started in a subprocess; tests speak HTTP/1.1 byte by byte so that
what happens to the connection (kept, closed, reset) is what is checked.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKER = "server.keepalive_worker.KeepAliveWorker"


def app(environ: dict, start_response: object) -> list[bytes]:
    """The app under the worker: reports who served the request, and misbehaves on request."""
    path = environ["PATH_INFO"]
    if path == "/boom":
        raise RuntimeError("boom")
    if path == "/slow":
        time.sleep(float(environ.get("QUERY_STRING") or 0.2))
    body_length = 0 if path == "/unread" else len(environ["wsgi.input"].read())
    payload = json.dumps(
        {"path": path, "pid": os.getpid(), "client_port": environ["REMOTE_PORT"], "body_length": body_length}
    ).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
    return [payload]


class Server:
    def __init__(self, **options: object) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        settings = {"workers": 1, "worker-connections": 4, "keep-alive": 2, **options}
        command = [sys.executable, "-m", "gunicorn", "--worker-class", WORKER, "--bind", f"127.0.0.1:{self.port}"]
        for name, value in settings.items():
            command += [f"--{name}", str(value)]
        self.process = subprocess.Popen(
            [*command, "tests.config.test_keepalive_worker:app"],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                conn = self.connect()
                status, _, _ = exchange(conn, "GET", "/ready", headers={"Connection": "close"})
                conn.close()
                if status == 200:
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise AssertionError(f"gunicorn did not start: {self.process.stderr.read()[-2000:]}")

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            _, stderr = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, stderr = self.process.communicate()
        return stderr


@pytest.fixture
def server_factory() -> Iterator[type[Server]]:
    started: list[Server] = []

    def start(**options: object) -> Server:
        server = Server(**options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def server(server_factory) -> Server:  # noqa: ANN001
    return server_factory()


def request_bytes(method: str, path: str, *, body: bytes = b"", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: test"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def read_response(conn: socket.socket, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """One response (the server always sends Content-Length), read byte by byte off the socket: no
    read-ahead, so a pipelined response behind it stays on the socket for the next call."""
    with conn.makefile("rb", buffering=0) as raw:
        status_line = raw.readline()
        if not status_line:
            raise http.client.RemoteDisconnected("closed without a response")
        headers: dict[str, str] = {}
        while (line := raw.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = 0 if method == "HEAD" else int(headers.get("content-length", "0"))
        body = b""
        while len(body) < length and (chunk := raw.read(length - len(body))):
            body += chunk
    return int(status_line.split()[1]), headers, body


def exchange(conn: socket.socket, method: str, path: str, **kwargs: object) -> tuple[int, dict[str, str], bytes]:
    conn.sendall(request_bytes(method, path, **kwargs))
    return read_response(conn, method)


def closed_by_peer(conn: socket.socket, within: float = 5.0) -> bool:
    conn.settimeout(within)
    try:
        return conn.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_one_connection_carries_many_requests(server: Server) -> None:
    with server.connect() as conn:
        seen = []
        for i in range(5):
            status, headers, body = exchange(conn, "GET", f"/r{i}")
            assert status == 200
            assert headers["connection"] == "keep-alive"
            seen.append(json.loads(body))
    assert [s["path"] for s in seen] == [f"/r{i}" for i in range(5)]
    assert len({(s["pid"], s["client_port"]) for s in seen}) == 1


def test_a_client_asking_to_close_gets_the_response_then_the_close(server: Server) -> None:
    with server.connect() as conn:
        status, headers, _ = exchange(conn, "GET", "/x", headers={"Connection": "close"})
        assert (status, headers["connection"]) == (200, "close")
        assert closed_by_peer(conn)


def test_http_1_0_without_keep_alive_is_closed(server: Server) -> None:
    with server.connect() as conn:
        conn.sendall(b"GET /old HTTP/1.0\r\nHost: test\r\n\r\n")
        status, headers, _ = read_response(conn)
        assert (status, headers["connection"]) == (200, "close")
        assert closed_by_peer(conn)


def test_pipelined_requests_are_answered_in_order(server: Server) -> None:
    with server.connect() as conn:
        conn.sendall(request_bytes("GET", "/first") + request_bytes("POST", "/second", body=b"abc"))
        first = json.loads(read_response(conn)[2])
        second = json.loads(read_response(conn, "POST")[2])
    assert (first["path"], second["path"], second["body_length"]) == ("/first", "/second", 3)


def test_a_body_the_app_did_not_read_is_not_taken_for_the_next_request(server: Server) -> None:
    with server.connect() as conn:
        assert exchange(conn, "POST", "/unread", body=b"GET /smuggled HTTP/1.1\r\n\r\n")[0] == 200
        status, _, body = exchange(conn, "GET", "/after")
    assert (status, json.loads(body)["path"]) == (200, "/after")


def test_an_idle_connection_is_closed_after_the_keepalive_time(server_factory) -> None:  # noqa: ANN001
    server = server_factory(**{"keep-alive": 1})
    with server.connect() as conn:
        assert exchange(conn, "GET", "/x")[0] == 200
        assert closed_by_peer(conn, within=10)


def test_a_connection_that_sends_nothing_does_not_hold_up_another(server: Server) -> None:
    # Under `sync`, a worker that accepted a silent client waits on it; here the worker moves on.
    with server.connect() as silent, server.connect() as talker:
        silent.sendall(b"")
        status, _, body = exchange(talker, "GET", "/talk")
    assert (status, json.loads(body)["path"]) == (200, "/talk")


def test_a_full_worker_closes_an_idle_connection_for_a_waiting_client(server_factory) -> None:  # noqa: ANN001
    server = server_factory(**{"worker-connections": 1})
    with server.connect() as first, server.connect() as second:
        assert exchange(first, "GET", "/first")[0] == 200
        status, _, body = exchange(second, "GET", "/second")
        assert (status, json.loads(body)["path"]) == (200, "/second")
        assert closed_by_peer(first)


def test_a_full_worker_makes_room_for_a_waiting_client_while_its_client_is_busy(server_factory) -> None:  # noqa: ANN001
    server = server_factory(**{"worker-connections": 1})
    busy = server.connect()
    assert exchange(busy, "GET", "/start")[0] == 200
    stop = threading.Event()
    closes: list[str] = []

    def keep_busy() -> None:
        # Back-to-back requests: the connection is never idle long enough to be closed outright.
        while not stop.is_set():
            status, headers, _ = exchange(busy, "GET", "/busy")
            if headers["connection"] == "close":
                closes.append(headers["connection"])
                return

    thread = threading.Thread(target=keep_busy)
    thread.start()
    try:
        with server.connect() as waiting:
            status, _, body = exchange(waiting, "GET", "/waiting")
    finally:
        stop.set()
        thread.join(timeout=10)
        busy.close()
    assert (status, json.loads(body)["path"]) == (200, "/waiting")
    assert closes == ["close"]  # the busy client was told to reconnect, after a complete response


def test_an_app_error_is_a_500_and_the_worker_serves_on(server: Server) -> None:
    with server.connect() as conn:
        status, headers, _ = exchange(conn, "GET", "/boom")
        assert (status, headers["connection"]) == (500, "close")
        assert closed_by_peer(conn)
    with server.connect() as conn:
        assert exchange(conn, "GET", "/fine")[0] == 200


def test_the_last_request_before_a_restart_closes_its_connection(server_factory) -> None:  # noqa: ANN001
    server = server_factory(**{"max-requests": 3})  # the readiness probe was the first
    with server.connect() as conn:
        first = exchange(conn, "GET", "/one")
        last = exchange(conn, "GET", "/two")
        assert (first[1]["connection"], last[1]["connection"]) == ("keep-alive", "close")
        assert closed_by_peer(conn)
    deadline = time.monotonic() + 30
    while True:  # the master forks a new worker
        try:
            with server.connect() as conn:
                status, _, body = exchange(conn, "GET", "/new")
            break
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    assert status == 200 and json.loads(body)["pid"] != json.loads(first[2])["pid"]


def test_stopping_answers_the_request_in_flight_and_closes_idle_connections(server: Server) -> None:
    with server.connect() as idle, server.connect() as working:
        assert exchange(idle, "GET", "/idle")[0] == 200
        working.sendall(request_bytes("GET", "/slow?1.5"))
        time.sleep(0.3)  # the worker is inside /slow; the master passes SIGTERM on well within its 1.5 s
        server.process.send_signal(signal.SIGTERM)
        status, headers, body = read_response(working)
        assert (status, json.loads(body)["path"], headers["connection"]) == (200, "/slow", "close")
        assert closed_by_peer(idle)
    assert server.process.wait(timeout=30) == 0


def test_a_client_that_stalls_mid_request_loses_its_connection_not_the_worker(server_factory) -> None:  # noqa: ANN001
    # Reads and writes give up after 2 s (half the worker timeout); idle connections stay 10 s.
    server = server_factory(timeout=4, **{"keep-alive": 10})
    with server.connect() as first:
        pid = json.loads(exchange(first, "GET", "/first")[2])["pid"]
        with server.connect() as staller, server.connect() as other:
            staller.sendall(b"GET /never-finished HTTP/1.1\r\nHost: te")
            time.sleep(0.1)  # the worker is now reading the staller's request
            other.sendall(request_bytes("GET", "/other"))
            status, _, body = read_response(other)
            assert (status, json.loads(body)["path"]) == (200, "/other")
            assert closed_by_peer(staller)
        status, _, body = exchange(first, "GET", "/again")  # the same worker, the same connection
    assert (status, json.loads(body)["pid"]) == (200, pid)


def test_a_request_that_came_while_the_worker_was_busy_is_not_closed_as_idle(server_factory) -> None:  # noqa: ANN001
    server = server_factory(**{"keep-alive": 1})
    with server.connect() as slow, server.connect() as waiting:
        assert exchange(slow, "GET", "/warm")[0] == 200
        assert exchange(waiting, "GET", "/warm")[0] == 200
        slow.sendall(request_bytes("GET", "/slow?1.5"))  # longer than the keep-alive time
        time.sleep(0.2)
        waiting.sendall(request_bytes("GET", "/queued"))
        assert read_response(slow)[0] == 200
        status, _, body = read_response(waiting)
    assert (status, json.loads(body)["path"]) == (200, "/queued")


def test_a_worker_with_room_keeps_its_connection_and_takes_the_waiting_client_too(server: Server) -> None:
    # A client that waits in the listen queue while the worker is busy is accepted on the worker's next
    # turn; the kept connection is not given up for it, since the worker has room for both (a close would
    # only send this client to the back of the queue, and under load make every request a new connection).
    with server.connect() as kept:
        assert exchange(kept, "GET", "/first")[1]["connection"] == "keep-alive"
        kept.sendall(request_bytes("GET", "/slow?1.0"))
        time.sleep(0.2)
        with server.connect() as newcomer:
            newcomer.sendall(request_bytes("GET", "/newcomer"))
            status, headers, _ = read_response(kept)
            assert (status, headers["connection"]) == (200, "keep-alive")
            status, _, body = read_response(newcomer)
            assert (status, json.loads(body)["path"]) == (200, "/newcomer")
            status, _, body = exchange(kept, "GET", "/again")
            assert (status, json.loads(body)["path"]) == (200, "/again")


def test_clients_within_the_workers_room_all_stay_connected_under_load(server: Server) -> None:
    # Three clients on a worker with room for four, two of them connecting while it is busy with the
    # first one's slow request, then all sending back to back and reconnecting when told to close (as
    # HTTP clients do). None is ever told to close: a close would send its client to the listen queue,
    # where it would make the next response close another connection, and so on for every request.
    answers: list[str] = []
    lock = threading.Lock()

    def client(k: int) -> None:
        conn = server.connect()
        try:
            if k == 0:
                exchange(conn, "GET", "/slow?0.5")
            for i in range(30):
                status, headers, _ = exchange(conn, "GET", f"/c{k}/{i}")
                with lock:
                    answers.append(f"{status} {headers['connection']}")
                if headers["connection"] == "close":
                    conn.close()
                    conn = server.connect()
        finally:
            conn.close()

    first = threading.Thread(target=client, args=(0,))
    first.start()
    time.sleep(0.2)  # the worker is inside the slow request: the other two wait in the listen queue
    others = [threading.Thread(target=client, args=(k,)) for k in (1, 2)]
    for t in others:
        t.start()
    for t in [first, *others]:
        t.join(timeout=30)
    assert answers == ["200 keep-alive"] * 90
