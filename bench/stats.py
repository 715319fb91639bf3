"""Latency and throughput summaries of one timed phase."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class PhaseResult:
    name: str
    concurrency: int
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)  # seconds, one per request
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return len(self.latencies)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    def ms(self, q: float) -> float:
        return percentile(self.latencies, q) * 1000.0

    def error(self, message: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(message[:300])

    def summary(self) -> dict[str, Any]:
        return {
            "phase": self.name,
            "concurrency": self.concurrency,
            "requests": self.requests,
            "seconds": round(self.seconds, 3),
            "rps": round(self.rps, 1),
            "p50_ms": round(self.ms(50), 2),
            "p95_ms": round(self.ms(95), 2),
            "p99_ms": round(self.ms(99), 2),
            "errors": self.errors,
            "error_samples": self.error_samples,
            "notes": self.notes,
        }


def median_summary(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Merge the same phase from several rounds: the median of each number, errors added up."""
    if len(summaries) == 1:
        return summaries[0]
    merged = dict(summaries[0])
    for key in ("requests", "seconds", "rps", "p50_ms", "p95_ms", "p99_ms"):
        merged[key] = round(statistics.median(s[key] for s in summaries), 2)
    merged["errors"] = sum(s["errors"] for s in summaries)
    merged["error_samples"] = [e for s in summaries for e in s["error_samples"]][:5]
    merged["notes"] = sorted({n for s in summaries for n in s["notes"]})
    return merged
