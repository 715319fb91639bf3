"""Outbound HTTP against a real local receiver: outcomes, caps, deadline, and the connect-time SSRF check."""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass

import pytest

from core import outbound
from tests.webhooks.conftest import Receiver, closed_port
from webhooks import transport
from webhooks.transport import EXCERPT_CAP, post

HEADERS = {"Content-Type": "application/json"}


def test_2xx_is_delivered_with_status_latency_and_excerpt(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    result = post(receiver.url("/ok"), b"{}", HEADERS, 3)
    assert result.delivered is True
    assert result.status_code == 200
    assert result.response_excerpt == "thanks"
    assert result.error_class == ""
    assert 0 <= result.latency_ms < 3000
    assert len(receiver.requests) == 1
    assert receiver.requests[0].headers["Content-Type"] == "application/json"


def test_500_is_one_request_and_failed(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    result = post(receiver.url("/fail"), b"{}", HEADERS, 3)
    assert (result.delivered, result.status_code, result.error_class) == (False, 500, "HTTPStatus")
    assert result.response_excerpt == "internal receiver error"
    assert len(receiver.wait_for(2, timeout=0.5)) == 1


def test_redirect_is_not_followed_and_failed(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    result = post(receiver.url("/redirect"), b"{}", HEADERS, 3)
    assert (result.delivered, result.status_code, result.error_class) == (False, 302, "Redirect")
    requests = receiver.wait_for(2, timeout=0.5)
    assert [r.path for r in requests] == ["/redirect"]


def test_timeout_is_one_request_failed_within_the_deadline(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    receiver.slow_seconds = 10
    started = time.monotonic()
    result = post(receiver.url("/slow"), b"{}", HEADERS, 1)
    elapsed = time.monotonic() - started
    assert (result.delivered, result.status_code, result.error_class) == (False, None, "Timeout")
    assert elapsed < 2.5
    assert len(receiver.requests) == 1


def test_one_total_deadline_covers_a_body_that_never_ends(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    started = time.monotonic()
    result = post(receiver.url("/stall-body"), b"{}", HEADERS, 1)
    assert time.monotonic() - started < 2.5
    # The receiver answered 200 before stalling: its verdict is known, the excerpt is what arrived.
    assert result.delivered is True
    assert result.response_excerpt == "partial"


def test_one_total_deadline_covers_headers_dripped_a_byte_at_a_time(private_ok) -> None:  # noqa: ANN001
    """Every single read waits less than the deadline, but together they would go on for ever: the
    attempt still ends at its one deadline."""
    listener, port = _local_listener(1)
    stop = threading.Event()

    def drip() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            while not stop.wait(0.05):
                try:
                    conn.sendall(b"X")
                except OSError:
                    return
        listener.close()

    thread = threading.Thread(target=drip, daemon=True)
    thread.start()
    started = time.monotonic()
    result = post(f"http://127.0.0.1:{port}/hook", b"{}", HEADERS, 1)
    stop.set()
    thread.join(3)
    assert time.monotonic() - started < 2.5
    assert (result.delivered, result.status_code, result.error_class) == (False, None, "Timeout")


def test_the_request_leaves_in_one_write(private_ok) -> None:  # noqa: ANN001
    """A receiver that reads once, answers and closes sees the whole request: head and body."""
    listener, port = _local_listener(1)
    seen: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            time.sleep(0.1)  # the whole request has arrived, if it was sent at once
            seen.append(conn.recv(65536))
            conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    result = post(f"http://127.0.0.1:{port}/hook", b'{"id":"e-1"}', HEADERS, 3)
    thread.join(3)
    assert (result.delivered, result.status_code) == (True, 204)
    assert seen[0].startswith(b"POST /hook HTTP/1.1\r\n")
    assert seen[0].endswith(b'\r\n\r\n{"id":"e-1"}')


def test_connection_refused_is_failed() -> None:
    urlcheck_off = pytest.MonkeyPatch()
    urlcheck_off.setattr(transport, "private_networks_allowed", lambda: True)
    try:
        result = post(f"http://127.0.0.1:{closed_port()}/x", b"{}", HEADERS, 2)
    finally:
        urlcheck_off.undo()
    assert (result.delivered, result.error_class, result.error_message) == (
        False,
        "ConnectionRefused",
        "connection refused",
    )


def test_response_read_is_capped(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    result = post(receiver.url("/big"), b"{}", HEADERS, 3)
    assert result.delivered is True
    assert len(result.response_excerpt) == EXCERPT_CAP


def test_read_cap_stops_reading_at_64_kib(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    attempts: list[transport._Attempt] = []
    real_write = transport._Attempt.write

    def recording_write(self: transport._Attempt, chunk: bytes) -> int | None:
        if self not in attempts:
            attempts.append(self)
        return real_write(self, chunk)

    monkeypatch.setattr(transport._Attempt, "write", recording_write)
    result = post(receiver.url("/big"), b"{}", HEADERS, 3)
    assert result.delivered is True  # the status arrived before the cap cut the body
    (attempt,) = attempts
    assert sum(len(chunk) for chunk in attempt.body) == 64 * 1024
    assert attempt.capped is True  # 200 KiB were sent: the transfer stopped, the rest is never read


def test_a_connection_left_mid_answer_at_the_cap_is_not_reused(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    connects: list[str],
) -> None:
    assert post(receiver.url("/big"), b"{}", HEADERS, 3).delivered is True
    assert post(receiver.url("/ok"), b"{}", HEADERS, 3).delivered is True
    assert connects == ["127.0.0.1", "127.0.0.1"]


def test_environment_proxy_is_ignored(receiver: Receiver, private_ok, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    result = post(receiver.url("/ok"), b"{}", HEADERS, 3)
    assert result.delivered is True
    assert len(receiver.requests) == 1


# --- connect-time SSRF check -----------------------------------------------------------------------


def test_loopback_is_blocked_at_send_time_and_nothing_is_sent(receiver: Receiver, settings) -> None:  # noqa: ANN001
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    result = post(receiver.url("/ok"), b"{}", HEADERS, 3)
    assert (result.delivered, result.error_class, result.error_message) == (
        False,
        "BlockedAddress",
        "blocked: non-public address",
    )
    assert receiver.wait_for(1, timeout=0.3) == []


@pytest.mark.parametrize(
    "host",
    ["2130706433", "0177.0.0.1", "127.1", "[::ffff:127.0.0.1]", "localhost", "[::1]", "169.254.169.254"],
)
def test_each_literal_form_is_blocked_at_send_time(host: str, receiver: Receiver, settings) -> None:  # noqa: ANN001
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    result = post(f"http://{host}:{receiver.port}/ok", b"{}", HEADERS, 2)
    assert result.error_class == "BlockedAddress"
    assert "127" not in result.error_message and "169" not in result.error_message
    assert receiver.wait_for(1, timeout=0.2) == []


def test_dns_rebinding_is_caught_on_the_address_actually_connected(
    receiver: Receiver,
    settings,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The name resolves to a public address when saved, then to loopback when sent: refused."""
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    answers = iter(["93.184.216.34", "127.0.0.1"])

    def rebinding_getaddrinfo(host, port, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    monkeypatch.setattr(outbound.socket, "getaddrinfo", rebinding_getaddrinfo)
    url = f"http://hooks.rebind.example:{receiver.port}/ok"
    outbound.validate_webhook_url(url)  # first answer: public, accepted
    result = post(url, b"{}", HEADERS, 2)  # second answer: loopback, refused at connect time
    assert result.error_class == "BlockedAddress"
    assert receiver.wait_for(1, timeout=0.3) == []


def test_connects_to_the_checked_address_keeping_the_host_name(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []

    def fake_getaddrinfo(host, port, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        calls.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(outbound.socket, "getaddrinfo", fake_getaddrinfo)
    result = post(f"http://hooks.customer.example:{receiver.port}/ok", b"{}", HEADERS, 2)
    assert result.delivered is True
    assert calls == ["hooks.customer.example"]  # resolved once, by the guard
    assert receiver.requests[0].headers["Host"] == f"hooks.customer.example:{receiver.port}"


def _self_signed(tmp_path, name: str):  # noqa: ANN001, ANN202
    """A certificate for `name` (its own CA), written as cert.pem and key.pem under tmp_path."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return tmp_path / "cert.pem", tmp_path / "key.pem"


def _local_listener(backlog: int = 1) -> tuple[socket.socket, int]:
    """A listening socket on 127.0.0.1 and its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(backlog)
    return listener, listener.getsockname()[1]


@dataclass
class TlsReceiver:
    """One TLS connection on 127.0.0.1 with the given certificate: records the SNI it was sent and the
    request bytes, answers 200 "ok"."""

    port: int
    sni: list[str | None]
    requests: list[bytes]
    thread: threading.Thread


def _tls_receiver(cert, key) -> TlsReceiver:  # noqa: ANN001
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener, port = _local_listener(1)

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            with context.wrap_socket(conn, server_side=True) as tls:
                received.requests.append(tls.recv(65536))
                tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        except (ssl.SSLError, OSError):
            pass
        finally:
            conn.close()
            listener.close()

    received = TlsReceiver(port, [], [], threading.Thread(target=serve, daemon=True))
    context.sni_callback = lambda sock, server_name, ctx: received.sni.append(server_name)
    received.thread.start()
    return received


def _resolve_to_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        outbound.socket,
        "getaddrinfo",
        lambda host, p, *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", p))],
    )


def test_https_keeps_sni_and_verifies_the_certificate_for_the_host_name(
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
    tmp_path,  # noqa: ANN001
) -> None:
    """A TLS server with a self-signed certificate: the client must send SNI = host name (not the IP it
    connected to) and must refuse the untrusted certificate."""
    cert, key = _self_signed(tmp_path, "hooks.customer.example")
    server = _tls_receiver(cert, key)
    _resolve_to_loopback(monkeypatch)
    # A CA bundle named by the environment is not trusted (interop S4): the context has its own.
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
    result = post(f"https://hooks.customer.example:{server.port}/ok", b"{}", HEADERS, 3)
    server.thread.join(3)
    assert server.sni == ["hooks.customer.example"]
    assert (result.delivered, result.error_class) == (False, "TLSError")


# --- keep-alive reuse (one session per thread) -----------------------------------------------------


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every new connection the guard opens, by address; reused connections do not appear."""
    opened: list[str] = []
    real = transport._socket_for

    def counting(ip, *args):  # noqa: ANN001, ANN002, ANN202
        opened.append(str(ip))
        return real(ip, *args)

    monkeypatch.setattr(transport, "_socket_for", counting)
    return opened


def test_consecutive_events_to_one_receiver_reuse_the_connection(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    connects: list[str],
) -> None:
    for _ in range(3):
        assert post(receiver.url("/ok"), b"{}", HEADERS, 3).delivered is True
    assert len(receiver.requests) == 3
    assert connects == ["127.0.0.1"]


def test_a_reused_connection_is_judged_again_when_the_policy_changes(
    receiver: Receiver,
    settings,  # noqa: ANN001
    connects: list[str],
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    assert post(receiver.url("/ok"), b"{}", HEADERS, 3).delivered is True
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    result = post(receiver.url("/ok"), b"{}", HEADERS, 3)
    assert result.error_class == "BlockedAddress"
    assert len(receiver.wait_for(2, timeout=0.3)) == 1  # the pooled loopback connection was not used


def test_an_idle_connection_is_not_reused(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    connects: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(transport, "KEEPALIVE_IDLE", 0.0)
    assert post(receiver.url("/ok"), b"{}", HEADERS, 3).delivered is True
    time.sleep(0.01)
    assert post(receiver.url("/ok"), b"{}", HEADERS, 3).delivered is True
    assert connects == ["127.0.0.1", "127.0.0.1"]


def test_the_deadline_also_covers_a_reused_connection(receiver: Receiver, private_ok, connects: list[str]) -> None:  # noqa: ANN001
    assert post(receiver.url("/ok"), b"{}", HEADERS, 3).delivered is True
    receiver.slow_seconds = 10
    started = time.monotonic()
    result = post(receiver.url("/slow"), b"{}", HEADERS, 1)
    assert (result.delivered, result.error_class) == (False, "Timeout")
    assert time.monotonic() - started < 2.5
    assert connects == ["127.0.0.1"]  # the slow attempt ran on the kept connection
    # The connection the deadline cut is not reused: the next event opens a new, checked one.
    receiver.slow_seconds = 0
    assert post(receiver.url("/ok"), b"{}", HEADERS, 3).delivered is True
    assert connects == ["127.0.0.1", "127.0.0.1"]


def test_a_kept_connection_the_receiver_closed_is_replaced_before_sending(
    private_ok,  # noqa: ANN001
    connects: list[str],
) -> None:
    """A receiver that closes each connection after answering, without saying `Connection: close`:
    the next event must not be written into the dead connection (that attempt would fail, and it is
    never retried)."""
    listener, port = _local_listener(4)
    served: list[bytes] = []

    def serve() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            with conn:
                served.append(conn.recv(65536))
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}/hook"
    assert post(url, b"{}", HEADERS, 3).delivered is True
    time.sleep(0.2)  # the receiver's close has arrived
    second = post(url, b"{}", HEADERS, 3)
    thread.join(3)
    assert (second.delivered, second.response_excerpt) == (True, "ok")
    assert connects == ["127.0.0.1", "127.0.0.1"]
    assert len(served) == 2


# --- response framing ---------------------------------------------------------------------------------


class CannedServer:
    """Answers the n-th request with `answers[n]`; an answer ending in `CLOSE` is followed by a hang-up."""

    CLOSE = b"<close>"

    def __init__(self, answers: list[bytes]) -> None:
        self.answers = list(answers)
        self.connections = 0
        self.requests = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self.answers:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        with conn:
            while self.answers:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = next(
                    (int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")), 0
                )
                reader.read(length)
                self.requests += 1
                answer = self.answers.pop(0)
                conn.sendall(answer.removesuffix(self.CLOSE))
                if answer.endswith(self.CLOSE):
                    return

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"


@pytest.mark.parametrize(
    ("answer", "excerpt", "reused"),
    [
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1\r\n!\r\n0\r\n\r\n", "hello!", True),
        (b"HTTP/1.1 204 No Content\r\n\r\n", "", True),
        (b"HTTP/1.1 200 OK\r\ncontent-LENGTH: 3\r\nX-Folded: a\r\n  b\r\n\r\nabc", "abc", True),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", "ok", True),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok" + CannedServer.CLOSE, "ok", False),
        (b"HTTP/1.0 200 OK\r\n\r\nuntil close" + CannedServer.CLOSE, "until close", False),
        (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", "ok", True),
    ],
)
def test_each_response_framing_is_read_and_the_connection_kept_only_when_it_may_be(
    private_ok,  # noqa: ANN001
    connects: list[str],
    answer: bytes,
    excerpt: str,
    reused: bool,
) -> None:
    server = CannedServer([answer, b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext"])
    first = post(server.url(), b"{}", HEADERS, 3)
    assert (first.delivered, first.error_class, first.response_excerpt) == (True, "", excerpt)
    second = post(server.url(), b"{}", HEADERS, 3)
    assert (second.delivered, second.response_excerpt) == (True, "next")
    assert len(connects) == (1 if reused else 2)
    assert server.requests == 2


def test_a_garbled_status_line_is_a_failed_connection() -> None:
    server = CannedServer([b"SPDY/9 what\r\n\r\n" + CannedServer.CLOSE])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(transport, "private_networks_allowed", lambda: True)
        result = post(server.url(), b"{}", HEADERS, 3)
    assert (result.delivered, result.status_code, result.error_class) == (False, None, "ConnectionError")


# --- interruption and the connect-time guard --------------------------------------------------------


def test_a_soft_time_limit_signal_interrupts_an_attempt_that_is_waiting(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    """Celery's soft time limit is a signal whose handler raises SoftTimeLimitExceeded in the task's
    thread: it must end an attempt stuck waiting for an answer at once, not at the attempt's deadline,
    and leave `post` as that exception (the attempt's outcome is unknown, never a recorded failure)."""
    import signal

    from celery.exceptions import SoftTimeLimitExceeded

    def soft_limit(signum, frame):  # noqa: ANN001, ANN202
        raise SoftTimeLimitExceeded()

    receiver.slow_seconds = 10
    previous = signal.signal(signal.SIGUSR1, soft_limit)
    timer = threading.Timer(0.3, os.kill, args=(os.getpid(), signal.SIGUSR1))
    try:
        timer.start()
        started = time.monotonic()
        with pytest.raises(SoftTimeLimitExceeded):
            post(receiver.url("/slow"), b"{}", HEADERS, 8)
        assert time.monotonic() - started < 5  # well before the attempt's own deadline
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)
    assert len(receiver.requests) == 1


def test_a_soft_time_limit_raised_inside_a_callback_leaves_post(receiver: Receiver, private_ok, monkeypatch) -> None:  # noqa: ANN001
    from celery.exceptions import SoftTimeLimitExceeded

    real_write = transport._Attempt.write

    def write_then_interrupted(self: transport._Attempt, chunk: bytes) -> int | None:
        real_write(self, chunk)
        self.error = SoftTimeLimitExceeded()  # what the callback's own handler stores when it catches it
        return 0

    monkeypatch.setattr(transport._Attempt, "write", write_then_interrupted)
    with pytest.raises(SoftTimeLimitExceeded):
        post(receiver.url("/ok"), b"{}", HEADERS, 3)


def test_the_socket_guard_refuses_an_address_that_was_not_checked(
    receiver: Receiver,
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sender connects only where the guard's own resolution pointed it: a URL naming an address
    that the check did not see is refused before any socket is opened, and nothing is sent."""
    import ipaddress

    monkeypatch.setattr(transport, "resolve", lambda host, port: [ipaddress.ip_address("127.0.0.2")])
    result = post(receiver.url("/ok"), b"{}", HEADERS, 2)  # the URL names the literal 127.0.0.1
    assert (result.delivered, result.error_class, result.error_message) == (
        False,
        "BlockedAddress",
        "blocked: non-public address",
    )
    assert receiver.wait_for(1, timeout=0.3) == []


def test_what_goes_on_the_wire_is_the_event_and_nothing_of_the_clients_own(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    """Identity encoding, Roster's user agent, no `Expect: 100-continue` wait, no `Accept`, no
    credentials from a URL's user info, the path as configured and no fragment."""
    url = f"http://user:pw@127.0.0.1:{receiver.port}/a/../hook?x=1#frag"
    assert post(url, b'{"a":1}', HEADERS, 3).delivered is True
    (request,) = receiver.requests
    assert request.path == "/a/../hook?x=1"
    assert request.body == b'{"a":1}'
    assert request.headers["Accept-Encoding"] == "identity"
    assert request.headers["User-Agent"] == transport.USER_AGENT
    assert not {"Expect", "Accept", "Authorization"} & set(request.headers)


def test_a_header_with_a_line_break_is_refused_and_nothing_is_sent(receiver: Receiver, private_ok) -> None:  # noqa: ANN001
    result = post(receiver.url("/ok"), b"{}", {**HEADERS, "Roster-Event": "user.created\r\nX-Injected: 1"}, 3)
    assert (result.delivered, result.error_class) == (False, "Error")
    assert receiver.wait_for(1, timeout=0.3) == []


@pytest.mark.parametrize(
    ("certificate_name", "delivered"), [("hooks.customer.example", True), ("other.example", False)]
)
def test_https_to_the_checked_address_verifies_the_certificate_against_the_host_name(
    private_ok,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
    tmp_path,  # noqa: ANN001
    certificate_name: str,
    delivered: bool,
) -> None:
    """With the receiver's CA trusted, HTTPS to 127.0.0.1 (what the name resolved to) succeeds when the
    certificate is for the URL's host name, and fails when it is for another name: verification is for
    the name, not for the address connected to."""
    cert, key = _self_signed(tmp_path, certificate_name)
    server = _tls_receiver(cert, key)
    _resolve_to_loopback(monkeypatch)
    monkeypatch.setattr(transport.certifi, "where", lambda: str(cert))
    transport.connections_close()  # a new connection, made with this CA bundle
    try:
        result = post(f"https://hooks.customer.example:{server.port}/ok", b"{}", HEADERS, 3)
    finally:
        transport.connections_close()  # the next test's connections trust certifi's bundle again
    server.thread.join(3)
    assert server.sni == ["hooks.customer.example"]
    if delivered:
        assert (result.delivered, result.response_excerpt) == (True, "ok")
        assert b"Host: hooks.customer.example:" in server.requests[0]
    else:
        assert (result.delivered, result.error_class) == (False, "TLSError")
        assert b"".join(server.requests) == b""  # the request was never sent
