"""Fair turns inside a web worker (contract §4.5, "Fair"): one request at a time runs Roster's code, and
the requests waiting for it are taken round-robin by who sent them, not in the order they arrived.

A web worker has several threads (granian's blocking threads, server/web.py), so every request a client
has open reaches the worker at once instead of queueing in front of it in arrival order. Each thread runs
its own request, but only in its turn: the work stays serial, as with one thread (no two requests' Python
fighting over the interpreter lock, one database connection per worker, lent to the thread whose turn it
is), and when a request ends the turn goes to the sender (a SCIM directory, an API key, a client address)
whose turn it is. A directory with fifteen requests waiting and one with a single request take turns one
by one, so the single request waits for the request in progress at most, whatever the flood queued. A
request that finds the worker idle runs at once on its own thread: no thread hands it to another.

A refused request (429 from a rate limit) of a sender that has other requests open in the worker is then
held for HOLD_SECONDS after its turn, before its answer goes out. Its connection stays quiet meanwhile,
so a client that ignores Retry-After and re-sends at once on many connections spends its own CPU and the
worker's on about ten refusals a second per connection instead of thousands. A client sending one
request at a time is answered at once: it floods nobody. A hold is far below Retry-After (whole seconds,
at least 1), so a client that waits Retry-After never notices it, and at most `hold_capacity` requests are
held at once, so held ones never take the threads admitted requests need.

Kept for fairness: bench/README.md, "Rate limits" (`bench.fairness`, before and after).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable
from time import sleep
from typing import Any

from django.db import connections

# The environ key a refused request carries (scim.http.wsgi, restapi.ratelimits) for Turns to hold it.
REFUSED = "roster.refused"
# How long a refusal is held before its answer goes out.
HOLD_SECONDS = 0.1
# Threads of a worker that holds never take, whatever a flood sends.
HOLD_RESERVE = 8


def hold_capacity(threads: int) -> int:
    """How many of a worker's `threads` may be held at once: all but HOLD_RESERVE, none with few threads."""
    return max(0, threads - HOLD_RESERVE)


class Turns:
    """Runs a WSGI application for callers on any thread, one at a time, in turns by sender.

    A caller finding no request running runs its own at once, on its own thread. Otherwise it waits under
    its sender's key, and the thread whose request ends hands the turn to the next waiting request: round-
    robin over the keys with requests waiting, first come first served within a key. A body that is not a
    list is read to its end and closed (Django's end of the request) within the turn.

    What the application binds to its thread is the worker's, not the thread's: the turn's thread uses the
    worker's one set of database connections (`_Shared`), so a worker keeps one connection per database
    however many threads take turns, as one thread per worker had.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], hold_capacity: int) -> None:
        self.app = app
        self.hold_capacity = hold_capacity
        self._mutex = threading.Lock()
        self._shared = _Shared()
        self._fresh()
        os.register_at_fork(after_in_child=self._fresh)

    def _fresh(self) -> None:
        """No turn taken, none waiting (a forked child inherits no thread of its parent's)."""
        self._mutex = threading.Lock()
        self._running = False
        # key -> its waiting requests' locks, in the order the keys' next turns come (dicts keep their order)
        self._waiting: dict[str, deque[threading.Lock]] = {}
        self._open: dict[str, int] = {}  # key -> its requests between __call__'s start and end
        self._held = 0
        self._shared = _Shared()

    def __call__(self, key: str, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        turn: threading.Lock | None = None
        with self._mutex:
            self._open[key] = self._open.get(key, 0) + 1
            if self._running:
                turn = threading.Lock()
                turn.acquire()
                queue = self._waiting.get(key)
                if queue is None:
                    self._waiting[key] = deque((turn,))
                else:
                    queue.append(turn)
            else:
                self._running = True
        try:
            if turn is not None:
                turn.acquire()  # released by the request whose turn ends before ours
            try:
                answer = self._run(environ, start_response)
            finally:
                self._pass()
            if REFUSED in environ:
                self._hold(key)
            return answer
        finally:
            with self._mutex:
                left = self._open[key] - 1
                if left:
                    self._open[key] = left
                else:
                    del self._open[key]

    def _run(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with self._shared:
            body = self.app(environ, start_response)
            if isinstance(body, list):
                return body
            try:
                return list(body)
            finally:
                close = getattr(body, "close", None)
                if close is not None:
                    close()

    def _pass(self) -> None:
        """The turn goes to the next waiting request, or lapses."""
        with self._mutex:
            if not self._waiting:
                self._running = False
                return
            key = next(iter(self._waiting))
            queue = self._waiting.pop(key)
            turn = queue.popleft()
            if queue:
                self._waiting[key] = queue  # to the back of the round
        turn.release()

    def waiting(self) -> int:
        """Requests queued for their turn (not counting the one running)."""
        with self._mutex:
            return sum(len(queue) for queue in self._waiting.values())

    def _hold(self, key: str) -> None:
        with self._mutex:
            if self._open[key] < 2 or self._held >= self.hold_capacity:
                return
            self._held += 1
        try:
            sleep(HOLD_SECONDS)
        finally:
            with self._mutex:
                self._held -= 1


class _Shared:
    """The worker's database connections, lent to the thread whose turn it is. Django keeps connections
    per thread; the first turn's thread opens them as usual, and they are marked shareable (Django then
    lets another thread use them) and lent to every later turn's thread for the turn's length. Only one
    thread holds the turn, so only one uses them at a time."""

    def __init__(self) -> None:
        self.wrappers: dict[str, Any] | None = None

    def __enter__(self) -> None:
        if self.wrappers is None:
            self.wrappers = {alias: connections[alias] for alias in connections}
            for wrapper in self.wrappers.values():
                wrapper.inc_thread_sharing()
            return
        local = connections._connections
        for alias, wrapper in self.wrappers.items():
            setattr(local, alias, wrapper)

    def __exit__(self, *exc: object) -> None:
        local = connections._connections
        for alias in self.wrappers or ():
            try:
                delattr(local, alias)
            except AttributeError:
                pass
