"""Where a stream sweep saturates: the knee is the smallest stream count whose throughput lies within
the interval a re-run of the best count's throughput should fall in (beyond it, more requests in
flight buy nothing the rounds can tell from noise), and the latency paid for it is the knee's latency
under load against the smallest count's. Without an interval for the best (one round), the knee is
the smallest count within NO_INTERVAL_TOLERANCE of the best."""

from __future__ import annotations

from dataclasses import dataclass

NO_INTERVAL_TOLERANCE = 0.05
"""Without a re-run interval for the best count, a count within this fraction of it counts as the best."""


@dataclass(frozen=True)
class SweepPoint:
    """One stream count of one graph: its throughput (inferences/s), the low end of the throughput's
    re-run interval (None without one), and its latency under load."""

    streams: int
    throughput: float
    throughput_low: float | None
    latency_p50_us: float | None = None
    latency_p99_us: float | None = None


@dataclass(frozen=True)
class Knee:
    """The knee of a sweep: the count chosen, the best count, the gain over the smallest count, the
    latency at the knee against the smallest count's, and how the threshold was set."""

    streams: int
    throughput: float
    best_streams: int
    best_throughput: float
    first_streams: int
    gain: float
    """Throughput at the knee / throughput at the smallest count."""
    p50_ratio: float | None
    """Median latency under load at the knee / at the smallest count."""
    p99_ratio: float | None
    latency_p50_us: float | None
    latency_p99_us: float | None
    rule: str
    best_margin: float
    """How far below the best the threshold lies, as a fraction of the best: above NO_INTERVAL_TOLERANCE
    the best count's interval is too wide to place the knee with confidence."""


def find_knee(points: list[SweepPoint]) -> Knee | None:
    """The knee of one graph's sweep (see the module); None with fewer than two stream counts."""
    if len({p.streams for p in points}) < 2:
        return None
    ordered = sorted(points, key=lambda p: p.streams)
    best = max(ordered, key=lambda p: p.throughput)
    if best.throughput_low is not None:
        threshold, rule = best.throughput_low, f"smallest count within the re-run interval of the best ({best.streams})"
    else:
        threshold = best.throughput * (1 - NO_INTERVAL_TOLERANCE)
        rule = f"smallest count within {NO_INTERVAL_TOLERANCE:.0%} of the best ({best.streams}; no interval)"
    knee = next(p for p in ordered if p.throughput >= threshold)
    first = ordered[0]

    def ratio(mine: float | None, base: float | None) -> float | None:
        return mine / base if mine and base else None

    return Knee(
        knee.streams,
        knee.throughput,
        best.streams,
        best.throughput,
        first.streams,
        knee.throughput / first.throughput,
        ratio(knee.latency_p50_us, first.latency_p50_us),
        ratio(knee.latency_p99_us, first.latency_p99_us),
        knee.latency_p50_us,
        knee.latency_p99_us,
        rule,
        1 - threshold / best.throughput,
    )
