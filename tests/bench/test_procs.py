"""CPU accounting of the benchmark: user and kernel time per process group, read from /proc."""

from __future__ import annotations

import os
import sys
import time

import pytest

from bench.procs import CpuMeter, cpu_split

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _burn_user(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        sum(range(1000))


def _burn_kernel(seconds: float) -> None:
    # Small reads of /dev/zero: nearly all of their time is spent in the kernel.
    end = time.process_time() + seconds
    with open("/dev/zero", "rb", buffering=0) as f:
        while time.process_time() < end:
            f.read(1 << 16)


def test_meter_splits_user_and_kernel_time_of_a_group() -> None:
    meter = CpuMeter({"me": lambda: [os.getpid()]})
    meter.start()
    _burn_user(0.3)
    _burn_kernel(0.3)
    used = meter.stop()
    assert 0.5 <= used["me"] <= 2.0
    assert 0.1 <= meter.kernel["me"] < used["me"]


def test_a_process_that_is_gone_counts_nothing() -> None:
    gone = 2**22 + 12345  # above the largest pid_max Linux allows (2**22): never a live pid
    assert cpu_split(gone) == (0.0, 0.0)
