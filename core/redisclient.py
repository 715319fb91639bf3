"""The redis-py client of Roster's own uses of Redis (the webhook drain flag on the broker's Redis, the rate
limits' shared buckets): one way to open it, whichever the use.

redis-py is imported when a client is made: a process without a Redis broker or limit store never makes
one, and does not load redis-py (several MB per process).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import redis


def redis_client(url: str, *, connect_timeout: float, command_timeout: float) -> redis.Redis:
    """A client of the Redis at `url` (user, password, database and TLS from the URL), failing fast: the
    given timeouts and no retries (redis-py's default would retry with backoff), for callers that treat
    any error as "Redis is down" and cope."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    # Said explicitly rather than left to redis-py's defaults: a rediss:// server's certificate is
    # verified, host name included.
    tls = {"ssl_cert_reqs": "required", "ssl_check_hostname": True} if url.startswith("rediss://") else {}
    return redis.Redis.from_url(
        url,
        **tls,
        socket_connect_timeout=connect_timeout,
        socket_timeout=command_timeout,
        retry=Retry(NoBackoff(), 0),
        # RESP2, which every Redis speaks, and no HELLO or CLIENT SETINFO round trips when a connection
        # opens: AUTH and SELECT from the URL are all it needs.
        protocol=2,
        lib_name=None,
        lib_version=None,
    )
