"""One thread per process that makes the after-commit kicks, so a SCIM write never waits for the broker.

With a Redis broker a kick is one round trip (webhooks.services.draining): cheap, but paid inside the
identity provider's request, and once per write. The web server (server/web.py) hands its kicks to a
`Kicker` instead: the request only adds the (directory, target) key to a set in memory and wakes the
thread, which makes one kick per key for everything handed to it since its last pass. Under load, the
writes of one directory that commit while a kick is in flight share the next one.

Why nothing is stranded: a key handed over after a commit is kicked after that commit (the thread takes
the set, then kicks), which is all the drain's protocol asks of a kick (see draining). A process that dies
between the commit and the kick leaves its events `pending` in the outbox, where the sweep finds them, as
it does for a broker that was down. At exit, whatever is still handed over is kicked (`flush`): at
`atexit` in a process that ends normally, and at multiprocessing's exit function in the web server's
workers, which granian starts as multiprocessing children and which leave through `os._exit`, skipping
`atexit`. Without that, a worker stopped by a rolling restart could die between a kick's SET and its
publish and leave the drain key held by no drain: the directory's webhooks then waited for the key to
expire (over a minute) and the sweep.

Kept for speed: bench/README.md, "Code kept for speed", "Kicks off the request path".
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing.util
import os
import threading
import time
from collections.abc import Callable, Hashable

logger = logging.getLogger("roster.webhooks")

FLUSH_SECONDS = 5.0  # how long an exiting process waits for its last kicks
# Seconds the thread waits, once woken, for more keys before it kicks: the writes of a busy directory
# that commit within it share one kick. Small beside the drain's own wait before it claims (GATHER in
# webhooks.services.draining, 30 ms), so a webhook leaves about as soon as before.
GATHER = 0.01


class Kicker:
    """Calls `kick(key)` from a daemon thread for every key handed over, once per key and pass."""

    def __init__(self, kick: Callable[[Hashable], object]) -> None:
        self._kick = kick
        self._lock = threading.Lock()
        self._handed: dict[Hashable, None] = {}  # insertion-ordered: keys are kicked in the order handed
        self._wake = threading.Condition(self._lock)
        self._busy = False
        self._pid = 0  # the process the thread runs in: a forked child starts its own

    def hand(self, key: Hashable) -> None:
        """Queue a kick of `key` (a no-op when it is already queued). Never raises, never blocks on I/O."""
        with self._lock:
            if self._pid != os.getpid():
                self._start()
            self._handed[key] = None
            self._wake.notify_all()

    def flush(self, timeout: float = FLUSH_SECONDS) -> bool:
        """Wait until every key handed over so far has been kicked; False if `timeout` ran out first."""
        with self._lock:
            if self._pid != os.getpid():
                return not self._handed
            return self._wake.wait_for(lambda: not self._handed and not self._busy, timeout)

    def _start(self) -> None:
        self._pid = os.getpid()
        self._handed = {}  # keys inherited through a fork belong to the parent, which kicks them
        self._busy = False
        # A multiprocessing child (granian's workers) skips atexit: its exit function runs this instead.
        multiprocessing.util.Finalize(self, self.flush, exitpriority=10)
        threading.Thread(target=self._run, name="roster-kicker", daemon=True).start()

    def _run(self) -> None:
        while True:
            with self._lock:
                self._wake.wait_for(lambda: bool(self._handed))
            time.sleep(GATHER)
            with self._lock:
                keys, self._handed = list(self._handed), {}
                self._busy = True
            try:
                for key in keys:
                    try:
                        self._kick(key)
                    except Exception:  # the kick never raises; this thread must outlive a bug in it
                        logger.exception("webhook kick failed; the events stay pending for the sweep")
            finally:
                with self._lock:
                    self._busy = False
                    self._wake.notify_all()


_exiting: list[Kicker] = []


def flush_at_exit(kicker: Kicker) -> None:
    """Kick what is still handed over when the process exits normally (a management command, a worker)."""
    if not _exiting:
        atexit.register(lambda: [k.flush() for k in _exiting])
    if kicker not in _exiting:
        _exiting.append(kicker)
