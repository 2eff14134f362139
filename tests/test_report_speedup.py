"""The report's speedups sit inside their own intervals: a kernel's speedup is the estimate its test makes
(geometric-mean round medians, as `dbench compare`), not the ratio of the rows' medians, which can fall
outside that interval when a row's rounds are skewed; the geometric mean over a group is centred alike."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dbench.report.frames import Group
from dbench.report.verdicts import geomean_speedup, speedups


def _frame(seed: int) -> pd.DataFrame:
    """Two runtimes' rows of eight kernels from separate runs of 12 rounds, b 20 % faster; five of b's rounds
    run 1.5 times slower, which drags the round medians' geometric mean but not the row's median."""
    rng = np.random.default_rng(seed)
    rows = []
    for kernel in range(8):
        base = float(rng.uniform(100, 1000))
        for variant, run_id, factor in (("a", "run-a", 1.0), ("b", "run-b", 0.8)):
            rounds = [base * factor * float(rng.uniform(0.98, 1.02)) for _ in range(12)]
            if variant == "b":
                rounds[:5] = [r * 1.5 for r in rounds[:5]]
            rows.append(
                {
                    "kernel": f"k{kernel}",
                    "machine": "m",
                    "variant": variant,
                    "precision": "fp32",
                    "run_id": run_id,
                    "counts": True,
                    "median_us": float(np.median(rounds)),
                    "round_medians_us": rounds,
                    "drift_sd": None,
                    "drift_df": None,
                }
            )
    return pd.DataFrame(rows)


def test_each_speedup_and_their_geometric_mean_lie_inside_their_intervals(seed):
    frame = _frame(seed)
    a, b = Group("m", "a", "fp32", "a"), Group("m", "b", "fp32", "b")
    found = [s for (label, _), s in speedups(frame, [a, b], a).items() if label == "b"]
    assert len(found) == 8 and all(s.low is not None for s in found)
    medians = [
        float(
            frame[(frame.variant == "a") & (frame.kernel == k)].median_us.iloc[0]
            / frame[(frame.variant == "b") & (frame.kernel == k)].median_us.iloc[0]
        )
        for k in sorted(set(frame.kernel))
    ]
    assert any(not s.low <= m <= s.high for s, m in zip(found, medians)), "no kernel here tells the two estimates apart"
    for s in found:
        assert s.low <= s.value <= s.high
    mean, low, high = geomean_speedup(found)
    assert low <= mean <= high
