"""The machine's drift between runs, measured from its earlier runs. A run's rounds are spread over
its own seconds or minutes, so they cannot see a machine state that lasts longer (on the shared
development VMs whole runs moved by 7-10 % while their three rounds agreed within 1 %). Earlier runs
of the same graph and configuration can: the spread of their log means beyond what their own rounds
explain is the between-run variance, which a row's intervals and a two-run verdict then carry.

Graphs are pooled by the decade of their time (10 µs calls flip between call-overhead states, 50 ms
GEMMs move with memory bandwidth; one graph's few runs alone would give an unstable estimate). One
graph's own earlier runs still set a floor: a convolution that switches between two speeds for minutes
at a time may have all of one run's rounds in one state, and its row must not then promise less than
its earlier runs showed between them."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

MIN_OWN_RUNS = 3
"""Earlier runs of the graph itself that its floor needs (2 degrees of freedom: with one, the t
quantile of 12.7 would make any interval useless)."""


@dataclass(frozen=True)
class Drift:
    """The SD of a run's log time beyond its rounds, the degrees of freedom of its estimate, the most
    earlier runs of one graph it came from, and how many graphs were pooled."""

    sd: float
    df: int
    runs: int
    graphs: int


def decade(median_us: float) -> int:
    """The pooling group of a graph: the decade of its median time (1-10 µs is 0, 10-100 µs is 1...)."""
    return math.floor(math.log10(max(median_us, 1e-3)))


def _run_estimate(round_medians_us: list[float]) -> tuple[float, float] | None:
    """One earlier run of a graph: its mean log round median and that mean's variance from its own
    rounds (None below two rounds: nothing says how much of its place is its rounds' noise)."""
    logs = np.log(np.asarray(round_medians_us, dtype=np.float64))
    if logs.size < 2:
        return None
    return float(logs.mean()), float(logs.var(ddof=1) / logs.size)


def between_runs(runs: Iterable[list[float]]) -> tuple[float, int] | None:
    """One graph's between-run variance from its earlier runs' round medians: the variance of their
    log means less the mean variance their rounds explain (may be negative: pooled, then floored),
    with runs - 1 degrees of freedom; None below two usable runs."""
    estimates = [e for e in map(_run_estimate, runs) if e is not None]
    if len(estimates) < 2:
        return None
    means, within = zip(*estimates)
    return float(np.var(means, ddof=1) - np.mean(within)), len(estimates) - 1


def pooled_drift(graphs: Mapping[str, list[list[float]]]) -> dict[int, Drift]:
    """Per decade of time, the between-run drift pooled over the graphs of `graphs` (graph -> its
    earlier runs' round medians, each run a list): the df-weighted mean of the graphs' between-run
    variances, floored at zero."""
    sums: dict[int, list[float]] = {}
    for runs in graphs.values():
        usable = [r for r in runs if len(r) >= 2]
        found = between_runs(usable)
        if found is None:
            continue
        variance, df = found
        group = sums.setdefault(decade(float(np.median([np.median(r) for r in usable]))), [0.0, 0, 0, 0])
        group[0] += variance * df
        group[1] += df
        group[2] = max(group[2], len(usable))
        group[3] += 1
    return {
        key: Drift(math.sqrt(max(total / df, 0.0)), int(df), int(runs), int(count))
        for key, (total, df, runs, count) in sums.items()
    }


def own_spread(runs: list[list[float]]) -> tuple[float, int] | None:
    """The variance of one graph's earlier runs' log means (their rounds' noise included: it is what
    re-runs of this graph did), with runs - 1 degrees of freedom; None below MIN_OWN_RUNS runs."""
    means = [float(np.mean(np.log(np.asarray(r, dtype=np.float64)))) for r in runs if r]
    if len(means) < MIN_OWN_RUNS:
        return None
    return float(np.var(means, ddof=1)), len(means) - 1


def row_drift(pooled: Drift | None, own: tuple[float, int] | None, round_medians_us: list[float]) -> Drift | None:
    """The drift a row carries: its decade's pooled drift, or, where its own graph's earlier runs spread
    further than its rounds and that drift together allow, the rest of that spread (with its degrees
    of freedom), so the row's variance is never below what re-runs of the graph showed."""
    if own is None or len(round_medians_us) < 2:
        return pooled
    spread, df = own
    logs = np.log(np.asarray(round_medians_us, dtype=np.float64))
    beyond = spread - float(logs.var(ddof=1)) / logs.size
    if beyond <= (pooled.sd**2 if pooled else 0.0):
        return pooled
    return Drift(math.sqrt(beyond), df, df + 1, 1)
