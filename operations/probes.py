"""Does the database answer, does the broker? Shared by GET /readyz and `manage.py doctor`.

A probe never raises and never says more than the kind of failure (the exception's class): a broker URL
or a driver's message may carry a password or a host the public should not learn.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis
from django.db import connection
from kombu import Connection

# A probe that waits longer than this is a failure: a load balancer's check must answer in time, and
# doctor must not hang on an address that drops packets.
TIMEOUT = 2.0


@dataclass(frozen=True, slots=True)
class Probe:
    ok: bool
    detail: str  # "" when ok, else the class of the failure
    milliseconds: float


def _timed(check: Any) -> Probe:
    started = time.perf_counter()
    try:
        check()
    except Exception as exc:  # noqa: BLE001 - any failure is an answer, never an exception
        return Probe(False, type(exc).__name__, (time.perf_counter() - started) * 1000)
    return Probe(True, "", (time.perf_counter() - started) * 1000)


def database_probe() -> Probe:
    def select_one() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()

    # A connection that broke here is dropped when the request ends (Django's request_finished).
    return _timed(select_one)


# One client per Redis URL for the process: its pool keeps a connection, so a probe every few seconds
# from a load balancer does not open a TCP connection each time. It holds no state a node could answer from.
_redis_clients: dict[str, redis.Redis] = {}


def broker_probe(url: str) -> Probe:
    """Redis: a PING. Other brokers (RabbitMQ): a connection opened and closed through kombu."""
    if url.startswith(("redis://", "rediss://")):
        client = _redis_clients.get(url)
        if client is None:
            client = _redis_clients[url] = redis.Redis.from_url(
                url, socket_connect_timeout=TIMEOUT, socket_timeout=TIMEOUT, retry_on_timeout=False
            )
        return _timed(client.ping)

    def connect() -> None:
        with Connection(url, connect_timeout=TIMEOUT) as broker:
            broker.ensure_connection(max_retries=1, interval_start=0, timeout=TIMEOUT)

    return _timed(connect)


def database_clock() -> datetime:
    """The database server's clock now (CURRENT_TIMESTAMP: the start of this autocommit statement)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT CURRENT_TIMESTAMP")
        moment = cursor.fetchone()[0]
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
