"""The report's judgements, made as `dbench compare` makes them: each column group's speedup against
the baseline carries its 95 % interval and a verdict whose false-discovery rate is controlled over the
group's kernels; a kernel's fastest group is starred only when the test separates it from the next
fastest, else the two are a tie within noise."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dbench.stats.differences import Difference
from dbench.stats.fdr import FDR, bh_adjusted
from dbench.stats.moderation import Prior
from dbench.stats.student import t_quantile
from dbench.store.compare import paired_prior, test_rows


@dataclass(frozen=True)
class Speedup:
    """baseline time / this time, its 95 % interval, and `same` when the data cannot tell them apart
    (not a discovery at the FDR), or the reason there is no test."""

    value: float
    low: float | None
    high: float | None
    same: bool
    note: str = ""
    difference: Difference | None = None
    """The test behind it (this group's time / the baseline's)."""


def _row(frame_row: pd.Series) -> dict:
    """The fields the tests read, from a report frame's row (a missing drift is NaN in the frame: None here)."""
    medians = frame_row.get("round_medians_us")
    drift = {k: frame_row.get(k) for k in ("drift_sd", "drift_df")}
    return {
        "median_us": frame_row["median_us"],
        "round_medians_us": list(medians) if isinstance(medians, (list, np.ndarray)) else None,
        **{k: (None if v is None or pd.isna(v) else float(v)) for k, v in drift.items()},
    }


def _difference(base: pd.Series, mine: pd.Series, prior: Prior | None) -> tuple[Difference | None, str]:
    """b = this group against a = the baseline for one kernel; paired when both rows come from one
    interleaved run (their variance moderated by the group's `prior`, as compare does)."""
    difference, verdict, detail, _ = test_rows(
        [_row(base)], [_row(mine)], interleaved=base["run_id"] == mine["run_id"], prior=prior
    )
    return (difference, "") if not verdict else (None, verdict if not detail else f"{verdict}: {detail}")


def _interleaved_prior(pairs: list[tuple[pd.Series, pd.Series]]) -> Prior | None:
    """The prior that moderates the paired variances of those (a, b) rows that come from one
    interleaved run, as compare's table of an interleaved run has (dbench.store.compare.paired_prior)."""
    return paired_prior([(_row(a), _row(b)) for a, b in pairs if a["run_id"] == b["run_id"]])


def speedups(frame: pd.DataFrame, groups, base) -> dict[tuple[str, str], Speedup]:
    """(group label, kernel) -> Speedup against the baseline group, for every verified kernel both
    have; the FDR is controlled over each group's kernels."""
    counted = frame[frame.counts]
    base_rows = base.rows(counted).set_index("kernel")
    result: dict[tuple[str, str], Speedup] = {}
    for group in groups:
        mine = group.rows(counted).set_index("kernel")
        kernels = [k for k in mine.index if k in base_rows.index]
        if group == base:
            result.update({(group.label, k): Speedup(1.0, None, None, True, "baseline") for k in kernels})
            continue
        prior = _interleaved_prior([(base_rows.loc[k], mine.loc[k]) for k in kernels])
        tested = {k: _difference(base_rows.loc[k], mine.loc[k], prior) for k in kernels}
        with_test = [k for k, (d, _) in tested.items() if d is not None]
        adjusted = dict(zip(with_test, bh_adjusted([tested[k][0].p for k in with_test])))
        for kernel, (difference, why) in tested.items():
            if difference is None:
                value = float(base_rows.at[kernel, "median_us"] / mine.at[kernel, "median_us"])
                result[(group.label, kernel)] = Speedup(value, None, None, True, why)
            else:  # the test's own estimate (geometric-mean round medians, as compare): inside its interval
                result[(group.label, kernel)] = Speedup(
                    1 / difference.ratio,
                    1 / difference.high,
                    1 / difference.low,
                    adjusted[kernel] > FDR,
                    difference=difference,
                )
    return result


def geomean_speedup(values: list[Speedup]) -> tuple[float | None, float | None, float | None]:
    """The geometric-mean speedup over a group's kernels and its 95 % interval from the kernels'
    standard errors (Welch-Satterthwaite degrees of freedom), centred on it; no interval unless every
    kernel was tested."""
    if not values:
        return None, None, None
    mean = float(math.exp(np.mean([math.log(v.value) for v in values])))
    tests = [v.difference for v in values if v.difference is not None]
    if len(tests) != len(values):
        return mean, None, None
    n = len(tests)
    var = sum(t.se**2 for t in tests) / n**2
    df = sum(t.se**2 for t in tests) ** 2 / sum(t.se**4 / t.df for t in tests)
    half = t_quantile(0.975, df) * math.sqrt(var)
    return mean, mean * math.exp(-half), mean * math.exp(half)


def winners(frame: pd.DataFrame, groups, kernels: list[str]) -> dict[str, tuple[str, bool]]:
    """kernel -> (label of the fastest group, whether the test separates it from the next fastest at
    the FDR over these kernels); kernels timed by one group only have no winner."""
    counted = frame[frame.counts]
    leaders: dict[str, tuple[str, pd.Series, pd.Series]] = {}
    for kernel in kernels:
        timed = [(g, g.rows(counted)[lambda f, k=kernel: f.kernel == k]) for g in groups]
        timed = sorted(((g, r.iloc[0]) for g, r in timed if not r.empty), key=lambda pair: pair[1]["median_us"])
        if len(timed) >= 2:
            (fastest, best), (_, second) = timed[0], timed[1]
            leaders[kernel] = (fastest.label, second, best)
    prior = _interleaved_prior([(second, best) for _, second, best in leaders.values()])
    contests = {k: (label, _difference(second, best, prior)[0]) for k, (label, second, best) in leaders.items()}
    tested = [k for k, (_, d) in contests.items() if d is not None]
    adjusted = dict(zip(tested, bh_adjusted([contests[k][1].p for k in tested])))
    return {k: (label, k in adjusted and adjusted[k] <= FDR) for k, (label, _) in contests.items()}
