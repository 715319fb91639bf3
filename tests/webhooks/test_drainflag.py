"""The drain flag on the broker's Redis, set through redis-py from inside SCIM requests.

What goes over the wire (AUTH, SELECT, EVALSHA with its NOSCRIPT fallback, error replies, reconnects,
timeouts) against a fake server on 127.0.0.1 that records what it is sent; the flag's semantics, and a
kick getting through while another thread is blocked in BLPOP, against the real test broker."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import redis

from webhooks.drainflag import CLAIM_OR_WAKE, COMMAND_TIMEOUT, DrainFlag


@dataclass
class FakeRedis:
    """Answers each command from `replies` (by command name; +OK by default) and records it."""

    port: int
    commands: list[list[bytes]] = field(default_factory=list)
    # A list is answered in order, its last answer repeated; b"" sends nothing (a silent server).
    replies: dict[bytes, bytes | list[bytes]] = field(default_factory=dict)
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
                reply = fake.replies.get(command[0].upper(), b"+OK\r\n")
                if isinstance(reply, list):
                    reply = reply.pop(0) if len(reply) > 1 else reply[0]
                conn.sendall(reply)
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
    fake_redis.replies[b"EVALSHA"] = b":1\r\n"
    flags = DrainFlag(f"redis://app%40roster:p%3Ass@127.0.0.1:{fake_redis.port}/14")
    assert flags.claim_or_wake("d", "directory", 60) is True
    assert fake_redis.commands[:2] == [[b"AUTH", b"app@roster", b"p:ss"], [b"SELECT", b"14"]]
    assert fake_redis.commands[2][0] == b"EVALSHA"
    assert fake_redis.commands[2][2:] == [b"2", *(n.encode() for n in flags.names("d", "directory")), b"60000"]
    flags.claim_or_wake("d", "directory", 60)
    assert fake_redis.connections == 1  # the connection is kept


def test_no_auth_or_select_without_a_password_or_database(fake_redis: FakeRedis) -> None:
    DrainFlag(f"redis://127.0.0.1:{fake_redis.port}").release("d", "directory")
    DrainFlag(f"redis://:secret@127.0.0.1:{fake_redis.port}/0").release("d", "directory")
    flag, wake = (n.encode() for n in DrainFlag.names("d", "directory"))
    assert fake_redis.commands == [[b"DEL", flag, wake], [b"AUTH", b"secret"], [b"DEL", flag, wake]]


def test_the_script_is_sent_by_hash_and_loaded_when_the_server_lacks_it(fake_redis: FakeRedis) -> None:
    """EVALSHA first; on NOSCRIPT (a restarted Redis) the script is loaded and the kick goes through."""
    fake_redis.replies[b"EVALSHA"] = [b"-NOSCRIPT No matching script.\r\n", b":0\r\n"]
    fake_redis.replies[b"SCRIPT"] = b"$40\r\n" + b"0" * 40 + b"\r\n"
    flags = DrainFlag(f"redis://127.0.0.1:{fake_redis.port}")
    assert flags.claim_or_wake("d", "directory", 60) is False
    assert [c[0] for c in fake_redis.commands] == [b"EVALSHA", b"SCRIPT", b"EVALSHA"]
    assert fake_redis.commands[1][:2] == [b"SCRIPT", b"LOAD"]
    assert fake_redis.commands[1][2].decode() == CLAIM_OR_WAKE


def test_a_wake_up_or_none_is_read_from_blpop(fake_redis: FakeRedis) -> None:
    flags = DrainFlag(f"redis://127.0.0.1:{fake_redis.port}")
    fake_redis.replies[b"BLPOP"] = b"*-1\r\n"
    assert flags.wait_for_wake("d", "directory", 0.1) is False
    fake_redis.replies[b"BLPOP"] = b"*2\r\n$1\r\nk\r\n$1\r\n1\r\n"
    assert flags.wait_for_wake("d", "directory", 0.1) is True
    assert fake_redis.commands[0] == [b"BLPOP", flags.names("d", "directory")[1].encode(), b"0.1"]
    assert fake_redis.connections == 1  # the wait's connection goes back to the pool


def test_an_error_reply_raises_and_the_next_call_works(fake_redis: FakeRedis) -> None:
    flags = DrainFlag(f"redis://127.0.0.1:{fake_redis.port}")
    fake_redis.replies[b"EVALSHA"] = b"-NOPERM this user has no permissions\r\n"
    with pytest.raises(redis.ResponseError, match="no permissions"):
        flags.claim_or_wake("d", "directory", 60)
    fake_redis.replies[b"EVALSHA"] = b":1\r\n"
    assert flags.claim_or_wake("d", "directory", 60) is True


def test_a_connection_the_server_closed_is_replaced_before_the_next_command(fake_redis: FakeRedis) -> None:
    """redis-py checks a pooled connection before handing it out: a connection Redis closed while idle
    (a restart, a timeout) is replaced instead of failing the kick."""
    fake_redis.hang_up_after = 1
    flags = DrainFlag(f"redis://127.0.0.1:{fake_redis.port}")
    flags.release("d", "directory")
    time.sleep(0.05)
    flags.release("d", "directory")
    assert fake_redis.connections == 2
    assert len(fake_redis.commands) == 2


def test_an_unreachable_redis_fails_fast_without_retrying() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(redis.ConnectionError):
        DrainFlag(f"redis://127.0.0.1:{port}/1").claim_or_wake("d", "directory", 60)
    assert time.monotonic() - started < 1.5


def test_a_silent_redis_fails_within_the_command_timeout(fake_redis: FakeRedis) -> None:
    """A server that accepts and never answers: the kick gives up after COMMAND_TIMEOUT, not later."""
    fake_redis.replies[b"EVALSHA"] = b""  # no reply at all
    started = time.monotonic()
    with pytest.raises(redis.TimeoutError):
        DrainFlag(f"redis://127.0.0.1:{fake_redis.port}").claim_or_wake("d", "directory", 60)
    assert time.monotonic() - started < COMMAND_TIMEOUT + 1.5


def test_a_wait_longer_than_the_command_timeout_is_not_cut_by_it(fake_redis: FakeRedis) -> None:
    """BLPOP's own timeout may exceed the socket timeout: its read is given the wait plus the margin."""
    fake_redis.replies[b"BLPOP"] = b""  # the fake never answers: the read ends at the wait + COMMAND_TIMEOUT
    started = time.monotonic()
    with pytest.raises(redis.TimeoutError):
        DrainFlag(f"redis://127.0.0.1:{fake_redis.port}").wait_for_wake("d", "directory", 0.5)
    assert time.monotonic() - started >= 0.5 + COMMAND_TIMEOUT - 0.1


