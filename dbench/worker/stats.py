"""One round's statistics of per-sample times, as the worker returns them: the exact median and
count, and the samples themselves (a strided subset beyond KEPT_SAMPLES) for the parent, which
combines a row's rounds (dbench.stats.summary)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from dbench.stats.samples import kept


@dataclass(frozen=True)
class Stats:
    """One round's per-call latency in microseconds."""

    median_us: float
    """The exact median of the round's samples (all of them, not only the kept ones)."""
    min_us: float
    samples: int
    calls_per_sample: int
    timed_s: float
    """Wall time spent inside the sampled calls (for the tool's own overhead accounting)."""
    samples_us: list[float]
    """The per-sample times (each the mean of calls_per_sample calls), at most KEPT_SAMPLES of them
    (dbench.stats.samples)."""
    warmup_s: float = 0.0
    """Wall time of the round's warm-up before sampling (same purpose)."""
    first_call_us: float | None = None
    """The cold first call right after preparing (the warm-up's first call)."""
    runtime_median_us: float | None = None
    """The runtime's own per-call clock (e.g. OpenVINO's InferRequest.latency), median over samples."""

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(samples_ns: list[float], calls_per_sample: int) -> Stats:
    """A round's statistics over per-call times (each sample is the mean of `calls_per_sample` calls, in ns)."""
    timed_s = float(np.sum(samples_ns)) * calls_per_sample / 1e9
    us = np.asarray(samples_ns, dtype=np.float64) / 1e3
    return Stats(median_us=float(np.median(us)), min_us=float(us.min()), samples=int(us.size), calls_per_sample=calls_per_sample,
                 timed_s=timed_s, samples_us=kept(us))
