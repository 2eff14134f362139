"""A row's statistics from its rounds: the pooled per-call figures (median, percentiles, spread) over
the rounds' kept samples, and the intervals from the rounds' own medians (dbench.stats.rounds), which
are what a re-run meets."""

from __future__ import annotations

from typing import Any

import numpy as np

from dbench.stats.coverage import Coverage
from dbench.stats.drift import Drift
from dbench.stats.records import LatencyRound
from dbench.stats.rounds import round_spread
from dbench.stats.samples import KEPT_SAMPLES, kept


def _thin(rounds: list[LatencyRound]) -> list[list[float]]:
    """Each round's kept samples, thinned so that the row keeps at most KEPT_SAMPLES in all: every
    round an equal share, a round with fewer samples than its share leaving the rest to the others."""
    sizes = [len(r.samples_us) for r in rounds]
    shares = [0] * len(rounds)
    left = KEPT_SAMPLES
    for done, i in enumerate(sorted(range(len(rounds)), key=lambda i: sizes[i])):
        shares[i] = min(sizes[i], left // (len(rounds) - done))
        left -= shares[i]
    return [kept(np.asarray(r.samples_us, dtype=np.float64), max(1, share)) for r, share in zip(rounds, shares)]


def _percentile_key(p: float) -> str:
    return f"{p:g}"


def _median_of(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.median(present)) if present else None


def summarize_rounds(
    rounds: list[LatencyRound],
    percentiles: tuple[float, ...],
    unstable_above: float,
    drift: Drift | None = None,
    coverage: Coverage | None = None,
) -> dict[str, Any]:
    """The row's statistics fields from its latency rounds (in round order). Figures that need
    two samples (std, cv, spread) are None with fewer, never 0; intervals need two rounds, carry the
    between-run `drift` earlier runs measured (None: none) and are scaled by the factor the machine's
    history showed them to need (`coverage`, dbench.stats.coverage; None: not checked)."""
    per_round = _thin(rounds)
    us = np.concatenate([np.asarray(r, dtype=np.float64) for r in per_round])
    p10, p50, p90, p99 = (float(v) for v in np.percentile(us, [10, 50, 90, 99]))
    mean = float(us.mean())
    std = cv = spread = mad = None
    if us.size > 1:
        std = float(us.std(ddof=1))
        cv = std / mean if mean > 0 else None
        spread = (p90 - p10) / p50 if p50 > 0 else None
        mad = float(np.median(np.abs(us - p50)))
    medians = [float(r.median_us) for r in rounds]
    checked = coverage or Coverage(0, 0, 1.0)
    intervals = round_spread(p50, medians, drift=drift, scale=checked.factor)
    ci, rerun = intervals.ci, intervals.rerun
    rerun_rel = (rerun[1] - rerun[0]) / 2 / p50 if rerun else None
    return {
        "median_us": p50,
        "p10_us": p10,
        "p90_us": p90,
        "p99_us": p99,
        "min_us": float(min(r.min_us for r in rounds)),
        "mean_us": mean,
        "std_us": std,
        "cv": cv,
        "spread": spread,
        "mad_us": mad,
        "percentiles_us": {_percentile_key(p): float(np.percentile(us, p)) for p in percentiles},
        "ci_low_us": ci[0] if ci else None,
        "ci_high_us": ci[1] if ci else None,
        "ci_rel": (ci[1] - ci[0]) / 2 / p50 if ci else None,
        "rerun_low_us": rerun[0] if rerun else None,
        "rerun_high_us": rerun[1] if rerun else None,
        "rerun_rel": rerun_rel,
        "interval_note": intervals.reason,
        "rounds": len(rounds),
        "round_medians_us": medians,
        "round_sizes": [len(r) for r in per_round],
        "round_sd": intervals.log_sd,
        "drift_sd": drift.sd if drift else None,
        "drift_df": drift.df if drift else None,
        "drift_runs": drift.runs if drift else None,
        **(
            checked.to_dict()
            if coverage is not None and intervals.rerun
            else {"coverage_pairs": None, "coverage_inside": None, "history_factor": None}
        ),
        "samples": int(sum(r.samples for r in rounds)),
        "calls_per_sample": int(max(r.calls_per_sample for r in rounds)),
        "unstable": None if rerun_rel is None else rerun_rel > unstable_above,
        "timed_s": float(sum(r.timed_s for r in rounds)),
        "warmup_s": float(sum(r.warmup_s or 0.0 for r in rounds)),
        "first_call_us": _median_of([r.first_call_us for r in rounds]),
        "runtime_median_us": _median_of([r.runtime_median_us for r in rounds]),
        "samples_us": [v for r in per_round for v in r],
    }
