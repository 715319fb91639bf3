"""The load generator's HTTP client against real sockets: framing, keep-alive, closes and bad answers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import orjson
import pytest

from bench.httpclient import Client, ProtocolError

# A scripted server: each accepted connection gets `script(conn, request_bytes_reader)`.
Script = Callable[[socket.socket, "Reader"], None]


class Reader:
    """Reads one request (head + Content-Length body) at a time from a server-side socket."""

    def __init__(self, conn: socket.socket, requests: list[bytes]) -> None:
        self.conn = conn
        self.buf = b""
        self.requests = requests  # every request of the server, recorded before it is answered

    def request(self) -> bytes | None:
        while b"\r\n\r\n" not in self.buf:
            chunk = self.conn.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            rest += self.conn.recv(65536)
        self.buf = rest[length:]
        whole = head + b"\r\n\r\n" + rest[:length]
        self.requests.append(whole)
        return whole


@pytest.fixture
def server() -> Iterator[Callable[[Script], tuple[str, dict]]]:
    listeners: list[socket.socket] = []

    def start(script: Script) -> tuple[str, dict]:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        listeners.append(sock)
        seen: dict = {"connections": 0, "requests": [], "closed": threading.Semaphore(0)}

        def serve() -> None:
            while True:
                try:
                    conn, _ = sock.accept()
                except OSError:
                    return
                seen["connections"] += 1
                reader = Reader(conn, seen["requests"])
                try:
                    script(conn, reader)
                finally:
                    conn.close()
                    seen["closed"].release()

        threading.Thread(target=serve, daemon=True).start()
        return f"http://127.0.0.1:{sock.getsockname()[1]}", seen

    yield start
    for sock in listeners:
        sock.close()


def _answer(status: str, body: bytes, *extra: str) -> bytes:
    head = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def test_keep_alive_reuses_one_connection_and_sends_a_well_formed_request(server) -> None:
    def script(conn: socket.socket, reader: Reader) -> None:
        while reader.request() is not None:
            conn.sendall(_answer("201 Created", b'{"id":"u1"}', "Content-Type: application/json"))

    url, seen = server(script)
    client = Client(url + "/scim/v2", token="s3cret")
    first = client.request("POST", "/Users", {"userName": "ana"})
    second = client.request("GET", "/Users?filter=x")
    client.close()
    assert (first.status, first.json(), first.headers["content-type"]) == (201, {"id": "u1"}, "application/json")
    assert second.status == 201
    assert client.connects == 1 and seen["connections"] == 1
    post, get = seen["requests"]
    head, _, body = post.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /scim/v2/Users HTTP/1.1"
    assert "Authorization: Bearer s3cret" in lines
    assert "Content-Type: application/json" in lines
    assert f"Content-Length: {len(body)}" in lines
    assert orjson.loads(body) == {"userName": "ana"}
    assert get.split(b"\r\n")[0] == b"GET /scim/v2/Users?filter=x HTTP/1.1"
    assert b"Content-Length" not in get


def test_connection_close_makes_the_next_request_reconnect(server) -> None:
    def script(conn: socket.socket, reader: Reader) -> None:
        reader.request()
        conn.sendall(_answer("404 Not Found", b'{"status":"404"}', "Connection: close"))

    url, seen = server(script)
    client = Client(url)
    statuses = [client.request("GET", f"/Users/{i}").status for i in range(3)]
    assert statuses == [404, 404, 404]
    assert client.connects == 3 and seen["connections"] == 3


def test_chunked_body_with_extensions_and_trailers(server) -> None:
    def script(conn: socket.socket, reader: Reader) -> None:
        while reader.request() is not None:
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"5;ext=1\r\nhello\r\n"
                b"6\r\n world\r\n"
                b"0\r\nX-Trailer: yes\r\n\r\n"
            )

    url, seen = server(script)
    client = Client(url)
    assert client.request("GET", "/a").body == b"hello world"
    assert client.request("GET", "/b").body == b"hello world"  # framing left the connection usable
    assert seen["connections"] == 1


def test_body_until_close_and_no_body_statuses(server) -> None:
    def script(conn: socket.socket, reader: Reader) -> None:
        reader.request()
        conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
        reader.request()
        conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nall of it")

    url, _ = server(script)
    client = Client(url)
    assert (client.request("DELETE", "/Users/1").status, client.connects) == (204, 1)
    resp = client.request("GET", "/x")
    assert (resp.status, resp.body) == (200, b"all of it")
    assert client._sock is None  # read to the close, so the connection is gone


def test_a_connection_the_server_closed_while_idle_is_retried_once(server) -> None:
    def script(conn: socket.socket, reader: Reader) -> None:
        reader.request()
        conn.sendall(_answer("200 OK", b"{}"))
        # Keep-alive was offered, but the server then drops the idle connection (a keep-alive timeout).

    url, seen = server(script)
    client = Client(url)
    assert client.request("GET", "/one").status == 200
    assert seen["closed"].acquire(timeout=5)  # the server has closed its end before we reuse it
    assert client.request("POST", "/two", {"a": 1}).status == 200
    assert client.connects == 2
    assert [r.split(b"\r\n")[0] for r in seen["requests"]] == [b"GET /one HTTP/1.1", b"POST /two HTTP/1.1"]


def test_a_close_in_the_middle_of_a_body_is_an_error_not_a_short_body(server) -> None:
    def script(conn: socket.socket, reader: Reader) -> None:
        reader.request()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part")

    url, _ = server(script)
    with pytest.raises(ConnectionError):
        Client(url).request("GET", "/x")


@pytest.mark.parametrize(
    "answer",
    [
        b"SMTP 220 hello\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
    ],
)
def test_a_malformed_answer_is_a_protocol_error(server, answer: bytes) -> None:
    def script(conn: socket.socket, reader: Reader) -> None:
        reader.request()
        conn.sendall(answer)

    url, _ = server(script)
    with pytest.raises(ProtocolError):
        Client(url).request("GET", "/x")


def test_only_http_urls() -> None:
    with pytest.raises(ValueError, match="http://"):
        Client("https://example.com")


def test_host_header_brackets_an_ipv6_literal() -> None:
    assert "Host: [::1]:8080\r\n" in Client("http://[::1]:8080")._fixed
    assert "Host: 127.0.0.1:8080\r\n" in Client("http://127.0.0.1:8080")._fixed
