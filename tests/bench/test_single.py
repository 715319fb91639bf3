"""bench.single's request loop: every index is sent once, and wrong statuses are counted."""

from __future__ import annotations

import threading

from bench.single import _loop


class FakeClient:
    pass


def test_loop_sends_each_index_once_across_threads_and_counts_wrong_statuses() -> None:
    seen: list[int] = []
    lock = threading.Lock()

    def one(_client: object, i: int) -> int:
        with lock:
            seen.append(i)
        return 500 if i % 10 == 0 else 404

    seconds, wrong = _loop([FakeClient() for _ in range(4)], 100, one, 404)
    assert sorted(seen) == list(range(100))
    assert wrong == 10
    assert seconds > 0
