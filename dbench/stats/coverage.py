"""Whether a row's re-run interval keeps its promise on the machine that made it, and by how much to scale
it so that it does. The interval says where 95 % of a re-run's medians should fall; the machine's own
history says where they did fall. For every earlier run i of a graph and configuration and every run j
after it, run i's interval is made again as dbench makes intervals now (its rounds, and the drift between
runs the history now measures), and r_ij = |log(m_j / m_i)| / h_i is the factor that interval needed to hold
the later median m_j (h_i: its half-width on log times). The share of pairs with r <= 1 is the interval's
coverage on this machine, and the 95th percentile of r the factor that would have made 95 % of them hold:
the new row's intervals are scaled by it, and the row says so (`history_factor`, with the pairs behind it).

Above 1 the history proves the model too optimistic (a run state that outlasts several runs, heavy-tailed
shifts), and the interval is widened. Below 1 it proves it too cautious: round medians are heavy-tailed
(one slow round in a run), so the spread of their log mean, which the rounds and the drift estimate,
overstates how far the row's median (the median of every sample) moves between runs; the interval is then
narrowed, but never below MIN_FACTOR of the model's width. Pairs share runs (each run sits in several),
so they are not independent: a factor from a few runs moves with them, and fewer than MIN_PAIRS pairs give
none. The drift used to remake an earlier interval was measured over runs that include both of the pair,
so the check leans towards the model, never against it."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95
MIN_PAIRS = 20
"""Pairs a factor needs (e.g. 7 graphs of a decade, 3 earlier runs each: 21)."""
MIN_FACTOR = 0.5
"""The most the history may narrow an interval: to half the width its rounds and drift give."""
MAX_FACTOR = 10.0
"""A factor above this says the interval is not a model of this machine at all; it is capped, and the
row still says how few pairs held."""


@dataclass(frozen=True)
class Coverage:
    """How intervals made as now would have fared against later runs: the pairs, how many held, and the
    factor that would have made LEVEL of them hold (within MIN_FACTOR and MAX_FACTOR); 1.0 with too few pairs."""

    pairs: int
    inside: int
    factor: float

    @property
    def rate(self) -> float | None:
        return self.inside / self.pairs if self.pairs else None

    def to_dict(self) -> dict:
        return {
            "coverage_pairs": self.pairs,
            "coverage_inside": self.inside,
            "history_factor": self.factor if self.pairs >= MIN_PAIRS else None,
        }


def ratios(runs: list[tuple[float, float | None]]) -> list[float]:
    """One graph's r_ij: `runs` are its earlier runs oldest first, each (median, log half-width of its
    re-run interval, None without one)."""
    found = []
    for i, (median_i, half_i) in enumerate(runs):
        if not half_i or half_i <= 0 or not median_i:
            continue
        for median_j, _ in runs[i + 1 :]:
            if median_j:
                found.append(abs(math.log(median_j / median_i)) / half_i)
    return found


def coverage(all_ratios: Iterable[float], level: float = LEVEL, min_pairs: int = MIN_PAIRS) -> Coverage:
    """The Coverage of a pool of r_ij; the factor is 1 below `min_pairs` pairs."""
    values = np.asarray(list(all_ratios), dtype=np.float64)
    if values.size == 0:
        return Coverage(0, 0, 1.0)
    inside = int((values <= 1.0).sum())
    if values.size < min_pairs:
        return Coverage(int(values.size), inside, 1.0)
    factor = float(np.quantile(values, level, method="higher"))
    return Coverage(int(values.size), inside, min(max(factor, MIN_FACTOR), MAX_FACTOR))