# --- the flag's semantics on the real broker --------------------------------------------------------


@pytest.mark.broker
def test_the_first_claim_sets_the_flag_and_later_ones_leave_one_wake_up(broker_url: str) -> None:
    flags = DrainFlag(broker_url)
    directory_id = str(uuid.uuid4())
    flag, wake = flags.names(directory_id, "directory")
    direct = redis.Redis.from_url(broker_url)
    try:
        assert flags.claim_or_wake(directory_id, "directory", 60) is True
        assert 0 < direct.pttl(flag) <= 60_000
        assert flags.claim_or_wake(directory_id, "directory", 60) is False
        assert flags.claim_or_wake(directory_id, "directory", 60) is False
        assert direct.llen(wake) == 1  # one wake-up is enough, however many kicks
        assert flags.wait_for_wake(directory_id, "directory", 0.1) is True
        started = time.monotonic()
        assert flags.wait_for_wake(directory_id, "directory", 0.2) is False
        assert 0.15 < time.monotonic() - started < 1.5
        direct.pexpire(flag, 1000)
        flags.refresh(directory_id, "directory", 60)
        assert direct.pttl(flag) > 50_000
        flags.release(directory_id, "directory")
        assert not direct.exists(flag, wake)
        assert flags.claim_or_wake(directory_id, "directory", 60) is True  # free again
    finally:
        direct.delete(flag, wake)


@pytest.mark.broker
def test_a_kick_from_another_thread_gets_through_while_a_drain_waits(broker_url: str) -> None:
    """A drain blocked in BLPOP must not hold up a kick from another thread of the same process: the
    kick wakes it, which it can only do on a connection of its own."""
    flags = DrainFlag(broker_url)
    directory_id = str(uuid.uuid4())
    flag, wake = flags.names(directory_id, "directory")
    woken: list[bool] = []
    try:
        assert flags.claim_or_wake(directory_id, "directory", 60) is True
        waiter = threading.Thread(target=lambda: woken.append(flags.wait_for_wake(directory_id, "directory", 5)))
        waiter.start()
        time.sleep(0.2)  # the waiter is blocked in BLPOP
        assert flags.claim_or_wake(directory_id, "directory", 60) is False
        waiter.join(10)
        assert woken == [True]
    finally:
        redis.Redis.from_url(broker_url).delete(flag, wake)
