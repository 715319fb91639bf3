"""Where the processes of one node write their metrics, so that one scrape of /metrics shows the node.

prometheus-client's multiprocess mode keeps each process's counters and histograms in memory-mapped
files under the directory named by PROMETHEUS_MULTIPROC_DIR, which must be set before the library is
first imported in the process (core.metrics imports it lazily for that reason). Roster gives each kind
of server process its own folder under METRICS_DIR (one per node):

- `web/`: the web server's workers. Emptied by `python -m server.web` when it starts, before it imports
  prometheus-client and forks the workers (server/web.py, `metrics_prepare`), so a restarted web server
  starts its counters at zero, which Prometheus reads as a counter reset; a worker that exits leaves its
  files, so its counts stay in the node's totals. (Roster keeps no live gauges in these files: its gauges
  are computed at scrape time, so a worker's exit needs no `mark_process_dead`.)
- `worker-<pid>/`: one Celery worker (config/celery.py, `worker_init`). Kept after the worker exits
  for the same reason, and removed when the web server next starts.

Other processes (`manage.py`, celery beat) keep their metrics in memory and publish none. No Prometheus
import here: the entry points call this before the library may be imported.
"""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
WEB = "web"
WORKER_PREFIX = "worker-"


def default_base() -> Path:
    """METRICS_DIR's default: `var/metrics` in the checkout (the systemd units point it at a tmpfs)."""
    return Path(__file__).resolve().parent.parent / "var" / "metrics"


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs (a process of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def web_prepare(base: Path) -> Path:
    """The web server starts: an empty `web/`, and the folders of Celery workers that are gone removed."""
    for folder in base.glob(f"{WORKER_PREFIX}*"):
        pid = folder.name.removeprefix(WORKER_PREFIX)
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
    return _fresh(base / WEB)


def worker_prepare(base: Path, pid: int) -> Path:
    """A Celery worker starts: its own empty folder."""
    return _fresh(base / f"{WORKER_PREFIX}{pid}")


def _fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def use(folder: Path) -> None:
    """This process (and the processes it forks) writes its metrics to `folder`."""
    os.environ[MULTIPROC_ENV] = str(folder)


def node_files(base: Path) -> list[str]:
    """Every metrics file of the node's processes, live or exited."""
    return sorted(glob.glob(os.path.join(base, "*", "*.db")))


def process_writes_files() -> bool:
    """Whether this process is one of the node's server processes (multiprocess mode)."""
    return bool(os.environ.get(MULTIPROC_ENV))
