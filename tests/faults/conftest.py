"""One production-shape Roster for the fault scenarios, on its own PostgreSQL cluster and Redis.

Started once for the whole tests/faults run (about 15 s) and stopped by PID at the end, also when a
test fails or the run is interrupted. Locally the scenarios skip when initdb or redis-server are
missing; with CI=true they fail instead.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults.stack import PostgresCluster, RedisServer, Roster, free_port, missing_binaries


@dataclass
class Stack:
    pg: PostgresCluster
    redis: RedisServer
    roster: Roster
    logs: Path


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    missing = missing_binaries()
    if missing:
        message = f"the fault suite needs {', '.join(missing)}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {message}")
        pytest.skip(message)
    logs = Path(tempfile.mkdtemp(prefix="roster-faults-logs-"))
    pg = redis = roster = None
    try:
        pg = PostgresCluster(free_port())
        pg.start()
        pg.create_database("roster")
        redis = RedisServer(free_port(), logs)
        redis.start()
        roster = Roster(pg, redis, logs)
        roster.start()
        print(f"\nfault stack: postgres :{pg.port}, redis :{redis.port}, roster :{roster.port}, logs {logs}")
        yield Stack(pg, redis, roster, logs)
    finally:
        if roster is not None:
            roster.stop()
        if redis is not None:
            redis.stop()
        if pg is not None:
            pg.destroy()
        if os.environ.get("FAULTS_KEEP_LOGS"):
            print(f"fault stack logs kept in {logs}")
        else:
            shutil.rmtree(logs, ignore_errors=True)
