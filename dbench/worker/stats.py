"""Summary statistics of per-sample times. A row is flagged unstable when the 95% confidence interval
of its median (order-statistic, distribution-free) is wider than a stated fraction of the median:
one outlier cannot flag a row, a wide middle of the distribution does."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

CI_THRESHOLD = 0.02
"""A row is unstable when the 95% CI half-width of its median exceeds this fraction of the median."""
CONFIDENCE = 0.95
KEPT_SAMPLES = 1000
"""At most this many per-sample times are stored in a row (an evenly strided subset beyond it)."""
EXACT_BINOMIAL_UP_TO = 300
"""Above this sample count the median's interval uses the normal approximation to the binomial."""


@dataclass(frozen=True)
class Stats:
    """Per-call latency statistics in microseconds. Figures that need two samples or more (std, cv,
    spread, the median's interval) are None with fewer, never 0."""

    median_us: float
    p10_us: float
    p90_us: float
    p99_us: float
    min_us: float
    mean_us: float
    std_us: float | None
    cv: float | None
    """std / mean, kept as a reported figure; it no longer decides stability."""
    spread: float | None
    """(p90 - p10) / median: a robust relative spread."""
    mad_us: float | None
    """Median absolute deviation from the median."""
    ci_low_us: float | None
    ci_high_us: float | None
    """The 95% confidence interval of the median (order statistics; None below 6 samples)."""
    ci_rel: float | None
    """Half-width of that interval / median."""
    samples: int
    calls_per_sample: int
    unstable: bool | None
    """ci_rel > CI_THRESHOLD; None when the interval cannot be formed (fewer than 6 samples)."""
    timed_s: float
    """Wall time spent inside the sampled calls (for the tool's own overhead accounting)."""
    samples_us: list[float]
    """The per-sample times (each the mean of calls_per_sample calls), at most KEPT_SAMPLES of them."""
    warmup_s: float = 0.0
    """Wall time of the warm-up before sampling (same purpose)."""
    first_call_us: float | None = None
    """The cold first call right after preparing (the warm-up's first call)."""
    runtime_median_us: float | None = None
    """The runtime's own per-call clock (e.g. OpenVINO's InferRequest.latency), median over samples."""

    def to_dict(self) -> dict:
        return asdict(self)


def median_interval(sorted_values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Distribution-free interval of the median: (x_(l), x_(n+1-l)) with l the largest rank such that
    2 * P(Binomial(n, 1/2) < l) <= 1 - confidence. Exact binomial for small n, normal approximation
    above EXACT_BINOMIAL_UP_TO. Assumes independent samples. None when n is too small."""
    n = sorted_values.size
    alpha = 1.0 - confidence
    if n > EXACT_BINOMIAL_UP_TO:
        z = normal_quantile(1.0 - alpha / 2)
        low = int(math.floor(n / 2 - z * math.sqrt(n) / 2))
    else:
        low, cdf = 0, 0.0
        for k in range(n + 1):
            cdf += math.comb(n, k) / 2.0**n
            if 2 * cdf > alpha:
                break
            low = k + 1
    if low < 1:
        return None
    return float(sorted_values[low - 1]), float(sorted_values[n - low])


def normal_quantile(p: float) -> float:
    """Inverse of the standard normal CDF by bisection on math.erf (no scipy needed)."""
    lo, hi = -10.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def kept(values: np.ndarray, limit: int = KEPT_SAMPLES) -> list[float]:
    """At most `limit` values in sampling order, evenly strided over the whole run, rounded to ns."""
    if values.size > limit:
        values = values[np.linspace(0, values.size - 1, limit).round().astype(int)]
    return [round(float(v), 3) for v in values]


def summarize(samples_ns: list[float], calls_per_sample: int, ci_threshold: float = CI_THRESHOLD) -> Stats:
    """Statistics over per-call times (each sample is the mean of `calls_per_sample` calls, in ns)."""
    timed_s = float(np.sum(samples_ns)) * calls_per_sample / 1e9
    us = np.asarray(samples_ns, dtype=np.float64) / 1e3
    p10, p50, p90, p99 = (float(v) for v in np.percentile(us, [10, 50, 90, 99]))
    mean = float(us.mean())
    std = cv = spread = mad = None
    if us.size > 1:
        std = float(us.std(ddof=1))
        cv = std / mean if mean > 0 else None
        spread = (p90 - p10) / p50 if p50 > 0 else None
        mad = float(np.median(np.abs(us - p50)))
    interval = median_interval(np.sort(us))
    ci_rel = (interval[1] - interval[0]) / 2 / p50 if interval and p50 > 0 else None
    return Stats(
        median_us=p50, p10_us=p10, p90_us=p90, p99_us=p99, min_us=float(us.min()), mean_us=mean, std_us=std, cv=cv,
        spread=spread, mad_us=mad, ci_low_us=interval[0] if interval else None,
        ci_high_us=interval[1] if interval else None, ci_rel=ci_rel, samples=int(us.size),
        calls_per_sample=calls_per_sample, unstable=None if ci_rel is None else ci_rel > ci_threshold,
        timed_s=timed_s, samples_us=kept(us),
    )
