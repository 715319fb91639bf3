"""A Celery worker started without the `celery` command line: `python -m server.worker`.

`celery -A config worker` runs the same worker. Why this exists: memory. The `celery` program imports
all of its subcommands before it runs one, and its `amqp` shell brings prompt_toolkit, pygments and
wcwidth into every worker. Kept for memory: bench/README.md, "Code kept for speed", "Celery worker
without the celery command". Delete it when `celery -A config worker` no longer loads those (compare the
worker's PSS in `python -m bench.compare`'s per-process split) and use that command instead. The options
are the worker options Roster's deployment uses; anything else comes from the CELERY_* settings, as with
the `celery` command.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

POOLS = ("threads", "prefork", "solo")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m server.worker", description=__doc__.splitlines()[0])
    # No defaults here: like `celery worker`, an option left out comes from CELERY_WORKER_POOL and
    # CELERY_WORKER_CONCURRENCY (config/settings.py), so both commands start the same worker.
    parser.add_argument("-P", "--pool", choices=POOLS, default=None, help="default: CELERY_WORKER_POOL (threads)")
    parser.add_argument(
        "-c", "--concurrency", type=int, default=None, help="threads or processes; default: CELERY_WORKER_CONCURRENCY"
    )
    parser.add_argument("-l", "--loglevel", type=str.upper, choices=LOG_LEVELS, default="INFO", help="default: INFO")
    parser.add_argument("-n", "--hostname", default=None, help="node name; default: celery@<host name>")
    parser.add_argument("-Q", "--queues", default=None, help="comma-separated queues; default: all")
    # Cluster chatter between workers, as `celery worker` has them (on unless turned off).
    parser.add_argument("--without-gossip", action="store_true")
    parser.add_argument("--without-mingle", action="store_true")
    parser.add_argument("--without-heartbeat", action="store_true")
    args = parser.parse_args(argv)
    if args.concurrency is not None and args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    return args


def build(args: argparse.Namespace) -> Any:
    """The worker (celery.apps.worker.Worker, what `celery worker` builds), not yet started."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import logging

    from config.celery import app
    from core.logformat import json_from_environ

    return app.Worker(
        pool_cls=args.pool or app.conf.worker_pool,
        concurrency=args.concurrency or app.conf.worker_concurrency,
        loglevel=logging.getLevelName(args.loglevel),
        hostname=args.hostname,
        queues=args.queues.split(",") if args.queues else None,
        without_gossip=args.without_gossip,
        without_mingle=args.without_mingle,
        without_heartbeat=args.without_heartbeat,
        # The banner is printed, not logged: with LOG_FORMAT=json every line of the output is a JSON object.
        quiet=json_from_environ(),
    )


def main(argv: list[str] | None = None) -> int:
    worker = build(parse(argv))
    worker.start()  # returns after a warm (SIGTERM) or cold shutdown
    return worker.exitcode or 0


if __name__ == "__main__":
    sys.exit(main())
