"""Percentiles and phase summaries: the numbers the benchmark tables are made of."""

from __future__ import annotations

import math

from bench.stats import PhaseResult, median_summary, percentile


def test_percentile_interpolates_between_ranks() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 50) == 50.5
    assert percentile(values, 99) == 99.01
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 100.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0  # unsorted input
    assert percentile([7.0], 95) == 7.0
    assert math.isnan(percentile([], 50))


def test_phase_result_reports_rate_and_keeps_few_error_samples() -> None:
    res = PhaseResult(name="create_users", concurrency=8, seconds=2.0, latencies=[0.01] * 100)
    for i in range(9):
        res.error(f"HTTP 500 #{i}")
    summary = res.summary()
    assert summary["rps"] == 50.0
    assert summary["p50_ms"] == 10.0
    assert summary["errors"] == 9
    assert len(summary["error_samples"]) == 5


def test_median_summary_takes_medians_and_adds_errors() -> None:
    runs = [
        {"phase": "x", "requests": 10, "seconds": s, "rps": r, "p50_ms": 1, "p95_ms": 2, "p99_ms": p99}
        | {"errors": e, "error_samples": [], "notes": []}
        for s, r, p99, e in ((1.0, 10.0, 5.0, 0), (2.0, 5.0, 9.0, 1), (4.0, 2.5, 7.0, 2))
    ]
    merged = median_summary(runs)
    assert merged["rps"] == 5.0
    assert merged["p99_ms"] == 7.0
    assert merged["errors"] == 3
