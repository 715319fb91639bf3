# ruff: noqa: N999  (gunicorn looks for a file named gunicorn.conf.py)
"""Production gunicorn settings: `gunicorn -c server/gunicorn.conf.py config.wsgi:application`.

Why it exists: gunicorn's defaults (the `sync` worker, one process, no preload) fit Roster badly. Every
knob can be overridden from the environment (GUNICORN_*), or on the command line, which wins over this
file. The defaults follow what was measured on the project's 2-core machine; the gains are in
bench/README.md: the worker class in "Session 7 results" and "Session 8 results", the master's
preload and `gc.freeze()` in "Earlier change: gunicorn preload and gc.freeze", the broker transport
loaded before the fork in "Session 5 results". The file stays as long as gunicorn serves Roster; a hook
goes when its measurement no longer shows a gain (each says what it does).
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from core import metricsdir
from core.logformat import json_from_environ


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


# One request at a time per process (a Roster request is short and CPU-bound: parse, 1-3 queries,
# render), keeping clients' connections open between their requests: server/keepalive_worker.py.
# gunicorn's `sync` closes every connection after its response, so each request paid for a new TCP
# connection. Measured against `sync` in bench/README.md (session 7; gthread in sessions 3 and 5).
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "server.keepalive_worker.KeepAliveWorker")
threads = _int("GUNICORN_THREADS", 1)  # only used by gthread
# Connections a worker keeps open at once (this worker; for gthread, raise it: its default is 1000).
# 4 per worker keeps 8 busy clients connected on 2 workers; with 1, a worker keeps a connection only
# while no other client waits, and under load every request reconnects. Kept connections are faster,
# with longer write tails (bench/README.md, session 8). The price of keeping more clients than one: a
# client whose worker is busy with another client's request waits for it, even when another worker is
# idle, and a descheduled worker holds up every client it keeps.
worker_connections = _int("GUNICORN_WORKER_CONNECTIONS", 4)
# One worker per core. The cores are shared with PostgreSQL's backends and the Celery worker, which run
# while a web worker waits on a database round trip, so a spare worker (cores + 1, the earlier default)
# only added context switches and memory (2 workers x 4 connections against 3 x 3: bench/README.md,
# "Session 13"). With PostgreSQL on another host, or cores shared with other busy processes (each
# process gets its share of the CPU: 3 workers kept more than 2 there), try GUNICORN_WORKERS = cores + 1.
workers = _int("GUNICORN_WORKERS", max(2, multiprocessing.cpu_count()))

bind = os.environ.get("GUNICORN_BIND") or f"0.0.0.0:{_int('PORT', 8000)}"

# Import Django once in the master and fork: workers start in milliseconds and share the code pages.
# Safe because Django opens no database connection at import time.
preload_app = True

# Identity providers give up after ~60 s (Okta) or 30 s (Entra); a request still running at 30 s is
# stuck, and the worker is recycled rather than left hanging.
timeout = _int("GUNICORN_TIMEOUT", 30)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 20)
# Seconds an idle connection is kept. Okta and Entra send bursts of requests, then go quiet; a quiet
# client's place is better given to another one (a full worker also closes idle ones on demand).
keepalive = _int("GUNICORN_KEEPALIVE", 2)

# Recycling workers caps slow memory growth; off by default (0) because a restart costs a re-fork and
# its first requests reopen the database connection. Set e.g. GUNICORN_MAX_REQUESTS=20000 if needed.
max_requests = _int("GUNICORN_MAX_REQUESTS", 0)
max_requests_jitter = _int("GUNICORN_MAX_REQUESTS_JITTER", max_requests // 10)

# Bounded request line and headers: SCIM filters sit in the query string, 8 KiB is plenty. A request
# past them is refused before the app runs: 414 (line) or 431 (headers), in the surface's format
# (server/keepalive_worker.py, `post_worker_init` below for gunicorn's own worker classes).
limit_request_line = 8190
limit_request_fields = 100


def post_worker_init(worker: object) -> None:
    """gunicorn renders the refusals of the limits above as HTML pages, from the worker's `handle_error`,
    and has no setting for their format. Roster's worker answers them in the surface's format itself;
    a gunicorn worker class (GUNICORN_WORKER_CLASS=sync or gthread) gets the same method here, on the
    instance, before it serves anything. Those classes do not keep the start of the request line, so
    their answer is the JSON object that both SCIM and envelope clients read (see keepalive_worker)."""
    import types

    from server.keepalive_worker import KeepAliveWorker, error_handle

    if not isinstance(worker, KeepAliveWorker):
        worker.handle_error = types.MethodType(error_handle, worker)  # type: ignore[attr-defined]


# The heartbeat file lives in memory, not on a possibly slow overlay disk (containers).
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None  # noqa: S108 - a tmpfs, not a shared /tmp file

# No access log by default: SCIM request lines carry `filter=userName eq "…"`, and userName values are
# personal data (RFC 7644 §7.5.2). Set GUNICORN_ACCESS_LOG=- to get one.
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")


def when_ready(server: object) -> None:
    """Runs in the master after the app is preloaded and before any worker is forked.

    Django imports the URLconf (and with it every view module) lazily on the first request, so
    without this each worker would import them on its own and keep a private copy. Importing them
    here puts them in pages shared by all workers. `gc.freeze()` then moves every object made so far
    out of the collector's reach, so the workers' garbage collections do not write to (and copy) the
    shared pages (the CPython docs recommend exactly this before fork).
    """
    import gc

    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - the import side effect is the point
    _broker_transport_load()
    # core.metrics imports prometheus-client on the first metric recorded, in a worker: imported here, its
    # pages are shared (about 0.4 MB a worker). PROMETHEUS_MULTIPROC_DIR is set by now (below).
    import prometheus_client.multiprocess  # noqa: F401

    gc.collect()
    gc.freeze()


def _broker_transport_load() -> None:
    """Import the broker's transport module now, in the master.

    kombu imports it on a process's first publish, so each worker would otherwise import it on its
    first webhook kick, privately: for Redis that is redis-py (measured with `python -m bench.memgrowth`,
    bench/README.md). Creating the transport object imports it; nothing connects.
    """
    from django.conf import settings

    if not settings.CELERY_BROKER_URL:
        return  # in-process deliveries, no broker
    from config.celery import app

    connection = app.connection_for_write()
    try:
        connection.transport  # noqa: B018 - the import side effect is the point
    finally:
        connection.release()


# Behind a TLS-terminating proxy on the same host; widen with FORWARDED_ALLOW_IPS.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")


# --- the node's metrics and log format (contract §7.1) --------------------------------------------------
#
# The workers write their metrics under METRICS_DIR/web (core/metricsdir.py), where /metrics, served by
# any of them, reads them together with the Celery workers' of this node. prometheus-client reads the
# variable when it is first imported, in a worker: set here, before the app is loaded.
_metrics_base = Path(os.environ.get("METRICS_DIR") or metricsdir.default_base())
_metrics_web = _metrics_base / metricsdir.WEB
metricsdir.use(_metrics_web)


def on_starting(server: object) -> None:
    """The master starts: the node's web metrics start from an empty folder (a restart is a counter reset
    to Prometheus), and the folders of Celery workers that are gone go too."""
    metricsdir.web_prepare(_metrics_base)


def child_exit(server: object, worker: object) -> None:
    """A worker exited: its counters stay in the node's totals; its live gauges, if any, are marked dead."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid, str(_metrics_web))  # type: ignore[attr-defined]


# LOG_FORMAT=json: gunicorn's own lines (start, workers, refused requests, the access log when it is on) are
# JSON objects too, in the application's format, so one log stream parses line by line.
if json_from_environ():
    logger_class = "server.gunicorn_logger.JsonLogger"
