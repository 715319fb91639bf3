"""Fair turns inside a web worker (contract §4.5, "Fair"): one thread runs Roster's code, and the requests
waiting for it are taken round-robin by who sent them, not in the order they arrived.

A web worker has several threads (granian's blocking threads, server/web.py), so every request a client
has open reaches the worker at once instead of queueing in front of it in arrival order. Each of those
threads hands its request to the worker's one `Runner` thread and waits for the answer: the work stays
serial, as with one thread (no two requests' Python fighting over the interpreter lock, one database
connection per worker), but the runner picks the next request from the sender (a SCIM directory, an API
key, a client address) whose turn it is. A directory with fifteen requests waiting and one with a single
request take turns one by one, so the single request waits for the request in progress at most, whatever
the flood queued.

A refused request (429 from a rate limit) of a sender that has other requests open in the worker is then
held for HOLD_SECONDS after its turn, before its answer goes out, on its own thread (not the runner's).
Its connection stays quiet meanwhile, so a client that ignores Retry-After and re-sends at once on many
connections spends its own CPU and the worker's on about ten refusals a second per connection instead of
thousands. A client sending one request at a time is answered at once: it floods nobody. A hold is far
below Retry-After (whole seconds, at least 1), so a client that waits Retry-After never notices it, and at
most `hold_capacity` requests are held at once, so held ones never take the threads admitted requests need.

Kept for fairness: bench/README.md, "Rate limits" (`bench.fairness`, before and after).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable
from time import sleep
from typing import Any

# The environ key a refused request carries (scim.http.wsgi, restapi.ratelimits) for the Runner to hold it.
REFUSED = "roster.refused"
# How long a refusal is held before its answer goes out.
HOLD_SECONDS = 0.1
# Threads of a worker that holds never take, whatever a flood sends.
HOLD_RESERVE = 8


def hold_capacity(threads: int) -> int:
    """How many of a worker's `threads` may be held at once: all but HOLD_RESERVE, none with few threads."""
    return max(0, threads - HOLD_RESERVE)


class Runner:
    """Runs a WSGI application on one thread of its own for callers on any thread, in turns by sender.

    `__call__` queues the request under its sender's key and waits; the runner thread takes the next request
    from the key whose turn it is (round-robin over the keys with requests waiting, first come first served
    within a key), runs the application and hands the answer back. A body that is not a list is read to its
    end and closed (Django's end of the request) on the runner thread too: nothing of the application runs
    on the caller's thread, so the state it binds to its thread (the database connection, the webhook
    kicks' Redis connection) is what one thread per worker had.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], hold_capacity: int) -> None:
        self.app = app
        self.hold_capacity = hold_capacity
        self._mutex = threading.Lock()
        self._work = threading.Condition(self._mutex)
        self._idle = False  # the runner thread waits for work
        self._pid = 0  # the process whose runner thread is started (no thread survives a fork)
        # key -> its waiting requests, in the order the keys' next turns come (dicts keep their order)
        self._waiting: dict[str, deque[_Request]] = {}
        self._open: dict[str, int] = {}  # key -> its requests between __call__'s start and end
        self._held = 0

    def __call__(self, key: str, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        request = _Request(environ, start_response)
        with self._mutex:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="roster-runner", daemon=True).start()
            queue = self._waiting.get(key)
            if queue is None:
                self._waiting[key] = deque((request,))
            else:
                queue.append(request)
            self._open[key] = self._open.get(key, 0) + 1
            if self._idle:
                self._work.notify()
        try:
            request.done.acquire()
            if request.error is not None:
                raise request.error
            if REFUSED in environ:
                self._hold(key)
            return request.answer
        finally:
            with self._mutex:
                left = self._open[key] - 1
                if left:
                    self._open[key] = left
                else:
                    del self._open[key]

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

    def _run(self) -> None:
        while True:
            with self._mutex:
                while not self._waiting:
                    self._idle = True
                    self._work.wait()
                self._idle = False
                key = next(iter(self._waiting))
                queue = self._waiting.pop(key)
                request = queue.popleft()
                if queue:
                    self._waiting[key] = queue  # to the back of the round
            request.run(self.app)


class _Request:
    __slots__ = ("answer", "done", "environ", "error", "start_response")

    def __init__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> None:
        self.environ = environ
        self.start_response = start_response
        self.answer: list[bytes] = []
        self.error: BaseException | None = None
        self.done = threading.Lock()
        self.done.acquire()  # released once answered

    def run(self, app: Callable[..., Iterable[bytes]]) -> None:
        try:
            body = app(self.environ, self.start_response)
            if isinstance(body, list):
                self.answer = body
            else:
                try:
                    self.answer = list(body)
                finally:
                    close = getattr(body, "close", None)
                    if close is not None:
                        close()
        except BaseException as error:  # noqa: BLE001 - raised again on the caller's thread
            self.error = error
        finally:
            self.done.release()
