"""core.turns: one request at a time runs the application, requests take turns by sender, a flood's refusals
are held."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from core import turns
from core.turns import REFUSED, Turns


class Gate:
    """An application that waits for the test to let each request through, and notes who ran where."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.threads: set[int] = set()
        self.release = threading.Semaphore(0)
        self.started = threading.Semaphore(0)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        self.started.release()
        self.release.acquire()
        self.ran.append(environ["name"])
        self.threads.add(threading.get_ident())
        if environ.get("refuse"):
            environ[REFUSED] = True
        return [environ["name"].encode()]


def call(runner: Turns, key: str, name: str, answers: dict[str, Any], **environ: Any) -> threading.Thread:
    def run() -> None:
        started = time.monotonic()
        answers[name] = (runner(key, {"name": name, **environ}, None), time.monotonic() - started)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def queued(runner: Turns, count: int) -> None:
    deadline = time.monotonic() + 10
    while runner.waiting() < count:
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_waiting_requests_are_taken_round_robin_by_sender_in_order_within_one() -> None:
    app = Gate()
    runner = Turns(app, hold_capacity=0)
    answers: dict[str, Any] = {}
    threads = [call(runner, "flood", "f0", answers)]
    app.started.acquire()  # f0 runs; everything after it waits
    for i in range(1, 6):
        threads.append(call(runner, "flood", f"f{i}", answers))
        queued(runner, i)
    threads.append(call(runner, "quiet", "q0", answers))
    queued(runner, 6)
    threads.append(call(runner, "other", "o0", answers))
    queued(runner, 7)
    for _ in range(8):
        app.release.release()
    for thread in threads:
        thread.join(10)
    # After the request in progress, each sender with requests waiting gets one turn per round.
    assert app.ran == ["f0", "f1", "q0", "o0", "f2", "f3", "f4", "f5"]
    assert {name: answer for name, (answer, _) in answers.items()} == {name: [name.encode()] for name in app.ran}


