"""Summary statistics of per-call samples; a row is flagged unstable when its CV exceeds a threshold."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

CV_THRESHOLD = 0.10
"""Coefficient of variation (std / mean) above which a row is flagged unstable."""


@dataclass(frozen=True)
class Stats:
    """Per-call latency statistics in microseconds."""

    median_us: float
    p10_us: float
    p90_us: float
    p99_us: float
    min_us: float
    mean_us: float
    std_us: float
    cv: float
    samples: int
    calls_per_sample: int
    unstable: bool
    timed_s: float
    """Wall time spent inside the sampled calls (for the tool's own overhead accounting)."""
    warmup_s: float = 0.0
    """Wall time of the warm-up before sampling (same purpose)."""

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(samples_ns: list[float], calls_per_sample: int, cv_threshold: float = CV_THRESHOLD) -> Stats:
    """Statistics over per-call times (each sample is the mean of `calls_per_sample` calls, in ns)."""
    timed_s = float(np.sum(samples_ns)) * calls_per_sample / 1e9
    us = np.asarray(samples_ns, dtype=np.float64) / 1e3
    p10, p50, p90, p99 = np.percentile(us, [10, 50, 90, 99])
    mean = float(us.mean())
    std = float(us.std(ddof=1)) if us.size > 1 else 0.0
    cv = std / mean if mean > 0 else 0.0
    return Stats(float(p50), float(p10), float(p90), float(p99), float(us.min()), mean, std, cv, int(us.size),
                 calls_per_sample, cv > cv_threshold, timed_s)
