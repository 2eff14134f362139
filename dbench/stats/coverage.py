"""Whether a row's re-run interval keeps its promise on the machine that made it, and by how much to widen
it where it does not. The interval says where 95 % of a re-run's medians should fall; the machine's own
history says where they did fall: for every earlier run i of a graph and configuration and every run j
after it, the later median m_j against run i's interval (its median m_i and half-width h_i on log times).
The factor run i's interval needed to hold m_j is r_ij = |log(m_j / m_i)| / h_i; the share of pairs
with r <= 1 is the interval's measured coverage, and the 95th percentile of r is the factor that would
have made 95 % of them hold. Where that factor exceeds 1, the new row's intervals are widened by it, and
the row says so (`widened_by`, with the pairs behind it); never narrowed, since the rounds and the drift
are the model and the history only corrects where it proves the model too optimistic.

The pairs share runs (each run sits in several), so they are not independent: a factor from a few runs
moves with them. Fewer than MIN_PAIRS pairs give no factor."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

LEVEL = 0.95
MIN_PAIRS = 20
"""Pairs a factor needs (e.g. 7 graphs of a decade, 3 earlier runs each: 21)."""
MAX_FACTOR = 10.0
"""A factor above this says the interval is not a model of this machine at all; it is capped, and the
row still says how few pairs held."""


@dataclass(frozen=True)
class Coverage:
    """How earlier rows' intervals fared against later runs: the pairs, how many held, and the factor
    (>= 1) that would have made LEVEL of them hold; 1.0 when they held as promised or pairs were too few."""

    pairs: int
    inside: int
    factor: float

    @property
    def rate(self) -> float | None:
        return self.inside / self.pairs if self.pairs else None

    def to_dict(self) -> dict:
        return {"coverage_pairs": self.pairs, "coverage_inside": self.inside,
                "widened_by": self.factor if self.factor > 1.0 else None}


def ratios(runs: list[tuple[float, float | None]]) -> list[float]:
    """One graph's r_ij: `runs` are its earlier runs oldest first, each (median, log half-width of its
    re-run interval as first made, None without one)."""
    found = []
    for i, (median_i, half_i) in enumerate(runs):
        if not half_i or half_i <= 0 or not median_i:
            continue
        for median_j, _ in runs[i + 1:]:
            if median_j:
                found.append(abs(math.log(median_j / median_i)) / half_i)
    return found


def coverage(all_ratios: Iterable[float], level: float = LEVEL, min_pairs: int = MIN_PAIRS) -> Coverage:
    """The Coverage of a pool of r_ij; the factor is 1 below `min_pairs` pairs or where `level` of them held."""
    values = np.asarray(list(all_ratios), dtype=np.float64)
    if values.size == 0:
        return Coverage(0, 0, 1.0)
    inside = int((values <= 1.0).sum())
    if values.size < min_pairs:
        return Coverage(int(values.size), inside, 1.0)
    factor = float(np.quantile(values, level, method="higher"))
    return Coverage(int(values.size), inside, min(max(factor, 1.0), MAX_FACTOR))
