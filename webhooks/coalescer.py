"""The per-directory drain flag and wake-up list on the broker's Redis (see webhooks.dispatch).

Each (directory, target) key has, while a drain owns it, `<prefix>:drain:<dir>:<target>` (the flag, with
an expiry) and `<prefix>:drain:<dir>:<target>:wake` (a list holding at most one wake-up).

The client is a few lines of RESP2 over one socket per thread rather than redis-py: the kick runs inside
every SCIM write, and between requests (cold caches) redis-py's command path measured 0.35-0.45 ms of
CPU per command against 0.09 ms for the same EVAL written straight to a socket. It speaks only what
is used here: EVAL, PEXPIRE, BLPOP and DEL, plus AUTH and SELECT from the broker URL (`redis://` or
`rediss://` with certificate verification). Any error closes the socket; the next call reconnects.
"""

from __future__ import annotations

import os
import socket
import ssl
import threading
from typing import Any
from urllib.parse import unquote, urlsplit

KEY_PREFIX = "roster:webhooks"
CONNECT_TIMEOUT = 1.0  # seconds; the kick runs inside the SCIM request
COMMAND_TIMEOUT = 2.0

# KEYS[1] the drain flag, KEYS[2] its wake-up list; ARGV[1] the flag's expiry in ms.
# 1: the flag was free and is now set (publish a drain); 0: a drain owns it and has been woken.
CLAIM_OR_WAKE = """
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return 1 end
if redis.call('LLEN', KEYS[2]) == 0 then
  redis.call('RPUSH', KEYS[2], '1')
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
return 0
"""


class RespError(Exception):
    """An error reply from Redis, or a reply this client does not understand."""


def _pack(args: tuple[Any, ...]) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


class RespClient:
    """One connection per thread (a blocking BLPOP must not hold up another thread's kick) and per
    process (a forked child opens its own instead of sharing its parent's socket)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "localhost"
        self.port = parts.port or 6379
        path = (parts.path or "/").strip("/")
        self.db = int(path) if path else 0
        self.username = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password is not None else None
        self.tls = parts.scheme == "rediss"
        self._local = threading.local()

    def call(self, *args: Any, timeout: float = COMMAND_TIMEOUT) -> Any:
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is None or local.pid != os.getpid():
            conn = local.conn = self._connect()
            local.pid = os.getpid()
        sock, reader = conn
        try:
            if timeout != COMMAND_TIMEOUT:
                sock.settimeout(timeout)
            sock.sendall(_pack(args))
            reply = _read_reply(reader)
            if timeout != COMMAND_TIMEOUT:
                sock.settimeout(COMMAND_TIMEOUT)
            return reply
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None and self._local.pid == os.getpid():
            try:
                conn[0].close()
            except OSError:
                pass

    def _connect(self) -> tuple[socket.socket, Any]:
        sock = socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)
            sock.settimeout(COMMAND_TIMEOUT)
            reader = sock.makefile("rb")
            if self.password is not None:
                credentials = (self.username, self.password) if self.username else (self.password,)
                sock.sendall(_pack(("AUTH", *credentials)))
                _read_reply(reader)
            if self.db:
                sock.sendall(_pack(("SELECT", self.db)))
                _read_reply(reader)
        except BaseException:
            sock.close()
            raise
        return sock, reader


def _read_reply(reader: Any) -> Any:
    line = reader.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError("connection closed by Redis")
    kind, rest = line[:1], line[1:-2]
    if kind == b":":
        return int(rest)
    if kind == b"+":
        return rest
    if kind == b"-":
        raise RespError(rest.decode("utf-8", "replace"))
    if kind == b"$":
        size = int(rest)
        if size < 0:
            return None
        data = reader.read(size + 2)
        if len(data) != size + 2:
            raise ConnectionError("connection closed by Redis")
        return data[:-2]
    if kind == b"*":
        count = int(rest)
        return None if count < 0 else [_read_reply(reader) for _ in range(count)]
    raise RespError("unexpected reply from Redis")


class Coalescer:
    def __init__(self, url: str) -> None:
        self.client = RespClient(url)

    @staticmethod
    def names(directory_id: str, target: str) -> tuple[str, str]:
        name = f"{KEY_PREFIX}:drain:{directory_id}:{target}"
        return name, f"{name}:wake"

    def claim_or_wake(self, directory_id: str, target: str, ttl: float) -> bool:
        """Set the drain flag if it is free (True: the caller publishes a drain); otherwise wake the
        drain that owns it. One round trip: EVAL of a short script (Redis caches it by its hash)."""
        flag, wake = self.names(directory_id, target)
        return bool(self.client.call("EVAL", CLAIM_OR_WAKE, 2, flag, wake, int(ttl * 1000)))

    def refresh(self, directory_id: str, target: str, ttl: float) -> None:
        self.client.call("PEXPIRE", self.names(directory_id, target)[0], int(ttl * 1000))

    def wait_for_wake(self, directory_id: str, target: str, timeout: float) -> bool:
        """Block up to `timeout` seconds for a wake-up; True when one came."""
        wake = self.names(directory_id, target)[1]
        return self.client.call("BLPOP", wake, f"{timeout:.3f}", timeout=timeout + COMMAND_TIMEOUT) is not None

    def release(self, directory_id: str, target: str) -> None:
        self.client.call("DEL", *self.names(directory_id, target))
