"""One latency round's statistics of per-sample times, as the worker returns them (a LatencyRound): the exact
median and count, and the samples themselves (a strided subset beyond KEPT_SAMPLES) for the parent, which
combines a row's rounds (dbench.stats.summary)."""

from __future__ import annotations

import numpy as np

from dbench.stats.records import LatencyRound
from dbench.stats.samples import kept


def summarize(samples_ns: list[float], calls_per_sample: int) -> LatencyRound:
    """A round's statistics over per-call times (each sample is the mean of `calls_per_sample` calls, in ns)."""
    timed_s = float(np.sum(samples_ns)) * calls_per_sample / 1e9
    us = np.asarray(samples_ns, dtype=np.float64) / 1e3
    return LatencyRound(
        median_us=float(np.median(us)),
        min_us=float(us.min()),
        samples=int(us.size),
        calls_per_sample=calls_per_sample,
        timed_s=timed_s,
        samples_us=kept(us),
    )
