"""How to install, start and talk to each system under test: Roster (production shape) and Jackson."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.httpclient import Client
from bench.procs import Service, free_port, recreate_database, wait_http

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
# The Jackson reference server (package.json, package-lock.json, server.js) is not part of this
# repository: JACKSON_ANCHOR names the folder that holds it. Once copied into bench/.jackson and
# installed, that copy is used as it is when JACKSON_ANCHOR is not set.
JACKSON_ANCHOR = os.environ.get("JACKSON_ANCHOR", "")
JACKSON_DIR = BENCH / ".jackson"  # git-ignored: node_modules never enters the repository
VENV_BIN = ROOT / ".venv" / "bin"
PG_URL = "postgres://postgres@127.0.0.1:5432"


@dataclass
class System:
    name: str  # "roster" or "jackson"
    port: int
    api_key: str
    page_size: int
    totals_capped: bool
    webhook_scheme: str
    database: str = ""
    env: dict[str, str] = field(default_factory=dict)  # the environment its processes were started with
    services: list[Service] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def pids(self) -> list[int]:
        return [s.pid for s in self.services]

    def stop(self) -> None:
        for s in reversed(self.services):
            s.stop()
        self.services.clear()

    def directory_create(self, *, tag: str, webhook_url: str, webhook_secret: str) -> tuple[str, str]:
        """Create a directory over the REST API; returns (SCIM base path, SCIM bearer secret)."""
        body = {
            "name": f"bench {tag}",
            "tenant": f"bench-{tag}",
            "product": "bench",
            "type": "okta-scim-v2",
            "webhook_url": webhook_url,
            "webhook_secret": webhook_secret,
        }
        client = Client(self.base_url, token=self.api_key)
        resp = client.request("POST", "/api/v1/directory-sync", body)
        client.close()
        if resp.status != 201:
            raise RuntimeError(f"{self.name}: directory create answered {resp.status}: {resp.body[:300]!r}")
        data = resp.json()["data"]
        return data["scim"].get("path") or f"/api/scim/v2.0/{data['id']}", data["scim"]["secret"]


def service_actor(service: Callable[..., Any]) -> dict[str, Any]:
    """`actor=` for a Roster service that records its audit entry from one (the operator running the
    benchmark, as a command); nothing for a Roster from before, so the same command measures both."""
    if "actor" not in inspect.signature(service).parameters:
        return {}
    from audit.actors import command_actor

    return {"actor": command_actor()}


def _run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=True, text=True, capture_output=True, **kwargs)


# -- Jackson ------------------------------------------------------------------------------------------


def jackson_install(log: Any = print) -> None:
    """Copy the reference to bench/.jackson and `npm ci` there, once (again only if the lock changed)."""
    if not JACKSON_ANCHOR:
        if (JACKSON_DIR / "node_modules").is_dir() and (JACKSON_DIR / "server.js").is_file():
            return
        raise SystemExit("Set JACKSON_ANCHOR to the folder that holds the Jackson reference server.")
    source = Path(JACKSON_ANCHOR)
    JACKSON_DIR.mkdir(parents=True, exist_ok=True)
    lock_src = (source / "package-lock.json").read_bytes()
    stamp = JACKSON_DIR / ".installed-lock"
    for name in ("package.json", "package-lock.json", "server.js"):
        target = JACKSON_DIR / name
        if not target.exists() or target.read_bytes() != (source / name).read_bytes():
            if target.exists():
                target.chmod(0o644)
            shutil.copyfile(source / name, target)
    if (JACKSON_DIR / "node_modules").is_dir() and stamp.exists() and stamp.read_bytes() == lock_src:
        return
    log("installing the Jackson reference (npm ci, a minute or two)...")
    _run(["npm", "ci", "--no-audit", "--no-fund"], cwd=JACKSON_DIR)
    stamp.write_bytes(lock_src)


def jackson_start(*, port: int, database: str, logs: Path) -> System:
    recreate_database(database)
    env = {
        **os.environ,
        "DB_URL": f"{PG_URL}/{database}",
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "QUIET": "1",
        "JACKSON_API_KEYS": "bench-key",
        "NODE_ENV": "production",
    }
    system = System(
        "jackson", port, "bench-key", page_size=50, totals_capped=True, webhook_scheme="jackson", database=database
    )
    node = Service("jackson", ["node", "server.js"], env=env, cwd=JACKSON_DIR, log=logs / "jackson.log")
    system.services.append(node)
    try:
        wait_http("127.0.0.1", port, "/api/health", timeout=90, proc=node)
    except Exception:
        system.stop()
        raise
    return system


# -- Roster ---------------------------------------------------------------------------------------------


@dataclass
class RosterOptions:
    port: int = 8123
    database: str = "roster_bench"
    redis_db: int = 12
    web_workers: int | None = None  # None: what `python -m server.web` decides (one per core, at least 2)
    celery_pool: str = "threads"
    celery_concurrency: int = 4
    encrypt_secrets: bool = True
    extra_env: dict[str, str] = field(default_factory=dict)
    bin_dir: Path = VENV_BIN  # the virtualenv whose python runs Roster (web server and Celery)
    web: list[str] | None = None  # the web server's command; None: web_command(), the README's


def web_arguments_add(parser: argparse.ArgumentParser) -> None:
    """The web server options a benchmark run may change (`python -m server.web` decides the rest)."""
    parser.add_argument("--web-workers", type=int, default=None, help="web worker processes (--workers)")
    parser.add_argument(
        "--web-threads", type=int, default=None, help="threads running Roster in each (GRANIAN_BLOCKING_THREADS)"
    )


def web_env(args: argparse.Namespace) -> dict[str, str]:
    """The GRANIAN_* variables for the options of `web_arguments_add` that were given (the calling
    shell's own GRANIAN_* variables never reach Roster, see roster_env)."""
    given = (("GRANIAN_BLOCKING_THREADS", args.web_threads),)
    return {name: str(value) for name, value in given if value}


# The rate limits at their defaults (roster_env sets the compare's 600000), counted in the broker's Redis as
# RATE_LIMIT_STORAGE_URL defaults to it: the runs that are about the limits, or run at their defaults.
LIMITS_AT_DEFAULTS = {"SCIM_RATE_LIMIT": "3000", "API_RATE_LIMIT": "6000"}


def options_at_default_limits(args: argparse.Namespace, *, database: str, redis_db: int) -> RosterOptions:
    """Roster on a free port, with the web options of `web_arguments_add` and LIMITS_AT_DEFAULTS."""
    return RosterOptions(
        port=free_port(),
        database=database,
        redis_db=redis_db,
        web_workers=args.web_workers,
        extra_env={**web_env(args), **LIMITS_AT_DEFAULTS},
    )


def web_command(opts: RosterOptions) -> list[str]:
    """The README's production command for the web server, on the benchmark's port."""
    argv = [str(opts.bin_dir / "python"), "-m", "server.web", "--bind", f"127.0.0.1:{opts.port}"]
    if opts.web_workers:
        argv += ["--workers", str(opts.web_workers)]
    return argv


def worker_command(opts: RosterOptions) -> list[str]:
    """The README's production command for the Celery worker, quieter (the benchmark reads no INFO line)."""
    return [
        str(opts.bin_dir / "python"),
        "-m",
        "server.worker",  # the worker `celery -A config worker` starts, without the CLI's imports
        "--pool",
        opts.celery_pool,
        "--concurrency",
        str(opts.celery_concurrency),
        "--loglevel",
        "WARNING",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]


def roster_env(opts: RosterOptions) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "CELERY_", "WEBHOOK_", "GRANIAN_", "PROMETHEUS_", "METRICS_", "LOG_"))
        and k not in ("DATABASE_URL", "DEBUG")
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(48),
            "DATABASE_URL": f"{PG_URL}/{opts.database}",
            "CELERY_BROKER_URL": f"redis://127.0.0.1:6379/{opts.redis_db}",
            "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
            "API_KEYS": "bench-key",
            "EXTERNAL_URL": f"http://127.0.0.1:{opts.port}",
            # Operations on, as in production (issue 22: the comparison must hold with them): every SCIM
            # request counted for /metrics, a JSON line per SCIM write and per 4xx.
            "METRICS_TOKEN": "bench-metrics-token",
            # Rate limits on (contract §4.5), at a level the workload never reaches, counted in the broker's
            # Redis as production does: what the limiter costs is inside every figure.
            "SCIM_RATE_LIMIT": "600000",
            "API_RATE_LIMIT": "600000",
            "LOG_FORMAT": "json",
            "LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
        }
    )
    if opts.encrypt_secrets:
        # Production shape: secrets encrypted at rest, so SCIM auth pays the decryption it pays in production.
        env["DB_ENCRYPTION_KEY"] = secrets.token_urlsafe(32)
    env.update(opts.extra_env)
    return env


