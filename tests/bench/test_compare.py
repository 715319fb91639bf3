"""bench.compare's CPU by phase: each phase's CPU seconds of each process group, per request."""

from __future__ import annotations

import os
import sys
import time

import pytest

from bench.compare import phase_cpu_hook, phase_cpu_per_request
from bench.stats import PhaseResult

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        sum(range(1000))


def test_each_phase_gets_the_cpu_used_between_its_start_and_end_and_the_inner_hook_is_called() -> None:
    used: dict[str, dict[str, float]] = {}
    calls: list[tuple[str, str]] = []
    hook = phase_cpu_hook({"me": lambda: [os.getpid()]}, used, lambda name, edge: calls.append((name, edge)))
    hook("busy", "start")
    _burn(0.4)
    hook("busy", "end")
    hook("idle", "start")
    time.sleep(0.3)
    hook("idle", "end")
    assert calls == [("busy", "start"), ("busy", "end"), ("idle", "start"), ("idle", "end")]
    assert 0.3 <= used["busy"]["me"] <= 1.5
    assert used["idle"]["me"] < 0.1

    busy = PhaseResult(name="busy", concurrency=1, seconds=1.0, latencies=[0.01] * 100)
    empty = PhaseResult(name="idle", concurrency=1, seconds=1.0)
    per_request = phase_cpu_per_request([busy, empty], used)
    assert per_request == {"busy": {"me": round(used["busy"]["me"] * 1000 / 100, 2)}}
