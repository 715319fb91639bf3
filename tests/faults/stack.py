"""Roster in production shape on its own PostgreSQL cluster and Redis, for the fault scenarios.

Everything here is started by the suite and stopped by it, by PID: a PostgreSQL cluster made with
`initdb` in a temporary directory (run as the `postgres` OS user when the suite runs as root, since
initdb refuses root), a `redis-server` child process, the web server (`python -m server.web`), a Celery
worker (`python -m server.worker --pool threads`) and a webhook receiver thread. The machine's shared
PostgreSQL and Redis are never touched: the scenarios stop and kill these.

Processes are started through bench.procs.Service (own session, so stopping one stops its children)
with the environment bench.systems.roster_env builds for the benchmark's production shape.
"""

from __future__ import annotations

import collections
import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import redis

from bench.httpclient import Client
from bench.procs import Service, memory_kib, process_tree, wait_http
from bench.systems import RosterOptions, roster_env, web_command, worker_command
from core.metricsdir import pid_alive
from tests.webhooks.conftest import Received, Receiver, _handler, _QuietServer, closed_port

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "faults-api-key"
ADMIN_ROOT_TOKEN = "faults-admin-root-token-0123456789"
METRICS_TOKEN = "faults-metrics-token-0123456789"
WEBHOOK_TIMEOUT = 2.0
HUGE_BYTES = 100 * 1024 * 1024


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def postgres_bin() -> Path | None:
    """The newest PostgreSQL's bin directory that has initdb and pg_ctl, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3].split(".")[0]))
    return Path(found[-1]).parent if found else None


def missing_binaries() -> list[str]:
    missing = [] if postgres_bin() else ["initdb/pg_ctl (/usr/lib/postgresql/*/bin)"]
    if not shutil.which("redis-server"):
        missing.append("redis-server")
    return missing


def wait_for(predicate: Any, timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


# --- PostgreSQL ---------------------------------------------------------------------------------------


class PostgresCluster:
    """A throw-away cluster on 127.0.0.1:`port`, its files in a temporary directory."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.bin = postgres_bin()
        assert self.bin is not None
        self.root = Path(tempfile.mkdtemp(prefix="roster-faults-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.as_owner: list[str] = []
        if os.geteuid() == 0:  # initdb refuses root: the cluster belongs to the postgres OS user
            shutil.chown(self.root, "postgres", "postgres")
            self.as_owner = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")

    def _run(self, program: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.as_owner, str(self.bin / program), *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.root,
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=50"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> None:
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def destroy(self) -> None:
        """Stop the cluster (by its postmaster's PID if pg_ctl cannot) and remove its files."""
        pid = self.postmaster_pid()
        if pid is not None:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                self.stop("immediate")
            if pid_alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)


# --- Redis --------------------------------------------------------------------------------------------


class RedisServer:
    """`redis-server` without persistence, as a child process; restartable on the same port."""

    def __init__(self, port: int, logs: Path) -> None:
        self.port = port
        self.logs = logs
        self.service: Service | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        argv += ["--daemonize", "no"]
        self.service = Service("redis", argv, env=dict(os.environ), cwd=self.logs, log=self.logs / "redis.log")
        if not wait_for(self.ping, 20):
            raise RuntimeError(f"redis-server did not start:\n{self.service.tail()}")

    def kill(self) -> None:
        """SIGKILL, as a crashed broker: no shutdown, nothing saved."""
        assert self.service is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.service.pid, signal.SIGKILL)
        self.service.stop()
        self.service = None

    def stop(self) -> None:
        if self.service is not None:
            self.service.stop()
            self.service = None

    def consumers(self) -> int:
        """Clients waiting on a queue (BRPOP): the Celery workers consuming from this broker."""
        try:
            with redis.Redis.from_url(self.url, socket_timeout=2) as client:
                return sum(1 for entry in client.client_list() if entry.get("cmd") == "brpop")
        except redis.RedisError:
            return 0

    def ping(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.RedisError:
            return False

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=2, socket_connect_timeout=2)


# --- the webhook receiver -----------------------------------------------------------------------------


def _fault_handler(receiver: Receiver) -> type:
    """tests.webhooks' receiver (/ok, /fail, /redirect, /slow, ...) plus /huge: 200 with a 100 MB body,
    streamed, so a worker that read whole bodies would grow by that much."""

    class Handler(_handler(receiver)):  # type: ignore[misc, valid-type]
        def do_POST(self) -> None:  # noqa: N802
            if self.path.split("?")[0] != "/huge":
                super().do_POST()
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            with receiver.lock:
                receiver.requests.append(Received(self.path, dict(self.headers.items()), body, time.monotonic()))
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(HUGE_BYTES))
            self.end_headers()
            block = b"x" * 65536
            with contextlib.suppress(OSError):  # the client stops reading and hangs up: expected
                for _ in range(HUGE_BYTES // len(block)):
                    self.wfile.write(block)
            self.close_connection = True

    return Handler


@contextlib.contextmanager
def receiver_running(slow_seconds: float) -> Iterator[Receiver]:
    holder: dict[str, Receiver] = {}
    server = _QuietServer(("127.0.0.1", 0), lambda *a: _fault_handler(holder["r"])(*a))
    server.daemon_threads = True
    holder["r"] = Receiver("127.0.0.1", server.server_address[1], slow_seconds=slow_seconds)
    thread = threading.Thread(target=server.serve_forever, name="fault-receiver", daemon=True)
    thread.start()
    try:
        yield holder["r"]
    finally:
        holder["r"].release.set()
        server.shutdown()
        server.server_close()


def received_ids(receiver: Receiver, directory_id: str | None = None) -> list[str]:
    """Event ids the receiver got, in arrival order (repeats kept), optionally of one directory."""
    with receiver.lock:
        requests = list(receiver.requests)
    ids = []
    for request in requests:
        payload = json.loads(request.body)
        if directory_id is None or payload["directory_id"] == directory_id:
            ids.append(payload["id"])
    return ids


# --- Roster ---------------------------------------------------------------------------------------------


class Roster:
    """The web server (one worker per core, 2 here) and one Celery worker, DEBUG off, on the cluster and Redis
    above; started with the README's production commands."""

    def __init__(self, pg: PostgresCluster, redis: RedisServer, logs: Path) -> None:
        self.pg = pg
        self.redis = redis
        self.logs = logs
        self.port = free_port()
        self.database_url = pg.url("roster")
        self.env = roster_env(
            RosterOptions(
                port=self.port,
                extra_env={
                    "DATABASE_URL": self.database_url,
                    "CELERY_BROKER_URL": redis.url,
                    "API_KEYS": API_KEY,
                    "WEBHOOK_TIMEOUT": str(WEBHOOK_TIMEOUT),
                    # Operations (tests/faults/test_nodes.py): the admin API, /metrics of this node only.
                    "ADMIN_ROOT_TOKEN": ADMIN_ROOT_TOKEN,
                    "ADMIN_JWT_SECRET": "faults-admin-jwt-secret-0123456789abcdef",
                    "METRICS_TOKEN": METRICS_TOKEN,
                    "METRICS_DIR": str(logs / "metrics"),
                    # The scenarios count the web server's log lines per failed request: only warnings.
                    "LOG_LEVEL": "WARNING",
                    "LOG_FORMAT": "plain",
                },
            )
        )
        self.web: Service | None = None
        self.worker: Service | None = None

    def other_node(self, logs: Path) -> Roster:
        """Another node of the same deployment: its own web server and Celery worker, on this one's database
        and broker, with the same settings and secrets (a second machine, as far as Roster can tell)."""
        node = Roster.__new__(Roster)
        node.pg, node.redis, node.logs = self.pg, self.redis, logs
        node.port = free_port()
        node.database_url = self.database_url
        node.env = {
            **self.env,
            "PORT": str(node.port),
            "METRICS_DIR": str(logs / "metrics"),
        }
        node.web = node.worker = None
        return node

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def manage(self, *args: str, timeout: float = 120) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def start(self) -> None:
        self.manage("migrate", "--noinput")
        self.web_start()
        self.worker_start()

    def web_start(self) -> None:
        argv = web_command(RosterOptions(port=self.port))
        self.web = Service("roster-web", argv, env=self.env, cwd=ROOT, log=self.logs / "web.log")
        wait_http("127.0.0.1", self.port, "/healthz", timeout=60, proc=self.web)

    @staticmethod
    def terminate(service: Service, timeout: float = 60.0) -> int:
        """SIGTERM, as systemd or a rolling deploy stops a process, and wait for it to finish on its own
        (granian lets its workers finish the requests in flight, Celery's warm shutdown); its exit code."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(service.pid, signal.SIGTERM)
        code = service.proc.wait(timeout)
        service.stop()
        return code

    def worker_start(self) -> None:
        log = self.logs / "worker.log"
        consumers = self.redis.consumers()
        self.worker = Service("roster-worker", worker_command(RosterOptions()), env=self.env, cwd=ROOT, log=log)
        # Ready once it consumes from the queue (the production command logs at WARNING, so Celery's
        # "ready." line is not there to wait for): one more client blocked reading the broker's queue.
        if not wait_for(lambda: self.redis.consumers() > consumers or not self.worker.alive(), 60, 0.2):
            raise RuntimeError(f"the Celery worker did not start:\n{self.worker.tail()}")
        if not self.worker.alive():
            raise RuntimeError(f"the Celery worker exited:\n{self.worker.tail()}")

    def worker_kill(self) -> None:
        """SIGKILL the worker's whole process group: no warm shutdown, nothing put back."""
        assert self.worker is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.worker.pid, signal.SIGKILL)
        self.worker.stop()
        self.worker = None

    def worker_rss_kib(self) -> int:
        assert self.worker is not None
        return sum(memory_kib(pid)[0] for pid in process_tree([self.worker.pid]))

    def stop(self) -> None:
        for service in (self.worker, self.web):
            if service is not None:
                service.stop()
        self.worker = self.web = None

    def web_log(self) -> str:
        return (self.logs / "web.log").read_text(errors="replace")

    def client(self, token: str | None = None, timeout: float = 30.0) -> Client:
        return Client(self.base_url, token=token or API_KEY, timeout=timeout)

    def directory_create(self, tag: str, webhook_url: str) -> tuple[str, str]:
        """A directory with its webhook and delivery log on; returns (id, SCIM bearer secret)."""
        client = self.client()
        body = {
            "name": f"faults {tag}",
            "tenant": f"faults-{tag}",
            "product": "faults",
            "type": "okta-scim-v2",
            "webhook_url": webhook_url,
            "webhook_secret": f"whsec-faults-{tag}-0123456789abcdef",
            "log_webhook_events": True,
        }
        resp = client.request("POST", "/api/v1/directory-sync", body)
        client.close()
        assert resp.status == 201, resp.body[:500]
        data = resp.json()["data"]
        return data["id"], data["scim"]["secret"]

    def sweep(self, min_age: float = 0) -> str:
        return self.manage("webhooks_sweep", "--min-age", str(min_age)).strip()

    # -- reading the database directly ------------------------------------------------------------------

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.database_url, autocommit=True, connect_timeout=5) as conn:
            return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]

    def events_open(self, directory_id: str) -> dict[str, int]:
        """Outbox rows of the directory not closed yet, by state (pending, sending)."""
        rows = self.query(
            "SELECT state, count(*) FROM webhooks_webhookevent WHERE directory_id = %s "
            "AND state IN ('pending', 'sending') GROUP BY state",
            directory_id,
        )
        return {state: n for state, n in rows}

    def deliveries(self, directory_id: str) -> list[tuple[str, bool, str, int | None]]:
        """The delivery log of a directory: (event id, delivered, error class, status code) per attempt."""
        return [
            (str(event_id), delivered, error_class, status)
            for event_id, delivered, error_class, status in self.query(
                "SELECT event_id, delivered, error_class, status_code FROM webhooks_webhookdelivery "
                "WHERE directory_id = %s",
                directory_id,
            )
        ]

    def user_names(self, directory_id: str) -> list[str]:
        return [
            name
            for (name,) in self.query(
                "SELECT user_name FROM directories_directoryuser WHERE directory_id = %s", directory_id
            )
        ]

    def settle(self, directory_ids: list[str], timeout: float = 60.0, sweep_every: float = 10.0) -> bool:
        """Wait until no event of these directories is pending or sending, running the sweep every
        `sweep_every` seconds meanwhile, as celery beat would (every 30 s in production)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sweep()
            if wait_for(lambda: not any(self.events_open(d) for d in directory_ids), sweep_every, 0.25):
                return True
        return False

    def claims_age(self, directory_id: str) -> int:
        """Make the directory's `sending` claims older than sending_stale_after() (WEBHOOK_TIMEOUT + 90 s),
        so the sweep reports them now instead of in 92 s. Only for claims whose worker is dead."""
        with psycopg.connect(self.database_url, autocommit=True, connect_timeout=5) as conn:
            return conn.execute(
                "UPDATE webhooks_webhookevent SET claimed_at = claimed_at - interval '10 minutes' "
                "WHERE directory_id = %s AND state = 'sending'",
                (directory_id,),
            ).rowcount


def scim_client(roster: Roster, secret: str, timeout: float = 30.0) -> Client:
    return Client(roster.base_url, token=secret, timeout=timeout)


def user_body(user_name: str) -> dict[str, Any]:
    return {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
        "userName": user_name,
        "name": {"givenName": "Fault", "familyName": user_name.split("@")[0]},
        "emails": [{"value": user_name, "type": "work", "primary": True}],
        "active": True,
    }


def scim_create_users(roster: Roster, directory_id: str, secret: str, count: int, prefix: str) -> list[str]:
    """Create `count` users (expecting 201 each); their ids."""
    client = scim_client(roster, secret)
    ids = []
    for i in range(count):
        resp = client.request(
            "POST",
            f"/api/scim/v2.0/{directory_id}/Users",
            user_body(f"{prefix}-{i}@example.com"),
            content_type="application/scim+json",
        )
        assert resp.status == 201, (resp.status, resp.body[:300])
        ids.append(resp.json()["id"])
    client.close()
    return ids


def users_created_while_down(
    roster: Roster, redis: RedisServer, directory_id: str, secret: str, *, seconds: float, prefix: str
) -> collections.Counter[int]:
    """Kill the broker, POST a user every quarter second for `seconds` as an identity provider would,
    start the broker again; the statuses answered, counted."""
    client = scim_client(roster, secret, timeout=20)
    statuses: collections.Counter[int] = collections.Counter()
    redis.kill()
    down_at = time.monotonic()
    i = 0
    while time.monotonic() - down_at < seconds:
        resp = client.request(
            "POST",
            f"/api/scim/v2.0/{directory_id}/Users",
            user_body(f"{prefix}-{i}@example.com"),
            content_type="application/scim+json",
        )
        statuses[resp.status] += 1
        i += 1
        time.sleep(0.25)
    redis.start()
    client.close()
    return statuses


def unused_port() -> int:
    return closed_port()