def roster_in_process(*, database: str, redis_db: int, metrics_prefix: str | None = None) -> None:
    """Roster's production settings (roster_env, its log at ERROR) in this very process, on `database`
    made afresh and migrated: what the in-process benchmarks (bench.costs, bench.fanout, bench.history)
    measure against. `metrics_prefix`: prometheus-client writes its files in a temporary folder of that
    name, as under the web server (it picks multiprocess mode when first imported)."""
    env = roster_env(RosterOptions(database=database, redis_db=redis_db))
    env["LOG_LEVEL"] = "ERROR"  # django.request logs every 404 as a warning; not what is measured
    recreate_database(database)
    os.environ.update(env)
    if metrics_prefix:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix=metrics_prefix)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def roster_start(opts: RosterOptions, *, logs: Path) -> System:
    recreate_database(opts.database)
    env = roster_env(opts)
    _run([str(opts.bin_dir / "python"), "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env)
    _run(["redis-cli", "-n", str(opts.redis_db), "FLUSHDB"])
    system = System(
        "roster",
        opts.port,
        "bench-key",
        page_size=100,
        totals_capped=False,
        webhook_scheme="roster",
        database=opts.database,
        env=env,
    )
    try:
        web = Service("roster-web", opts.web or web_command(opts), env=env, cwd=ROOT, log=logs / "roster-web.log")
        system.services.append(web)
        worker = Service("roster-celery", worker_command(opts), env=env, cwd=ROOT, log=logs / "roster-celery.log")
        system.services.append(worker)
        wait_http("127.0.0.1", opts.port, "/api/scim/v2.0/", timeout=60, proc=web)
    except Exception:
        system.stop()
        raise
    return system


# The workload deactivates a tenth of its directory within a minute (then deletes those users, which are no
# longer deprovisions). Under the deprovision guard's defaults (10 users, or 20 % of the directory, in 60
# minutes) that is past 10 users but within 20 %: each one is counted against the directory's active users
# and let through. The compare sets those defaults explicitly, so it measures that path, as production with
# the defaults takes it.
GUARD_COUNTING = {"deprovision_guard": {"enabled": True, "max_users": 10, "max_percent": 20, "window_minutes": 60}}


def roster_directory_create(system: System, *, tag: str, webhook_url: str, webhook_secret: str) -> tuple[str, str]:
    """REST first, then the deprovision guard set to its defaults (GUARD_COUNTING); while the REST API has not
    landed, the same service through manage.py."""
    try:
        scim_path, secret = system.directory_create(tag=tag, webhook_url=webhook_url, webhook_secret=webhook_secret)
    except RuntimeError as exc:
        if "answered 404" not in str(exc) and "answered 405" not in str(exc):
            raise
    else:
        roster_guard_counting(system, scim_path.rstrip("/").rpartition("/")[2])
        return scim_path, secret
    code = (
        "import json, django; django.setup()\n"
        "from directories.services import directory_create\n"
        f"d = directory_create(data={{'tenant': 'bench-{tag}', 'product': 'bench', 'type': 'okta-scim-v2',"
        f" 'webhook_url': {webhook_url!r}, 'webhook_secret': {webhook_secret!r}}})\n"
        "print(json.dumps({'id': str(d.id), 'secret': d.scim_secret}))\n"
    )
    out = _run([sys.executable, "-c", code], cwd=ROOT, env=system.env).stdout
    data = json.loads(out.strip().splitlines()[-1])
    return f"/api/scim/v2.0/{data['id']}", data["secret"]


def roster_guard_counting(system: System, directory_id: str) -> None:
    """PATCH the directory's deprovision guard to GUARD_COUNTING. A Roster from before the guard refuses the
    unknown field (400 naming it): it has no guard, nothing to set."""
    client = Client(system.base_url, token=system.api_key)
    resp = client.request("PATCH", f"/api/v1/directory-sync/{directory_id}", GUARD_COUNTING)
    client.close()
    if resp.status == 400 and b"deprovision_guard" in resp.body:
        return
    if resp.status != 200:
        raise RuntimeError(f"{system.name}: the guard's PATCH answered {resp.status}: {resp.body[:300]!r}")
