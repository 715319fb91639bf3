"""core.turns: one thread runs the application, requests take turns by sender, a flood's refusals are held."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from core import turns
from core.turns import REFUSED, Runner


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


def call(runner: Runner, key: str, name: str, answers: dict[str, Any], **environ: Any) -> threading.Thread:
    def run() -> None:
        started = time.monotonic()
        answers[name] = (runner(key, {"name": name, **environ}, None), time.monotonic() - started)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def queued(runner: Runner, count: int) -> None:
    deadline = time.monotonic() + 10
    while runner.waiting() < count:
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_waiting_requests_are_taken_round_robin_by_sender_in_order_within_one() -> None:
    app = Gate()
    runner = Runner(app, hold_capacity=0)
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


def test_the_application_runs_on_one_thread_that_is_not_the_caller_s() -> None:
    app = Gate()
    runner = Runner(app, hold_capacity=0)
    for _ in range(5):
        app.release.release()
    answers: dict[str, Any] = {}
    for thread in [call(runner, f"k{i}", f"r{i}", answers) for i in range(5)]:
        thread.join(10)
    assert len(answers) == 5 and len(app.threads) == 1
    assert threading.get_ident() not in app.threads


def test_an_error_of_the_application_is_raised_to_its_caller_and_the_runner_goes_on() -> None:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:  # noqa: ANN401
        if environ["fail"]:
            raise ValueError("the handler failed")
        return [b"ok"]

    runner = Runner(app, hold_capacity=0)
    with pytest.raises(ValueError, match="the handler failed"):
        runner("k", {"fail": True}, None)
    assert runner("k", {"fail": False}, None) == [b"ok"]


def test_a_body_that_is_not_a_list_is_read_and_closed_on_the_runner_s_thread() -> None:
    seen: list[tuple[str, int]] = []

    class Body:
        def __iter__(self) -> Iterator[bytes]:
            seen.append(("read", threading.get_ident()))
            yield b"a"
            yield b"b"

        def close(self) -> None:
            seen.append(("closed", threading.get_ident()))

    runner = Runner(lambda environ, start_response: Body(), hold_capacity=0)
    assert runner("k", {}, None) == [b"a", b"b"]
    assert [what for what, _ in seen] == ["read", "closed"]
    assert threading.get_ident() not in {thread for _, thread in seen}


def test_a_new_process_starts_its_own_runner_thread() -> None:
    runner = Runner(lambda environ, start_response: [threading.current_thread().name.encode()], hold_capacity=0)
    assert runner("k", {}, None) == [b"roster-runner"]
    before = {t.ident for t in threading.enumerate() if t.name == "roster-runner"}
    runner._pid = -1  # what a forked child sees: the thread it inherited the object from is not there
    assert runner("k", {}, None) == [b"roster-runner"]
    assert len({t.ident for t in threading.enumerate() if t.name == "roster-runner"} - before) == 1


def test_a_refusal_is_held_while_its_sender_has_other_requests_open() -> None:
    app = Gate()
    runner = Runner(app, hold_capacity=4)
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
    runner = Runner(app, hold_capacity=4)
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
    runner = Runner(app, hold_capacity=2)
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
    assert app.runner is None  # called directly (no GRANIAN_BLOCKING_THREADS): the caller's thread runs it
    assert wsgi._sender({"HTTP_AUTHORIZATION": "Bearer k1", "REMOTE_ADDR": "10.0.0.1"}) == "kBearer k1"
    assert wsgi._sender({"REMOTE_ADDR": "10.0.0.1"}) == "a10.0.0.1"
    assert wsgi._threads("64") == 64 and wsgi._threads(None) == 1 and wsgi._threads("many") == 1
