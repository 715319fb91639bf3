"""One total deadline per webhook attempt, enforced by a single watchdog thread per process.

A socket timeout bounds each wait of an attempt, not the attempt: a receiver that sends a byte just
before each timeout would hold it forever. `deadline_start` registers the attempt's connection with
the watchdog, which sleeps until the earliest deadline and shuts down the socket of an attempt still
running past it; that wakes the attempt's thread out of recv() with an error (webhooks.transport).
"""

from __future__ import annotations

import heapq
import http.client
import itertools
import socket
import threading
import time


class Deadline:
    """One attempt's deadline. `cancel` and the watchdog's `cut` take the same lock, so a deadline that
    passes just as the attempt ends can never cut a connection already handed to the next attempt."""

    __slots__ = ("at", "conn", "done", "fired")

    def __init__(self, at: float, conn: http.client.HTTPConnection) -> None:
        self.at = at
        self.conn = conn
        self.done = False
        self.fired = False

    def cut(self) -> None:
        with _watch_lock:
            if self.done:
                return
            self.fired = True
            sock = self.conn.sock
            if sock is None:
                return  # still connecting: the socket timeout bounds that
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the reader blocked in recv() on the attempt's thread
            except OSError:
                pass

    def cancel(self) -> None:
        with _watch_lock:
            self.done = True


_watch_lock = threading.Lock()
_watch_wake = threading.Condition(_watch_lock)
_watch_heap: list[tuple[float, int, Deadline]] = []
_watch_seq = itertools.count()
_watch_thread: threading.Thread | None = None


def _watch() -> None:
    """The process's one watchdog: sleeps until the earliest deadline, cuts the attempts past it."""
    while True:
        with _watch_wake:
            while _watch_heap and _watch_heap[0][2].done:
                heapq.heappop(_watch_heap)  # finished in time: forget it
            if not _watch_heap:
                _watch_wake.wait()
                continue
            wait = _watch_heap[0][0] - time.monotonic()
            if wait > 0:
                _watch_wake.wait(wait)
                continue
            _at, _seq, due = heapq.heappop(_watch_heap)
        due.cut()


def deadline_start(timeout: float, conn: http.client.HTTPConnection) -> Deadline:
    global _watch_thread
    deadline = Deadline(time.monotonic() + timeout, conn)
    with _watch_wake:
        # A forked child (Celery prefork) inherits no running thread: start one there too.
        if _watch_thread is None or not _watch_thread.is_alive():
            _watch_thread = threading.Thread(target=_watch, name="roster-webhook-deadline", daemon=True)
            _watch_thread.start()
        heapq.heappush(_watch_heap, (deadline.at, next(_watch_seq), deadline))
        if _watch_heap[0][2] is deadline:
            _watch_wake.notify()  # the new deadline is the earliest: the watchdog must wake sooner
    return deadline
