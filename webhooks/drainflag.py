"""The per-directory drain flag and wake-up list on the broker's Redis (see webhooks.services.draining).

Each (directory, target) key has, while a drain owns it, `<prefix>:drain:<dir>:<target>` (the flag, with
an expiry) and `<prefix>:drain:<dir>:<target>:wake` (a list holding at most one wake-up).

The client is redis-py, already installed for Celery's Redis transport: one `redis.Redis` per process
and broker URL (webhooks.services.draining keeps it), whose connection pool gives each thread that is
running a command its own connection, so a drain blocked in BLPOP never holds up a kick from another
thread, and which opens new connections in a forked child. The URL gives user, password, database and TLS
(`rediss://` verifies the certificate and the host name). What the swap from the former hand-written
RESP client costs in CPU per kick is measured by `python -m bench.clients`.

The kick runs inside every SCIM write, so it fails fast instead of retrying: a one-second connect
timeout, a two-second command timeout and no retries (redis-py's default would retry with backoff and
hold the request); the caller treats any error as "the broker is down" and cools off.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from core.redisclient import redis_client

if TYPE_CHECKING:
    import redis

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


class DrainFlag:
    def __init__(self, url: str) -> None:
        self.url = url
        self.client: redis.Redis = redis_client(url, connect_timeout=CONNECT_TIMEOUT, command_timeout=COMMAND_TIMEOUT)
        self._waiters: dict[float, redis.Redis] = {}  # by the wait's length: see `wait_for_wake`
        self._waiters_lock = threading.Lock()
        # EVALSHA by the script's hash; redis-py loads the script once when the server lacks it
        # (after a restart or SCRIPT FLUSH), so the script's text is not sent with every kick.
        self._claim_or_wake = self.client.register_script(CLAIM_OR_WAKE)
        self._local = threading.local()

    def _kick_client(self) -> redis.Redis:
        """This thread's client for the kick, holding one connection of the pool for good. The kick runs
        inside every SCIM write, and a pooled client takes a connection out and puts it back around each
        command, checking it each time: kept for speed, bench/README.md, 'Code kept for speed', "Drain
        flag on one kept connection". A connection that fails is closed by redis-py and reopened on the
        next kick."""
        client = getattr(self._local, "client", None)
        if client is None:
            import redis

            client = self._local.client = redis.Redis(
                connection_pool=self.client.connection_pool, single_connection_client=True
            )
        return client

    @staticmethod
    def names(directory_id: str, target: str) -> tuple[str, str]:
        name = f"{KEY_PREFIX}:drain:{directory_id}:{target}"
        return name, f"{name}:wake"

    def claim_or_wake(self, directory_id: str, target: str, ttl: float) -> bool:
        """Set the drain flag if it is free (True: the caller publishes a drain); otherwise wake the
        drain that owns it. One round trip: EVALSHA of a short script."""
        keys = self.names(directory_id, target)
        return bool(self._claim_or_wake(keys=keys, args=[int(ttl * 1000)], client=self._kick_client()))

    def refresh(self, directory_id: str, target: str, ttl: float) -> None:
        self.client.pexpire(self.names(directory_id, target)[0], int(ttl * 1000))

    def wait_for_wake(self, directory_id: str, target: str, timeout: float) -> bool:
        """Block up to `timeout` seconds for a wake-up (redis-py's BLPOP); True when one came."""
        wake = self.names(directory_id, target)[1]
        return self._waiter(timeout).blpop([wake], timeout=timeout) is not None

    def _waiter(self, timeout: float) -> redis.Redis:
        """The client that waits `timeout` seconds. redis-py reads every reply, BLPOP's too, with the
        client's socket timeout, which a wait longer than COMMAND_TIMEOUT would outlast; so a wait has a
        client (and pool) of its own whose reads are given the wait plus COMMAND_TIMEOUT. The drains wait
        one length (LINGER), so a process keeps one. redis-py closes a connection whose command failed."""
        waiter = self._waiters.get(timeout)
        if waiter is None:
            with self._waiters_lock:
                waiter = self._waiters.get(timeout)
                if waiter is None:
                    waiter = self._waiters[timeout] = redis_client(
                        self.url, connect_timeout=CONNECT_TIMEOUT, command_timeout=timeout + COMMAND_TIMEOUT
                    )
        return waiter

    def release(self, directory_id: str, target: str) -> None:
        self.client.delete(*self.names(directory_id, target))
