"""The container image's entry point: `python -m server.container <process> [arguments…]` (the Dockerfile's
ENTRYPOINT, so `docker run roster web` runs the web server).

| process | runs (with `exec`, so the container's signals reach it) |
|---|---|
| `web` | `python -m server.web`, on 0.0.0.0:$PORT (8000), `WEB_WORKERS` processes (else one per core) |
| `worker` | `python -m server.worker` with the production options of docs/deployment.md |
| `beat` | `celery -A config beat`, its schedule file under /tmp (the image's only writable folder) |
| `migrate` | `manage.py migrate --noinput` |
| `manage` | `manage.py <command…>`, e.g. `manage doctor`, `manage apikey create --name app` |
| `healthcheck` | the image's HEALTHCHECK: GET /healthz of the web server running in this container |

Arguments after `web`, `worker`, `beat` and `migrate` are added to the command, so `worker --concurrency 8`
overrides the default it names.

Before it starts a process, the entry point loads Roster's settings: a required setting that is missing
(SECRET_KEY unless DEBUG, ADMIN_JWT_SECRET with ADMIN_ROOT_TOKEN...) stops the container with one line
naming it, exit status 78 (EX_CONFIG), instead of a traceback. The container also requires DATABASE_URL
(the built-in SQLite file would sit in the read-only image and vanish with the container), and the worker
and beat require CELERY_BROKER_URL (they have nothing to do without a broker).
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

PROCESSES = ("web", "worker", "beat", "migrate", "manage", "healthcheck")
ROOT = Path(__file__).resolve().parent.parent
# sysexits.h: a configuration error, told apart from a crash by whoever restarts the container.
EX_CONFIG = 78
EX_USAGE = 2

# The worker line of docs/deployment.md. Pool and concurrency are left to CELERY_WORKER_POOL and
# CELERY_WORKER_CONCURRENCY (threads, 4), so they can be changed from the environment like every setting.
WORKER_OPTIONS = ("--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat")
# Beat remembers when each periodic task last ran in this file; on a restart it starts afresh, which only
# runs each sweep once at start.
BEAT_SCHEDULE = "/tmp/celerybeat-schedule"  # noqa: S108 - the container's tmpfs, one beat per container


class SettingMissing(Exception):
    """A setting the process needs is absent or invalid; the message names it."""


def usage() -> str:
    return f"usage: python -m server.container {{{','.join(PROCESSES)}}} [arguments…]"


def command(process: str, args: list[str], environ: dict[str, str]) -> list[str]:
    """The command line that `process` runs (argv, the interpreter first)."""
    python = sys.executable
    manage = str(ROOT / "manage.py")
    if process == "web":
        workers = _web_workers(environ)
        return [python, "-m", "server.web", *(["--workers", workers] if workers else []), *args]
    if process == "worker":
        return [python, "-m", "server.worker", *WORKER_OPTIONS, *args]
    if process == "beat":
        return [python, "-m", "celery", "-A", "config", "--quiet", "beat", "-l", "INFO", "-s", BEAT_SCHEDULE, *args]
    if process == "migrate":
        return [python, manage, "migrate", "--noinput", *args]
    if process == "manage":
        return [python, manage, *args]
    raise ValueError(process)


def _web_workers(environ: dict[str, str]) -> str | None:
    value = environ.get("WEB_WORKERS", "").strip()
    if not value:
        return None
    if not value.isascii() or not value.isdigit() or int(value) < 1:
        raise SettingMissing(f"WEB_WORKERS must be a whole number of processes, at least 1 (it is {value!r}).")
    return str(int(value))


def settings_check(process: str, environ: dict[str, str]) -> None:
    """Stop before the process starts when a setting it needs is missing (the message names it)."""
    if not environ.get("DATABASE_URL"):
        raise SettingMissing(
            "Setting DATABASE_URL is required in the container (e.g. postgres://roster:PASSWORD@db:5432/roster): "
            "the built-in SQLite file would sit in the read-only image and vanish with the container."
        )
    if process in ("worker", "beat") and not environ.get("CELERY_BROKER_URL"):
        raise SettingMissing(
            f"Setting CELERY_BROKER_URL is required by the {process} (e.g. redis://redis:6379/0): "
            "without a broker it has nothing to do."
        )
    # Roster's own rules (config/settings.py): loading the settings raises ImproperlyConfigured naming the
    # setting. Only the settings module is imported here; the process imports the rest itself.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        settings.INSTALLED_APPS  # noqa: B018 - the first access imports the settings module
    except ImproperlyConfigured as exc:
        raise SettingMissing(str(exc)) from None


# --- the health check ------------------------------------------------------------------------------------


def web_server_arguments(proc: Path = Path("/proc")) -> list[str] | None:
    """The arguments after `-m server.web` of the web server running in this container, or None when the
    container runs another process (a worker, beat: they have no HTTP port to probe)."""
    for cmdline in proc.glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue  # the process ended meanwhile
        words = [word.decode(errors="replace") for word in argv if word]
        for i in range(len(words) - 1):
            if words[i] == "-m" and words[i + 1] == "server.web":
                return words[i + 2 :]
    return None


def probe_address(web_args: list[str], environ: dict[str, str]) -> tuple[str, int, str]:
    """(address to connect to, port, Host header) of the web server started with `web_args`: the address
    server.web binds (its --bind, else GRANIAN_HOST / GRANIAN_PORT, else 0.0.0.0:$PORT), and a Host that
    ALLOWED_HOSTS accepts, so the probe is not refused as a stranger's request."""
    from server import web

    args = web.parse(web_args)
    if args.bind is not None:
        host, port = args.host, args.port
    else:
        host = environ.get("GRANIAN_HOST") or "0.0.0.0"  # noqa: S104 - what server.web binds
        port = int(environ.get("GRANIAN_PORT") or environ.get("PORT") or "8000")
    if host in ("0.0.0.0", ""):  # noqa: S104
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    allowed = [name.strip() for name in environ.get("ALLOWED_HOSTS", "").split(",") if name.strip()]
    header = allowed[0].lstrip(".") if allowed and allowed[0] != "*" else "localhost"
    return host, port, header


def healthcheck(environ: dict[str, str], timeout: float = 4.0) -> int:
    web_args = web_server_arguments()
    if web_args is None:
        print("no web server in this container: nothing to probe")
        return 0
    host, port, header = probe_address(web_args, environ)
    address = f"[{host}]" if ":" in host else host
    request = urllib.request.Request(f"http://{address}:{port}/healthz", headers={"Host": header})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - a fixed http URL
            print(f"/healthz: {response.status}")
            return 0
    except urllib.error.HTTPError as exc:
        print(f"/healthz: {exc.code}")
    except OSError as exc:
        print(f"/healthz: {exc}")
    return 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in PROCESSES:
        print(usage(), file=sys.stderr)
        return EX_USAGE
    process, args = argv[0], argv[1:]
    environ = dict(os.environ)
    if process == "healthcheck":
        return healthcheck(environ)
    try:
        settings_check(process, environ)
        line = command(process, args, environ)
    except SettingMissing as exc:
        print(f"Roster {process} is not configured: {exc}", file=sys.stderr)
        return EX_CONFIG
    sys.stdout.flush()
    sys.stderr.flush()
    os.chdir(ROOT)
    os.execv(line[0], line)  # noqa: S606 - this process becomes Roster's: signals reach it directly


if __name__ == "__main__":
    sys.exit(main())
