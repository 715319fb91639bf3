"""Roster's web server: granian serving `config.wsgi:application`. `python -m server.web [--bind H:P] [--workers N]`.

What it adds to `granian --interface wsgi config.wsgi:application` (docs/deployment.md shows that plain
line with the options below):

- Roster's defaults for granian's options (`DEFAULTS`); any `GRANIAN_*` variable granian knows (see
  `granian --help`) wins over them, and `--bind` / `--workers` win over both.
- The node's metrics folder (core/metricsdir.py) emptied and named in PROMETHEUS_MULTIPROC_DIR before
  anything imports prometheus-client, so /metrics adds up every worker of the node.
- The application imported once per start of workers, before they are forked (`preload`): the workers
  start in milliseconds and share the pages of the code instead of each importing Django. On Linux a
  short-lived zygote imports it and forks the workers (server/zygote.py), so this process, granian's
  supervisor, never holds a copy of their pages; elsewhere this process imports it and granian forks the
  workers from here. Kept for memory: bench/README.md, "Code kept for speed", "Preload before fork" and
  "Workers forked from a zygote".
- granian's own log lines (start, workers, the optional access log) in Roster's LOG_FORMAT.

Signals are granian's: SIGTERM or SIGINT stops accepting, lets every worker finish the requests it has
started (up to GRANIAN_WORKERS_KILL_TIMEOUT seconds), then exits 0; SIGHUP replaces the workers one by
one, from a new zygote that imports the code on disk (so a new release is loaded without a restart; where
there is no zygote, the workers are forked again from this process, with the code it loaded).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

# Threads per web worker. Only one at a time runs the application (core.turns: requests take turns by
# who sent them, the work stays serial); the others let every queued request reach the worker, so a
# flood's requests wait behind a quiet directory's one instead of in front of it, and leave room for the
# refusals held a moment (core.turns.hold_capacity: all but HOLD_RESERVE of these threads).
WEB_THREADS = "64"
# (granian option, its value, the variable that replaces it). One worker per core, at least 2: a
# request is short and CPU-bound, and PostgreSQL's backends and the Celery worker use the cores while a
# web worker waits on a round trip. granian's Rust side holds the clients' connections (kept alive
# between requests) and hands their requests to the worker's threads.
DEFAULTS: tuple[tuple[str, str | None, str], ...] = (
    ("--interface", "wsgi", "GRANIAN_INTERFACE"),
    ("--blocking-threads", WEB_THREADS, "GRANIAN_BLOCKING_THREADS"),
    # HTTP/1.1 only, as identity providers and the TLS proxy in front speak it; no WebSocket route.
    ("--http", "1", "GRANIAN_HTTP"),
    ("--no-ws", None, "GRANIAN_WEBSOCKETS"),
    # Large enough that a head within Roster's own limits (config/requestlimits.py: 8 KiB line, 64
    # fields of 8 KiB) always reaches Roster, which answers past them in the surface's format.
    ("--http1-buffer-size", str(1024 * 1024), "GRANIAN_HTTP1_BUFFER_SIZE"),
    # Identity providers give up after 30 s (Entra) to 60 s (Okta); a stop waits this long for the
    # requests in flight, then kills the worker.
    ("--workers-kill-timeout", "20", "GRANIAN_WORKERS_KILL_TIMEOUT"),
    # A worker that dies (killed, out of memory) is replaced instead of stopping the whole server.
    ("--respawn-failed-workers", None, "GRANIAN_RESPAWN_FAILED_WORKERS"),
)
TARGET = "config.wsgi:application"
JEMALLOC_VARIABLE = "_RJEM_MALLOC_CONF"


def workers_default() -> int:
    return max(2, os.cpu_count() or 1)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m server.web", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--bind",
        default=None,
        help="HOST:PORT to listen on; default: GRANIAN_HOST and GRANIAN_PORT, else 0.0.0.0 and $PORT (8000)",
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="worker processes; default: GRANIAN_WORKERS, else cores (at least 2)"
    )
    args = parser.parse_args(argv)
    if args.workers is not None and args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.bind is not None:
        host, _, port = args.bind.rpartition(":")
        if not host or not port.isdigit():
            parser.error("--bind takes HOST:PORT, e.g. 127.0.0.1:8000")
        args.host, args.port = host.strip("[]"), int(port)
    return args


def granian_arguments(args: argparse.Namespace, environ: dict[str, str] | None = None) -> list[str]:
    """The command line of granian's own `granian` command that this start amounts to."""
    environ = os.environ if environ is None else environ
    argv: list[str] = []
    for option, value, variable in DEFAULTS:
        if variable not in environ:
            argv += [option] if value is None else [option, value]
    if args.bind is not None:
        argv += ["--host", args.host, "--port", str(args.port)]
    else:
        if "GRANIAN_HOST" not in environ:
            argv += ["--host", "0.0.0.0"]  # noqa: S104 - a server; the systemd unit binds 127.0.0.1 behind the proxy
        if "GRANIAN_PORT" not in environ:
            argv += ["--port", environ.get("PORT") or "8000"]
    if args.workers is not None:
        argv += ["--workers", str(args.workers)]
    elif "GRANIAN_WORKERS" not in environ:
        argv += ["--workers", str(workers_default())]
    return [*argv, TARGET]