def test_each_request_runs_on_its_caller_s_thread_one_at_a_time() -> None:
    running = 0
    most = 0
    lock = threading.Lock()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:  # noqa: ANN401
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.002)  # long enough for the other callers to arrive meanwhile
        with lock:
            running -= 1
        return [str(threading.get_ident()).encode()]

    runner = Turns(app, hold_capacity=0)
    answers: dict[str, Any] = {}
    callers: dict[str, int] = {}

    def run(name: str) -> None:
        callers[name] = threading.get_ident()
        answers[name] = runner(name[:2], {"name": name}, None)

    threads = [threading.Thread(target=run, args=(f"k{i % 3}-{i}",)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert most == 1  # never two requests in the application at once
    assert {name: int(answer[0]) for name, answer in answers.items()} == callers  # each on its own thread
    assert runner.waiting() == 0


def test_every_turn_s_thread_uses_the_worker_s_one_database_connection() -> None:
    from django.db import connections

    seen: list[tuple[threading.Thread, Any]] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:  # noqa: ANN401
        seen.append((threading.current_thread(), connections["default"]))
        return [b"ok"]

    runner = Turns(app, hold_capacity=0)
    for _ in range(3):
        thread = threading.Thread(target=runner, args=("k", {}, None))
        thread.start()
        thread.join(10)
    assert len({thread for thread, _ in seen}) == 3
    assert len({id(wrapper) for _, wrapper in seen}) == 1  # three threads, one connection
    lent = seen[0][1]
    assert lent.allow_thread_sharing
    # Outside a turn a thread has no connection of the worker's: it would open its own.
    outside: list[Any] = []
    thread = threading.Thread(target=lambda: outside.append(connections["default"]))
    thread.start()
    thread.join(10)
    assert outside[0] is not lent


def test_an_error_of_the_application_is_raised_to_its_caller_and_the_turns_go_on() -> None:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:  # noqa: ANN401
        if environ["fail"]:
            raise ValueError("the handler failed")
        return [b"ok"]

    runner = Turns(app, hold_capacity=0)
    with pytest.raises(ValueError, match="the handler failed"):
        runner("k", {"fail": True}, None)
    assert runner("k", {"fail": False}, None) == [b"ok"]


def test_a_body_that_is_not_a_list_is_read_and_closed_within_its_turn() -> None:
    log: list[str] = []
    closing = threading.Event()

    class Body:
        def __iter__(self) -> Iterator[bytes]:
            log.append("read")
            yield b"a"
            yield b"b"

        def close(self) -> None:
            closing.wait(10)  # the next request is queued by now
            log.append("closed")

    def app(environ: dict[str, Any], start_response: Any) -> Any:  # noqa: ANN401
        if environ["name"] == "streamed":
            return Body()
        log.append("next")
        return [b"next"]

    runner = Turns(app, hold_capacity=0)
    answers: dict[str, Any] = {}
    first = call(runner, "a", "streamed", answers)
    deadline = time.monotonic() + 10
    while "read" not in log:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    second = call(runner, "b", "next", answers)
    queued(runner, 1)
    closing.set()
    first.join(10)
    second.join(10)
    assert answers["streamed"][0] == [b"a", b"b"]
    assert log == ["read", "closed", "next"]  # the next request ran only once the body was closed


def test_a_forked_child_starts_with_no_turn_taken() -> None:
    import os
    import signal

    app = Gate()
    runner = Turns(app, hold_capacity=0)
    answers: dict[str, Any] = {}
    holder = call(runner, "k", "held", answers)
    app.started.acquire()  # the parent's turn is taken while it forks
    pid = os.fork()
    if pid == 0:  # the child: its own request runs at once, not behind the parent's
        status = 1
        try:
            app.release.release()
            status = 0 if runner("k", {"name": "child"}, None) == [b"child"] else 1
        finally:
            os._exit(status)
    try:
        deadline = time.monotonic() + 10
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail("the child waited for a turn it inherited")
            time.sleep(0.01)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        app.release.release()
        holder.join(10)
    assert answers["held"][0] == [b"held"]


def test_a_refusal_is_held_while_its_sender_has_other_requests_open() -> None:
    app = Gate()
    runner = Turns(app, hold_capacity=4)
    answers: dict[str, Any] = {}
    first = call(runner, "flood", "f0", answers, refuse=True)
    app.started.acquire()
    second = call(runner, "flood", "f1", answers, refuse=True)
    queued(runner, 1)
    app.release.release()
    app.release.release()
    first.join(10)
    second.join(10)
    held, alone = answers["f0"][1], answers["f1"][1]
    assert held >= turns.HOLD_SECONDS  # f1 was open when f0 was refused
    # f1 was the sender's only open request when refused: answered without a hold. The bound is the hold
    # itself (what the test is about), not a speed.
    assert alone < held


def test_a_client_sending_one_request_at_a_time_is_refused_without_a_hold() -> None:
    app = Gate()
    runner = Turns(app, hold_capacity=4)
    held = []
    for i in range(3):
        app.release.release()
        started = time.monotonic()
        runner("one", {"name": f"r{i}", "refuse": True}, None)
        held.append(time.monotonic() - started)
    app.release.release()
    started = time.monotonic()
    runner("one", {"name": "admitted"}, None)
    assert len(app.ran) == 4 and max(held) < turns.HOLD_SECONDS


def test_no_more_than_hold_capacity_refusals_are_held_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    holds_end = threading.Event()
    held: list[str] = []

    def sleep(seconds: float) -> None:  # a hold that lasts until the test ends it
        held.append(threading.current_thread().name)
        holds_end.wait(10)

    monkeypatch.setattr(turns, "sleep", sleep)
    app = Gate()
    runner = Turns(app, hold_capacity=2)
    answers: dict[str, Any] = {}
    blocker = call(runner, "flood", "first", answers)  # keeps the sender's requests open meanwhile
    app.started.acquire()
    threads = [call(runner, "flood", f"f{i}", answers, refuse=True) for i in range(5)]
    queued(runner, 5)
    for _ in range(6):
        app.release.release()
    blocker.join(10)
    deadline = time.monotonic() + 10
    while len(answers) < 4:  # the blocker and the three refusals past the capacity, answered at once
        assert time.monotonic() < deadline
        time.sleep(0.001)
    assert len(held) == 2
    holds_end.set()
    for thread in threads:
        thread.join(10)
    assert len(answers) == 6 and len(held) == 2


def test_hold_capacity_keeps_a_reserve_of_threads() -> None:
    assert turns.hold_capacity(1) == 0
    assert turns.hold_capacity(turns.HOLD_RESERVE) == 0
    assert turns.hold_capacity(64) == 64 - turns.HOLD_RESERVE


def test_the_web_application_keys_turns_by_directory_credential_or_address() -> None:
    from config import wsgi

    app = wsgi.application
    assert app.turns is None  # called directly (no GRANIAN_BLOCKING_THREADS): no turns, it runs as called
    assert wsgi._sender({"HTTP_AUTHORIZATION": "Bearer k1", "REMOTE_ADDR": "10.0.0.1"}) == "kBearer k1"
    assert wsgi._sender({"REMOTE_ADDR": "10.0.0.1"}) == "a10.0.0.1"
    assert wsgi._threads("64") == 64 and wsgi._threads(None) == 1 and wsgi._threads("many") == 1
