"""Arrival schedules for the server scenario (MLPerf's Server: queries arrive as a Poisson process of
the asked rate). A schedule of n arrivals has its first at 0 and its last at (n - 1) / rate, the
n - 2 others at independent uniform times between: a Poisson process conditioned on those two events,
so its gaps are exponential in shape while its own rate is exactly the asked one. What the measured
arrival rate then shows is the dispatcher's accuracy, not the schedule's luck (a free Poisson draw of
1000 arrivals misses its rate by 3 %, 1/sqrt(n), at one SD)."""

from __future__ import annotations

import numpy as np


def poisson_schedule(rate: float, count: int, seed: int) -> np.ndarray:
    """`count` arrival times in seconds from the start, sorted, at `rate` per second (see the module)."""
    if not rate > 0 or count < 1:
        raise ValueError(f"a schedule needs a positive rate and at least one arrival (rate {rate}, count {count})")
    if count == 1:
        return np.zeros(1)
    span = (count - 1) / rate
    inner = np.random.default_rng(seed).uniform(0.0, span, count - 2)
    return np.concatenate([[0.0], np.sort(inner), [span]])


def arrival_rate(times_s: np.ndarray) -> float | None:
    """Arrivals per second over a sequence of arrival times: (n - 1) / (last - first); None below two
    arrivals or with no time between them."""
    times = np.asarray(times_s, dtype=np.float64)
    if times.size < 2:
        return None
    span = float(times.max() - times.min())
    return (times.size - 1) / span if span > 0 else None
