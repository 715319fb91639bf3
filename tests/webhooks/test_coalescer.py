"""The drain flag on the broker's Redis, and the small RESP client that sets it from inside SCIM requests.

Protocol details (AUTH, SELECT, error replies, reconnects) against a fake server on 127.0.0.1 that
records what it is sent; the flag's semantics against the real test broker."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import redis

from webhooks.coalescer import Coalescer, RespClient, RespError


@dataclass
class FakeRedis:
    """Answers each command from `replies` (by command name; +OK by default) and records it."""

    port: int
    commands: list[list[bytes]] = field(default_factory=list)
    replies: dict[bytes, bytes] = field(default_factory=dict)
    connections: int = 0
    hang_up_after: int | None = None  # close every connection after this many commands


def _read_command(reader) -> list[bytes] | None:  # noqa: ANN001
    header = reader.readline()
    if not header:
        return None
    count = int(header[1:-2])
    args = []
    for _ in range(count):
        size = int(reader.readline()[1:-2])
        args.append(reader.read(size + 2)[:-2])
    return args


@pytest.fixture
def fake_redis() -> Iterator[FakeRedis]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    fake = FakeRedis(listener.getsockname()[1])

    def serve(conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        served = 0
        with conn:
            while (command := _read_command(reader)) is not None:
                fake.commands.append(command)
                conn.sendall(fake.replies.get(command[0].upper(), b"+OK\r\n"))
                served += 1
                if fake.hang_up_after is not None and served >= fake.hang_up_after:
                    return

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            fake.connections += 1
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield fake
    listener.close()


def test_the_url_gives_user_password_and_database(fake_redis: FakeRedis) -> None:
    fake_redis.replies[b"EVAL"] = b":1\r\n"
    client = RespClient(f"redis://app%40roster:p%3Ass@127.0.0.1:{fake_redis.port}/14")
    assert client.call("EVAL", "return 1", 0) == 1
    assert fake_redis.commands[:2] == [[b"AUTH", b"app@roster", b"p:ss"], [b"SELECT", b"14"]]
    assert fake_redis.commands[2][0] == b"EVAL"
    client.call("EVAL", "return 1", 0)
    assert fake_redis.connections == 1  # the connection is kept


def test_no_auth_or_select_without_a_password_or_database(fake_redis: FakeRedis) -> None:
    RespClient(f"redis://127.0.0.1:{fake_redis.port}").call("PING")
    RespClient(f"redis://:secret@127.0.0.1:{fake_redis.port}/0").call("PING")
    assert fake_redis.commands == [[b"PING"], [b"AUTH", b"secret"], [b"PING"]]


def test_replies_of_each_kind_are_read(fake_redis: FakeRedis) -> None:
    client = RespClient(f"redis://127.0.0.1:{fake_redis.port}")
    fake_redis.replies[b"BLPOP"] = b"*-1\r\n"
    assert client.call("BLPOP", "k", "0.1") is None
    fake_redis.replies[b"BLPOP"] = b"*2\r\n$1\r\nk\r\n$1\r\n1\r\n"
    assert client.call("BLPOP", "k", "0.1") == [b"k", b"1"]
    fake_redis.replies[b"GET"] = b"$-1\r\n"
    assert client.call("GET", "k") is None
    fake_redis.replies[b"DEL"] = b":2\r\n"
    assert client.call("DEL", "a", "b") == 2


def test_an_error_reply_raises_and_the_next_call_reconnects(fake_redis: FakeRedis) -> None:
    client = RespClient(f"redis://127.0.0.1:{fake_redis.port}")
    fake_redis.replies[b"EVAL"] = b"-NOPERM this user has no permissions\r\n"
    with pytest.raises(RespError, match="NOPERM"):
        client.call("EVAL", "return 1", 0)
    del fake_redis.replies[b"EVAL"]
    assert client.call("EVAL", "return 1", 0) == b"OK"
    assert fake_redis.connections == 2


def test_a_connection_the_server_closed_fails_once_then_reconnects(fake_redis: FakeRedis) -> None:
    fake_redis.hang_up_after = 1
    client = RespClient(f"redis://127.0.0.1:{fake_redis.port}")
    assert client.call("PING") == b"OK"
    time.sleep(0.05)
    with pytest.raises((ConnectionError, OSError)):
        client.call("PING")
    assert client.call("PING") == b"OK"
    assert fake_redis.connections == 2


def test_an_unreachable_redis_fails_fast() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(OSError):
        RespClient(f"redis://127.0.0.1:{port}/1").call("PING")
    assert time.monotonic() - started < 1.5


def test_each_thread_has_its_own_connection(fake_redis: FakeRedis) -> None:
    """A drain blocked in BLPOP must not hold up a kick from another thread of the same process."""
    client = RespClient(f"redis://127.0.0.1:{fake_redis.port}")
    client.call("PING")
    thread = threading.Thread(target=client.call, args=("PING",))
    thread.start()
    thread.join(5)
    assert fake_redis.connections == 2


# --- the flag's semantics on the real broker --------------------------------------------------------


@pytest.mark.broker
def test_the_first_claim_sets_the_flag_and_later_ones_leave_one_wake_up(broker_url: str) -> None:
    coalescer = Coalescer(broker_url)
    directory_id = str(uuid.uuid4())
    flag, wake = coalescer.names(directory_id, "directory")
    direct = redis.Redis.from_url(broker_url)
    try:
        assert coalescer.claim_or_wake(directory_id, "directory", 60) is True
        assert 0 < direct.pttl(flag) <= 60_000
        assert coalescer.claim_or_wake(directory_id, "directory", 60) is False
        assert coalescer.claim_or_wake(directory_id, "directory", 60) is False
        assert direct.llen(wake) == 1  # one wake-up is enough, however many kicks
        assert coalescer.wait_for_wake(directory_id, "directory", 0.1) is True
        started = time.monotonic()
        assert coalescer.wait_for_wake(directory_id, "directory", 0.2) is False
        assert 0.15 < time.monotonic() - started < 1.5
        direct.pexpire(flag, 1000)
        coalescer.refresh(directory_id, "directory", 60)
        assert direct.pttl(flag) > 50_000
        coalescer.release(directory_id, "directory")
        assert not direct.exists(flag, wake)
        assert coalescer.claim_or_wake(directory_id, "directory", 60) is True  # free again
    finally:
        direct.delete(flag, wake)
