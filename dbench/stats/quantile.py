"""A high percentile of many latencies and its distribution-free interval, from the slowest values only.

A server row's p99 is a tail figure: what it rests on is the number of requests slower than it. With
`above` of them wanted, a run sends `arrivals_for(99, above)` requests (25 above -> 2500 arrivals).
The interval is the classical one from order statistics: of n independent draws, the count below the
population's q-quantile is Binomial(n, q/100), so the sorted values at the binomial ranks l and u
bracket that quantile with probability P(l <= B <= u - 1) >= the confidence, whatever the
distribution (continuous; independent draws assumed: latencies that queue behind one another are
correlated, which makes the true coverage lower than stated). Only the slowest `tail_size` values are
needed for the percentile (numpy's linear interpolation) and both ranks, so each round keeps those
instead of every latency, and the rounds' tails pool exactly."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable

import numpy as np

from dbench.stats.student import betainc

CONFIDENCE = 0.95
P99 = 99.0
P99_ABOVE = 25
"""Requests a server row's p99 should rest on (slower than it, all rounds together): with an exponential
latency tail, as queueing gives, one run's p99 then has a relative SD of about 1 / (sqrt(25) ln 100) =
4.3 % from sampling alone, and two identical runs differ by about 6 % at one SD (the 10 % the project
asks for at 1.6 SD); 4 above it (about 400 requests) gives 11 % and 15 %. Doubling it to 50 buys 4.3 %
between runs for twice the run time."""


def arrivals_for(percentile: float, above: int) -> int:
    """Requests to send so that at least `above` of them lie above the `percentile`'s position."""
    return math.ceil(above * 100.0 / (100.0 - percentile))


def requests_above(n: int, percentile: float) -> int:
    """How many of n sorted values lie above the `percentile`'s position (numpy's linear rule): what the
    percentile rests on."""
    return n - 1 - math.floor(percentile / 100.0 * (n - 1)) if n else 0


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(B <= k) for B ~ Binomial(n, p), from the regularized incomplete beta function."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return betainc(n - k, k + 1, 1.0 - p)


@functools.lru_cache(maxsize=64)  # a pure function of its arguments, asked for twice per row
def order_ranks(n: int, percentile: float, confidence: float = CONFIDENCE) -> tuple[int | None, int | None]:
    """The 1-based ranks (l, u) of n sorted draws that bracket the population's `percentile` with at
    least `confidence`: l the highest with P(B <= l - 1) <= alpha/2, u the lowest with P(B <= u - 1) >=
    1 - alpha/2 (B ~ Binomial(n, percentile/100)); None on a side that n draws cannot bound."""
    p, tail = percentile / 100.0, (1.0 - confidence) / 2.0

    def first(predicate) -> int:
        """The smallest k in [0, n] with predicate(F(k)), F increasing (n + 1 when none)."""
        lo, hi = 0, n + 1
        while lo < hi:
            mid = (lo + hi) // 2
            if predicate(binomial_cdf(mid, n, p)):
                hi = mid
            else:
                lo = mid + 1
        return lo

    lower = first(lambda f: f > tail)  # F(k) <= tail for every k below it, so F(lower - 1) <= tail
    upper = first(lambda f: f >= 1.0 - tail) + 1
    return (lower if lower >= 1 else None), (upper if upper <= n else None)


def tail_size(n: int, percentile: float, confidence: float = CONFIDENCE) -> int:
    """How many of the slowest of n values give the percentile and its interval."""
    if not n:
        return 0
    low, _ = order_ranks(n, percentile, confidence)
    lowest = math.floor(percentile / 100.0 * (n - 1))  # 0-based index of the percentile's lower neighbour
    if low is not None:
        lowest = min(lowest, low - 1)
    return n - lowest


def slowest(values: np.ndarray, n: int, percentile: float = P99) -> list[float]:
    """The slowest values, descending, rounded to ns, as many as a pool of `n` values in all needs
    (dbench.stats.throughput pools the rounds' tails)."""
    count = min(values.size, tail_size(n, percentile))
    return [round(float(v), 3) for v in np.sort(values)[::-1][:count]]


def _at(tail: list[float], n: int, index: int) -> float:
    """The value at 0-based ascending `index` of n values, from their slowest values (descending)."""
    return tail[n - 1 - index]


def pooled_tail(tails: Iterable[list[float]], n: int, percentile: float = P99) -> list[float]:
    """The slowest values of n values in all from the rounds' own slowest values (each round having kept
    as many as the pool needs, or all of its own)."""
    pooled = sorted((v for tail in tails for v in tail), reverse=True)[: tail_size(n, percentile)]
    if len(pooled) < tail_size(n, percentile):
        raise ValueError(f"{len(pooled)} slowest values cannot give the p{percentile:g} of {n}")
    return pooled


def tail_percentile(tail: list[float], n: int, percentile: float) -> float:
    """The percentile of n values by numpy's linear rule, from their slowest values."""
    position = percentile / 100.0 * (n - 1)
    below = math.floor(position)
    above = min(below + 1, n - 1)
    return _at(tail, n, below) + (position - below) * (_at(tail, n, above) - _at(tail, n, below))


def tail_interval(
    tail: list[float], n: int, percentile: float, confidence: float = CONFIDENCE
) -> tuple[float | None, float | None]:
    """The order-statistic interval of the population's percentile from n values' slowest ones: the
    values at the ranks `order_ranks` gives, None on a side n values cannot bound."""
    low, high = order_ranks(n, percentile, confidence)
    return (None if low is None else _at(tail, n, low - 1)), (None if high is None else _at(tail, n, high - 1))
