"""The tests behind `compare`, on log times: Welch's two-sample t over two runs' round medians, the
paired t over an interleaved run's rounds (drift cancels in each pair), and the pooled two-sample t
over several runs a side (their spread is the between-run variance). Each gives the ratio b/a, its
95 % interval, a two-sided p-value and the smallest change it can resolve."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dbench.stats.moderation import Prior, moderate
from dbench.stats.student import t_quantile, t_two_sided_p

ALPHA = 0.05
POWER = 0.80
"""The resolvable change is the true change this test detects 80 % of the time at ALPHA (two-sided)."""
MIN_DF = 2.0
"""Fewer degrees of freedom than this give no verdict: a variance estimated from two values is too
unstable for the t-test's level to hold (at df 1 the 95 % quantile is 12.7)."""


@dataclass(frozen=True)
class Difference:
    """b / a: the ratio of geometric means, its 95 % interval, the p-value, the test's degrees of
    freedom, its standard error on log times, and the smallest change it resolves (a fraction)."""

    ratio: float
    low: float
    high: float
    p: float
    df: float
    se: float
    method: str
    resolvable: float

    def to_dict(self) -> dict:
        return {
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "p": self.p,
            "df": self.df,
            "se_log": self.se,
            "method": self.method,
            "resolvable": self.resolvable,
        }


def _difference(d: float, se: float, df: float, method: str) -> Difference | None:
    """The Difference for a mean log difference `d` with standard error `se`; None without spread."""
    if not se > 0 or not df > 0:
        return None
    q = t_quantile(1 - ALPHA / 2, df)
    return Difference(
        math.exp(d),
        math.exp(d - q * se),
        math.exp(d + q * se),
        t_two_sided_p(d / se, df),
        df,
        se,
        method,
        math.exp((q + t_quantile(POWER, df)) * se) - 1,
    )


def _logs(values) -> np.ndarray:
    return np.log(np.asarray(values, dtype=np.float64))


def welch(a_us, b_us, drift_var: float = 0.0, drift_df: float = math.inf) -> Difference | None:
    """Two independent sets of round medians (two runs): Welch's t on their logs, each run's mean also
    carrying the between-run drift variance `drift_var` that earlier runs measured (estimated with
    `drift_df` degrees of freedom), which the rounds of one run cannot see."""
    la, lb = _logs(a_us), _logs(b_us)
    if la.size < 2 or lb.size < 2:
        return None
    va, vb, vd = la.var(ddof=1) / la.size, lb.var(ddof=1) / lb.size, 2.0 * drift_var
    if va + vb + vd == 0:
        return None
    df = (va + vb + vd) ** 2 / (va**2 / (la.size - 1) + vb**2 / (lb.size - 1) + vd**2 / drift_df)
    return _difference(
        float(lb.mean() - la.mean()),
        math.sqrt(va + vb + vd),
        df,
        "welch over rounds and the drift between runs" if vd else "welch over rounds",
    )


def paired(a_us, b_us, prior: Prior | None = None) -> Difference | None:
    """Round medians measured in pairs (an interleaved run: a and b back to back in each round); with
    a `prior` (the table's, dbench.stats.moderation), the pairs' variance moderated by it."""
    d = _logs(b_us) - _logs(a_us)
    if d.size < 2:
        return None
    variance, df = moderate(float(d.var(ddof=1)), d.size - 1, prior)
    return _difference(
        float(d.mean()),
        math.sqrt(variance / d.size),
        df,
        "paired over rounds, moderated" if prior else "paired over rounds",
    )


def paired_variance(a_us, b_us) -> tuple[float, int] | None:
    """The variance of paired log differences and its degrees of freedom, for a table's prior."""
    d = _logs(b_us) - _logs(a_us)
    return (float(d.var(ddof=1)), d.size - 1) if d.size >= 2 else None


def pooled(a_logs, b_logs) -> Difference | None:
    """Several runs a side, each given as its log estimate: Student's pooled two-sample t, whose
    variance is the spread between runs."""
    la, lb = np.asarray(a_logs, dtype=np.float64), np.asarray(b_logs, dtype=np.float64)
    df = la.size + lb.size - 2
    if la.size < 1 or lb.size < 1 or df < 1:
        return None
    pooled_var = (((la - la.mean()) ** 2).sum() + ((lb - lb.mean()) ** 2).sum()) / df
    se = math.sqrt(pooled_var * (1 / la.size + 1 / lb.size))
    return _difference(float(lb.mean() - la.mean()), se, df, "pooled over runs")


def paired_rounds_to_resolve(difference: Difference, pairs: int, change: float, most: int = 1000) -> int | None:
    """Paired rounds an interleaved run would need for this test to resolve `change` (find it POWER of the
    time at ALPHA) on a kernel whose paired test over `pairs` rounds gave `difference`: its variance per
    pair, and the prior's degrees of freedom where it was moderated, held as measured. None beyond `most`."""
    sd = difference.se * math.sqrt(pairs)
    prior_df = max(0.0, difference.df - (pairs - 1))
    target = math.log1p(change)
    for rounds in range(2, most + 1):
        df = prior_df + rounds - 1
        if (t_quantile(1 - ALPHA / 2, df) + t_quantile(POWER, df)) * sd / math.sqrt(rounds) <= target:
            return rounds
    return None