def metrics_prepare() -> Path:
    """The node's web metrics start from an empty folder (a restart is a counter reset to Prometheus), the
    folders of Celery workers that are gone go, and every process started from here writes under it.
    Before prometheus-client is imported: it reads PROMETHEUS_MULTIPROC_DIR once, on import."""
    from core import metricsdir

    base = Path(os.environ.get("METRICS_DIR") or metricsdir.default_base())
    folder = metricsdir.web_prepare(base)
    metricsdir.use(folder)
    return folder


def preload() -> None:
    """Import, before the fork, what every worker would otherwise import on its own.

    Django imports the URLconf (and with it every view module) on the first request; core.metrics imports
    prometheus-client on the first metric recorded; kombu imports the broker's transport (redis-py) on
    the first publish. Imported here, all of it sits in pages the workers share. `gc.freeze()` then moves
    every object made so far out of the collector's reach, so the workers' collections do not write to
    (and so copy) those pages, as the CPython documentation recommends before a fork. Each worker then
    makes its after-commit webhook kicks from a thread of its own (webhooks.kicker), started at its first.
    """
    from django.urls import get_resolver

    import config.wsgi  # noqa: F401 - Django set up, the application built

    get_resolver().url_patterns  # noqa: B018 - the import side effect is the point
    _broker_transport_load()
    from webhooks.services import draining

    draining.kicks_in_background()  # the kicks after a write leave the request (webhooks.kicker)
    import prometheus_client.multiprocess  # noqa: F401
    from django.conf import settings

    if settings.DB_ENCRYPTION_KEY:  # every worker opens sealed secrets then (core.crypto imports lazily)
        from core import crypto

        crypto.load()

    gc.collect()
    gc.freeze()


# Settings that hold a secret or a credential. Read once into Django's settings by preload(); then taken out
# of the process environment, because granian copies the whole environment into every request's WSGI
# environ (request.META), where an error report or a debugging aid could show it.
SECRET_VARIABLES = (
    "SECRET_KEY",
    "DATABASE_URL",
    "DB_ENCRYPTION_KEY",
    "API_KEYS",
    "ADMIN_ROOT_TOKEN",
    "ADMIN_JWT_SECRET",
    "WEBHOOK_SECRET",
    "METRICS_TOKEN",
    "CELERY_BROKER_URL",
)


def worker_prepare() -> None:
    """What the process the workers are forked from does first (the zygote, server/zygote.py)."""
    preload()
    environment_scrub()


def environment_scrub() -> None:
    """Drop the secret settings from the environment the workers inherit, once preload() has read them. It
    runs where the workers are forked from: in a zygote (granian's supervisor keeps them for the next one),
    or, without one, in the supervisor itself."""
    for name in SECRET_VARIABLES:
        os.environ.pop(name, None)


def _broker_transport_load() -> None:
    """Creating the transport object imports its module; nothing connects."""
    from django.conf import settings

    if not settings.CELERY_BROKER_URL:
        return  # in-process deliveries, no broker
    from config.celery import app

    connection = app.connection_for_write()
    try:
        connection.transport  # noqa: B018 - the import side effect is the point
    finally:
        connection.release()
    # A publish builds an AsyncResult, whose first use finds the result backend by reading every installed
    # package's entry points: done here once, not in each worker at its first write.
    app.backend  # noqa: B018


def logging_use_roster_format() -> None:
    """granian configures logging in its main process and again in each worker, from the dictionary
    `granian.log.LOGGING_CONFIG` (updated by GRANIAN_LOG_CONFIG's file when one is given). Making it
    Roster's own LOGGING plus granian's two loggers keeps one format (LOG_FORMAT) for every line. Built from
    the environment as config/settings.py builds LOGGING, without importing the application (which checks
    the values when it starts)."""
    import granian.log

    from core.logformat import json_from_environ, logging_config

    config = logging_config("json" if json_from_environ() else "plain", os.environ.get("LOG_LEVEL", "INFO"))
    ours = {"handlers": ["console"], "level": "INFO", "propagate": False}
    config["loggers"] = {**config.get("loggers", {}), "_granian": dict(ours), "granian.access": dict(ours)}
    granian.log.LOGGING_CONFIG = config


def environment_defaults(environ: MutableMapping[str, str]) -> None:
    """Variables this start sets unless given, before anything imports granian or the application."""
    environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # granian reads it from here as from its option; the application reads it too (config.wsgi: several
    # threads mean turns, and how many a held refusal may take).
    environ.setdefault("GRANIAN_BLOCKING_THREADS", WEB_THREADS)
    # granian's Rust side allocates with a jemalloc of its own, which keeps a cache of freed blocks per
    # thread: with a worker's threads, 1.3-1.5 MB of each worker's PSS (bench/README.md, "Rate limits").
    # Read when granian's module is loaded.
    environ.setdefault(JEMALLOC_VARIABLE, "tcache:false")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    environment_defaults(os.environ)
    metrics_prepare()
    logging_use_roster_format()
    from server import zygote

    if zygote.subreaper_become():
        zygote.use(prepare=worker_prepare)  # each start of workers imports the app in a zygote
    else:
        worker_prepare()  # imported here, and granian forks the workers from this process
    from granian.cli import cli

    # granian's own command, given Roster's defaults; it reads every GRANIAN_* variable itself.
    cli.main(args=granian_arguments(args), prog_name="granian", auto_envvar_prefix="GRANIAN")
    return 0  # cli.main exits with granian's status


if __name__ == "__main__":
    sys.exit(main())
