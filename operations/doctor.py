"""The checks of `manage.py doctor` (contract §7.1): is this deployment set up to run, and running?

Each check returns findings: `ok`, `info` (true and fine, e.g. a development setup without a broker),
`warn` (works, but not as production should) or `fail` (a problem: doctor exits 1). A finding is one
line and, unless it is ok, says how to fix it. A check that breaks is itself a failed finding, never a
traceback. Checks that need an earlier one (the migrations need the database, the worker needs the
broker) say they were skipped when it failed.

What "production" means here: DEBUG off. With DEBUG on, what production would need is reported as
`info`, so a developer's machine comes out clean.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from kombu.utils.url import maybe_sanitize_url

from core import ratelimit
from core.ratelimit import MEMORY
from directories.guard.selectors import guard_tripped_directories
from operations.probes import broker_probe, database_clock, database_probe
from webhooks.selectors import heartbeat_get, outbox_backlog, sending_count
from webhooks.services import SWEEP, sending_stale_after, worker_ping_forget
from webhooks.services.heartbeats import PING_PREFIX
from webhooks.tasks import worker_ping_publish

OK, INFO, WARN, FAIL = "ok", "info", "warn", "fail"
# celery beat runs the sweep every 30 s (config/celery.py): three missed runs mean beat is not running.
SWEEP_STALE = timedelta(seconds=120)
# An event pending longer than this missed its drain and the sweeps after it: deliveries are stuck.
OUTBOX_STUCK = timedelta(minutes=5)
OUTBOX_SLOW = timedelta(seconds=60)
# Directories with a tripped deprovision guard that one line names (the others are counted as "more").
GUARD_LISTED = 5
# Times are written by every node's clock and compared across nodes (the sweep's ages, claims).
CLOCK_SKEW_LIMIT = 2.0
DEV_SECRET_PREFIX = "roster-dev-insecure"


@dataclass(frozen=True)
class Finding:
    status: str
    check: str
    message: str
    fix: str = ""


@dataclass
class Doctor:
    """Runs the checks in order; `worker_timeout` bounds the wait for a worker's answer to the ping."""

    worker_timeout: float = 10.0
    database_ok: bool = False
    broker_ok: bool = False
    findings: list[Finding] = field(default_factory=list)

    def run(self) -> list[Finding]:
        checks: list[tuple[str, Callable[[], Iterator[Finding]]]] = [
            ("settings", self.settings),
            ("database", self.database),
            ("migrations", self.migrations),
            ("broker", self.broker),
            ("limits", self.rate_limits),
            ("worker", self.worker),
            ("beat", self.beat),
            ("outbox", self.outbox),
            ("guard", self.guard),
            ("clock", self.clock),
        ]
        for name, check in checks:
            try:
                self.findings.extend(check())
            except Exception as exc:  # noqa: BLE001 - one line, never a traceback
                self.findings.append(
                    Finding(
                        FAIL,
                        name,
                        f"the check itself failed ({type(exc).__name__})",
                        "run it again; if it persists, look for this error in the log",
                    )
                )
        return self.findings

    # --- settings ------------------------------------------------------------------------------------

    def settings(self) -> Iterator[Finding]:
        production = not settings.DEBUG
        if production:
            yield Finding(OK, "DEBUG", "off (production)")
        else:
            yield Finding(
                INFO,
                "DEBUG",
                "on: a development setup; what production needs is reported as info",
                "set DEBUG=false in production",
            )
        key = settings.SECRET_KEY or ""
        if key.startswith(DEV_SECRET_PREFIX) or len(key) < 32:
            fix = "set SECRET_KEY to a long random value: python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
            what = "the development key" if key.startswith(DEV_SECRET_PREFIX) else f"only {len(key)} characters"
            yield Finding(FAIL if production else INFO, "SECRET_KEY", what, fix)
        else:
            yield Finding(OK, "SECRET_KEY", f"set ({len(key)} characters)")
        if settings.DB_ENCRYPTION_KEY:
            yield Finding(OK, "DB_ENCRYPTION_KEY", "set: SCIM and webhook secrets are encrypted at rest")
        else:
            yield Finding(
                FAIL if production else INFO,
                "DB_ENCRYPTION_KEY",
                "unset: SCIM and webhook secrets are stored in clear",
                "set it once, keep it with your secrets: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'",
            )
        hosts = list(settings.ALLOWED_HOSTS)
        if "*" in hosts:
            yield Finding(
                FAIL if production else INFO,
                "ALLOWED_HOSTS",
                "'*': answers for any Host header",
                "set ALLOWED_HOSTS to the public host name, e.g. ALLOWED_HOSTS=roster.example.com",
            )
        else:
            yield Finding(OK, "ALLOWED_HOSTS", ", ".join(hosts) or "(none)")
        external = settings.EXTERNAL_URL
        parts = urlsplit(external)
        if parts.scheme != "https":
            yield Finding(
                FAIL if production else INFO,
                "EXTERNAL_URL",
                f"{external} is not https: identity providers require https",
                "set EXTERNAL_URL=https://<public host> (the TLS proxy's address)",
            )
        elif parts.hostname in ("localhost", "127.0.0.1", "::1"):
            yield Finding(
                FAIL if production else INFO,
                "EXTERNAL_URL",
                f"{external} is this machine: identity providers cannot reach it",
                "set EXTERNAL_URL to the public https address",
            )
        else:
            yield Finding(OK, "EXTERNAL_URL", external)
        if production and settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS:
            yield Finding(
                WARN,
                "WEBHOOK_ALLOW_PRIVATE_NETWORKS",
                "on: webhooks may be sent to internal addresses",
                "unset it unless your receivers are on a private network on purpose",
            )
        if settings.METRICS_TOKEN:
            yield Finding(OK, "METRICS_TOKEN", "set: GET /metrics answers with it")
        else:
            yield Finding(
                INFO,
                "METRICS_TOKEN",
                "unset: GET /metrics answers 404 and nothing is counted",
                "set METRICS_TOKEN to a long random value to scrape /metrics",
            )

    # --- database and migrations ---------------------------------------------------------------------

    def database(self) -> Iterator[Finding]:
        probe = database_probe()
        connection = connections[DEFAULT_DB_ALIAS]
        name = connection.display_name
        where = _database_where(connection.settings_dict)
        if not probe.ok:
            yield Finding(
                FAIL,
                "database",
                f"{name} at {where} does not answer ({probe.detail})",
                "check DATABASE_URL and that the database server runs and accepts this host",
            )
            return
        self.database_ok = True
        yield Finding(OK, "database", f"{name} at {where} answers ({probe.milliseconds:.0f} ms)")
        if connection.vendor == "sqlite" and not settings.DEBUG:
            yield Finding(
                WARN,
                "database",
                "SQLite is for development only",
                "set DATABASE_URL=postgres://user:password@host:5432/roster",
            )

    def migrations(self) -> Iterator[Finding]:
        if not self.database_ok:
            yield Finding(INFO, "migrations", "skipped: the database does not answer")
            return
        executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if plan:
            names = ", ".join(f"{m.app_label}.{m.name}" for m, _backwards in plan[:3])
            more = f" and {len(plan) - 3} more" if len(plan) > 3 else ""
            yield Finding(
                FAIL, "migrations", f"{len(plan)} not applied: {names}{more}", "run: python manage.py migrate --noinput"
            )
        else:
            yield Finding(OK, "migrations", "all applied")

    # --- broker, worker, beat ------------------------------------------------------------------------

    def broker(self) -> Iterator[Finding]:
        url = settings.CELERY_BROKER_URL
        if not url:
            status = INFO if settings.DEBUG else WARN
            yield Finding(
                status,
                "broker",
                "none: webhooks are delivered by threads of the web process (a development setup)",
                "in production set CELERY_BROKER_URL and run a worker and beat",
            )
            return
        shown = maybe_sanitize_url(url)
        probe = broker_probe(url)
        if not probe.ok:
            yield Finding(
                FAIL,
                "broker",
                f"{shown} does not answer ({probe.detail})",
                "start the broker, or correct CELERY_BROKER_URL",
            )
            return
        self.broker_ok = True
        yield Finding(OK, "broker", f"{shown} answers ({probe.milliseconds:.0f} ms)")

    def rate_limits(self) -> Iterator[Finding]:
        """The limits (contract §4.5) and their store: a Redis store must answer (else every request is let
        through uncounted); memory:// counts per process, so N web workers allow N times each limit."""
        limits = [f"SCIM {settings.SCIM_RATE_LIMIT or 'unlimited'}", f"REST {settings.API_RATE_LIMIT or 'unlimited'}"]
        yield Finding(OK, "limits", f"per minute: {', '.join(limits)} (per directory and per API key)")
        url = settings.RATE_LIMIT_STORAGE_URL
        if url == MEMORY:
            yield Finding(
                INFO if settings.DEBUG else WARN,
                "limit_store",
                "memory://: each process counts alone, so the limits multiply by the number of web workers",
                "set RATE_LIMIT_STORAGE_URL to a Redis URL shared by every node (the broker's Redis will do)",
            )
            return
        started = time.monotonic()
        problem = ratelimit.store_problem()
        if problem is not None:
            yield Finding(
                FAIL,
                "limit_store",
                f"{problem}: requests are let through uncounted",
                "start Redis, or correct RATE_LIMIT_STORAGE_URL",
            )
            return
        milliseconds = (time.monotonic() - started) * 1000
        yield Finding(OK, "limit_store", f"{maybe_sanitize_url(url)} answers ({milliseconds:.0f} ms)")

    def worker(self) -> Iterator[Finding]:
        if not settings.CELERY_BROKER_URL:
            yield Finding(INFO, "worker", "none needed without a broker")
            return
        if not self.broker_ok or not self.database_ok:
            yield Finding(INFO, "worker", "skipped: the broker or the database does not answer")
            return
        token = secrets.token_hex(12)
        started = time.monotonic()
        worker_ping_publish(token)
        try:
            while True:
                answer = heartbeat_get(name=f"{PING_PREFIX}{token}")
                if answer is not None:
                    seconds = time.monotonic() - started
                    yield Finding(OK, "worker", f"{answer.detail or 'a worker'} answered a ping in {seconds:.1f} s")
                    return
                if time.monotonic() - started >= self.worker_timeout:
                    yield Finding(
                        FAIL,
                        "worker",
                        f"no worker answered a ping within {self.worker_timeout:g} s",
                        "start one: python -m server.worker (or celery -A config worker)",
                    )
                    return
                time.sleep(0.2)
        finally:
            worker_ping_forget(token=token)

    def beat(self) -> Iterator[Finding]:
        if not self.database_ok:
            yield Finding(INFO, "beat", "skipped: the database does not answer")
            return
        sweep = heartbeat_get(name=SWEEP)
        last = "never" if sweep is None else f"{_age(sweep.at)} ago"
        if not settings.CELERY_BROKER_URL:
            yield Finding(
                INFO,
                "beat",
                f"none without a broker; last sweep: {last}",
                "run python manage.py webhooks_sweep from cron to send events a restart left pending",
            )
            return
        if sweep is None:
            yield Finding(
                FAIL,
                "beat",
                "no sweep has ever run: celery beat is not running",
                "run exactly one beat: celery -A config beat",
            )
        elif timezone.now() - sweep.at > SWEEP_STALE:
            yield Finding(
                FAIL,
                "beat",
                f"last sweep {last} (every 30 s expected): celery beat is not running",
                "start exactly one beat: celery -A config beat; check that a worker runs its tasks",
            )
        else:
            yield Finding(OK, "beat", f"last sweep {last}")

    # --- outbox and clock ----------------------------------------------------------------------------

    def outbox(self) -> Iterator[Finding]:
        if not self.database_ok:
            yield Finding(INFO, "outbox", "skipped: the database does not answer")
            return
        backlog = outbox_backlog()
        age = timezone.now() - backlog.oldest_pending_at if backlog.oldest_pending_at else timedelta(0)
        summary = f"{backlog.pending} pending, {backlog.sending} sending"
        if backlog.pending:
            summary += f"; the oldest pending for {_duration(age)}"
        if age > OUTBOX_STUCK:
            yield Finding(
                FAIL,
                "outbox",
                summary + ": deliveries are stuck",
                "check the worker and beat lines above and the worker's log",
            )
        elif age > OUTBOX_SLOW:
            yield Finding(
                WARN,
                "outbox",
                summary + ": deliveries are falling behind",
                "add worker concurrency (-c) or workers; check slow webhook receivers",
            )
        else:
            yield Finding(OK, "outbox", summary)
        stale = sending_count(claimed_before=timezone.now() - sending_stale_after())
        if stale:
            yield Finding(
                WARN,
                "outbox",
                f"{stale} attempt(s) interrupted (a worker died); the next sweep reports them as failed",
                "look for killed workers (out of memory, a hard time limit)",
            )

    def guard(self) -> Iterator[Finding]:
        """Directories whose deprovision guard tripped (contract §4.2): changes wait for a person. A warning:
        Roster works as it should, but someone has to look."""
        if not self.database_ok:
            yield Finding(INFO, "guard", "skipped: the database does not answer")
            return
        tripped = list(guard_tripped_directories()[: GUARD_LISTED + 1])
        if not tripped:
            yield Finding(OK, "guard", "no directory holds changes")
            return
        shown = ", ".join(
            f"{d.name} ({d.id}: {d.held_count} held, tripped {_age(d.guard_tripped_at)} ago)"
            for d in tripped[:GUARD_LISTED]
        )
        more = " and more" if len(tripped) > GUARD_LISTED else ""
        yield Finding(
            WARN,
            "guard",
            f"the deprovision guard tripped and holds changes in {shown}{more}",
            "review them, then approve or discard: manage.py directories held <id> [--approve | --discard], "
            "the portal, or the held-changes routes of the REST and admin APIs",
        )

    def clock(self) -> Iterator[Finding]:
        if not self.database_ok:
            yield Finding(INFO, "clock", "skipped: the database does not answer")
            return
        if connections[DEFAULT_DB_ALIAS].vendor != "postgresql":
            yield Finding(INFO, "clock", "SQLite runs on this machine's clock")
            return
        before = timezone.now()
        database_now = database_clock()
        after = timezone.now()
        skew = (database_now - (before + (after - before) / 2)).total_seconds()
        if abs(skew) > CLOCK_SKEW_LIMIT:
            yield Finding(
                FAIL,
                "clock",
                f"this machine is {abs(skew):.1f} s {'behind' if skew > 0 else 'ahead of'} the database",
                "synchronise both clocks with NTP (chrony or systemd-timesyncd)",
            )
        else:
            yield Finding(OK, "clock", f"{abs(skew) * 1000:.0f} ms from the database's")


def _database_where(config: dict) -> str:
    if config.get("HOST"):
        return f"{config['HOST']}:{config.get('PORT') or 'default port'}/{config.get('NAME')}"
    return str(config.get("NAME"))


def _duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


def _age(moment: datetime) -> str:
    return _duration(timezone.now() - moment)
