"""The real coverage of dbench's intervals and the real error rates of its verdicts, at the round
counts a run uses, by simulation (no machine is measured: the numbers hold anywhere).

Rounds are drawn as a run meets them: a log-normal between-round term (the process, session and
drift that a re-run changes) plus a small in-round term, and optionally a heavy tail (one round in
ten 3x further out) to show what a non-normal machine does to the t-based intervals. Printed:

* the row's interval of the median (t over R rounds): how often it holds the true median;
* the row's re-run interval: how often a fresh run's centre falls in it;
* the old interval (order statistics over pooled samples, one session): its coverage of a re-run;
* compare's per-kernel false verdict rate on identical kernels (Welch over rounds, paired rounds),
  and the share of whole tables (100 kernels) with any verdict, without and with the FDR control;
* the minimum sample count the old asymptotic Mann-Whitney interval was applied at, and its coverage;
* on a machine whose runs move as a whole (a run-wide offset its rounds share), the re-run interval
  and Welch's false verdicts from the rounds alone and with the drift between runs that H earlier runs
  of 20 graphs measured (dbench.stats.drift: pooled, floored by the graph's own runs);
* on a machine whose whole-run shifts are heavy-tailed (most runs within 3 %, one in five 12 % out), the
  re-run interval with the drift as dbench makes it, before and after the widening its history asks for
  (dbench.store.history.History.coverage, dbench.stats.coverage), and how much wider that made it.

    python benchmarks/interval_coverage.py [--trials 4000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from dbench.stats.differences import ALPHA, paired, welch
from dbench.stats.drift import decade, own_spread, pooled_drift, row_drift
from dbench.stats.fdr import bh_adjusted
from dbench.stats.rounds import round_spread


def draw(rng, runs: int, rounds: int, between: float, within: float, heavy: bool) -> np.ndarray:
    """Log round medians around 0: a between-round term, a within-round term, and (heavy) one round
    in ten three times further out."""
    scale = np.where(rng.random((runs, rounds)) < 0.1, 3.0, 1.0) if heavy else 1.0
    return between * scale * rng.standard_normal((runs, rounds)) + within * rng.standard_normal((runs, rounds))


def row_coverage(rng, trials: int, rounds: int, heavy: bool) -> tuple[float, float]:
    first, again = draw(rng, trials, rounds, 0.05, 0.01, heavy), draw(rng, trials, rounds, 0.05, 0.01, heavy)
    covered = held = 0
    for a, b in zip(first, again):
        spread = round_spread(math.exp(a.mean()), list(np.exp(a)))
        covered += spread.ci[0] <= 1.0 <= spread.ci[1]
        held += spread.rerun[0] <= math.exp(b.mean()) <= spread.rerun[1]
    return covered / trials, held / trials


def old_interval_coverage(rng, trials: int) -> float:
    """The schema-2 interval: order statistics over one session's pooled samples (n = 200), whose
    re-run differs by a between-run term (5 %) the samples never see."""
    from math import comb

    n, alpha = 200, 0.05
    low, cdf = 0, 0.0
    for k in range(n + 1):
        cdf += comb(n, k) / 2.0**n
        if 2 * cdf > alpha:
            break
        low = k + 1
    held = 0
    for _ in range(trials):
        run, rerun = 0.05 * rng.standard_normal(2)
        samples = np.sort(run + 0.02 * rng.standard_normal(n))
        held += samples[low - 1] <= rerun + 0.0 <= samples[n - low]
    return held / trials


def verdict_rates(rng, trials: int, rounds: int, heavy: bool) -> tuple[float, float]:
    """Per-kernel false verdict rate on identical kernels: Welch over two runs' rounds, and the paired
    test over an interleaved run's rounds (a drift shared by both variants in each round)."""
    welch_false = paired_false = 0
    for _ in range(trials):
        a, b = draw(rng, 1, rounds, 0.05, 0.01, heavy)[0], draw(rng, 1, rounds, 0.05, 0.01, heavy)[0]
        welch_false += welch(np.exp(a), np.exp(b)).p <= ALPHA
        drift = draw(rng, 1, rounds, 0.05, 0.0, heavy)[0]
        pa, pb = drift + 0.01 * rng.standard_normal(rounds), drift + 0.01 * rng.standard_normal(rounds)
        paired_false += paired(np.exp(pa), np.exp(pb)).p <= ALPHA
    return welch_false / trials, paired_false / trials


def table_rates(rng, tables: int, kernels: int, rounds: int) -> tuple[float, float]:
    """Share of A-vs-A tables with any verdict: per-kernel 5 % tests alone, and with BH at 5 %."""
    raw = controlled = 0
    for _ in range(tables):
        p = [
            welch(
                np.exp(draw(rng, 1, rounds, 0.05, 0.01, False)[0]), np.exp(draw(rng, 1, rounds, 0.05, 0.01, False)[0])
            ).p
            for _ in range(kernels)
        ]
        raw += any(v <= ALPHA for v in p)
        controlled += any(q <= 0.05 for q in bh_adjusted(p))
    return raw / tables, controlled / tables


def old_moses_coverage(rng, trials: int, n: int) -> float:
    """The old compare interval (asymptotic Moses / Mann-Whitney, no continuity correction) on two
    identical sample sets of n each: how often it holds 1."""
    z = 1.959964
    k = int(math.floor(n * n / 2 - z * math.sqrt(n * n * (2 * n + 1) / 12)))
    hits = 0
    for _ in range(trials):
        a, b = rng.standard_normal(n), rng.standard_normal(n)
        d = np.sort((b[None, :] - a[:, None]).ravel())
        k = min(max(k, 0), d.size - 1)
        hits += d[k] <= 0.0 <= d[d.size - 1 - k]
    return hits / trials


def drifting_run(rng, rounds: int = 3, offset_sd: float = 0.05, within: float = 0.01) -> list[float]:
    """One run of a 300 µs graph on a machine whose runs move as a whole: a run-wide offset its rounds share."""
    return list(300.0 * np.exp(offset_sd * rng.standard_normal() + within * rng.standard_normal(rounds)))


def drift_rates(rng, trials: int, history_runs: int) -> tuple[float, float, float, float]:
    """(re-run interval holds a later run: rounds alone, with the drift; Welch false verdicts on two
    runs: rounds alone, with the drift), the drift from `history_runs` earlier runs of 20 graphs."""
    held_alone = held_drift = false_alone = false_drift = 0
    for _ in range(trials):
        history = {f"g{i}": [drifting_run(rng) for _ in range(history_runs)] for i in range(20)}
        pooled = pooled_drift(history).get(decade(300.0))
        row, later = drifting_run(rng), drifting_run(rng)
        drift = row_drift(pooled, own_spread(history["g0"]), row)
        center, again = float(np.median(row)), float(np.median(later))
        alone, carried = round_spread(center, row), round_spread(center, row, drift=drift)
        held_alone += alone.rerun[0] <= again <= alone.rerun[1]
        held_drift += carried.rerun[0] <= again <= carried.rerun[1]
        false_alone += welch(row, later).p <= ALPHA
        other = row_drift(pooled, own_spread(history["g0"]), later)
        variance = (drift.sd**2 + other.sd**2) / 2
        false_drift += welch(row, later, variance, min(drift.df, other.df)).p <= ALPHA
    return held_alone / trials, held_drift / trials, false_alone / trials, false_drift / trials


def heavy_shift(rng) -> float:
    """A whole run's log shift: most runs within 3 %, one in five 12 % out (a machine state that outlasts runs)."""
    return float(rng.normal(0, 0.12 if rng.random() < 0.2 else 0.03))


def history_rows(runs: list[list[list[float]]]):
    """Rows of earlier runs as dbench made them, oldest first: each run's intervals carry the drift its own
    earlier runs measured (dbench.store.history.History, as read at that run's start)."""
    from dbench.store.history import History

    config = {
        "runtime": "r",
        "runtime_version": "1",
        "device": "d",
        "runtime_options": {},
        "weights": "const",
        "mode": "latency",
        "status": "ok",
    }
    made: list[dict] = []
    for graphs in runs:
        history = History()
        for row in reversed(made):
            history.add(row)
        for g, medians in enumerate(graphs):
            key = history.runs and next(iter(history.runs))
            drift = history.drift(key, f"g{g}", medians) if key else None
            spread = round_spread(float(np.median(medians)), medians, drift=drift)
            made.append(
                {
                    **config,
                    "graph_id": f"g{g}",
                    "median_us": float(np.median(medians)),
                    "round_medians_us": medians,
                    "rerun_high_us": spread.rerun[1],
                    "rerun_low_us": spread.rerun[0],
                    "drift_sd": drift.sd if drift else None,
                    "drift_df": drift.df if drift else None,
                }
            )
    history = History()
    for row in reversed(made):
        history.add(row)
    return history


def widening_rates(rng, trials: int, history_runs: int) -> tuple[float, float, float]:
    """(a later run's median inside the row's re-run interval with the drift as dbench makes it, the same
    widened by the factor its history asked for, the median factor) on heavy-tailed whole-run shifts."""
    held = held_widened = 0
    factors = []
    total = 0
    for _ in range(trials):
        runs = [
            [list(300.0 * (1 + 0.2 * g) * np.exp(heavy_shift_run + 0.01 * rng.standard_normal(3))) for g in range(10)]
            for heavy_shift_run in [heavy_shift(rng) for _ in range(history_runs + 2)]
        ]
        history = history_rows(runs[:history_runs])
        key = next(iter(history.runs))
        later = runs[-1]
        for g, medians in enumerate(runs[-2]):
            drift = history.drift(key, f"g{g}", medians)
            center = float(np.median(medians))
            spread = round_spread(center, medians, drift=drift)
            factor = history.coverage(key, center).factor
            again = float(np.median(later[g]))
            half = math.log(spread.rerun[1] / center)
            held += abs(math.log(again / center)) <= half
            held_widened += abs(math.log(again / center)) <= half * factor
            factors.append(factor)
            total += 1
    factors.sort()
    return held / total, held_widened / total, factors[len(factors) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{args.trials} simulated runs per cell; between-round SD 5 %, in-round 1 %; heavy: one round in ten 3x out")
    print(
        f"{'rounds':>6} {'tail':>6} {'median CI covers':>17} {'re-run interval holds':>22} "
        f"{'Welch false':>12} {'paired false':>13}"
    )
    for rounds in (3, 5, 10):
        for heavy in (False, True):
            covered, held = row_coverage(rng, args.trials, rounds, heavy)
            welch_false, paired_false = verdict_rates(rng, args.trials // 2, rounds, heavy)
            print(
                f"{rounds:>6} {'heavy' if heavy else 'normal':>6} {covered:>17.1%} {held:>22.1%} "
                f"{welch_false:>12.1%} {paired_false:>13.1%}"
            )
    raw, controlled = table_rates(rng, max(100, args.trials // 20), 100, 3)
    print(
        f"\nA-vs-A tables of 100 kernels, 3 rounds a side: any verdict {raw:.0%} with per-kernel 5 % tests, "
        f"{controlled:.1%} with the false-discovery control"
    )
    print(
        "old interval (pooled samples of one session, n=200) holds a re-run's median: "
        f"{old_interval_coverage(rng, args.trials):.1%}"
    )
    for n in (2, 3, 5):
        print(
            f"old Moses interval at n={n} a side holds 1 on identical sets: "
            f"{old_moses_coverage(rng, args.trials, n):.1%}"
        )
    print(
        "\nruns that move as a whole (run-wide SD 5 %, rounds 1 %, 3 rounds), drift from H earlier runs of 20 graphs:"
    )
    print(
        f"{'H':>3} {'re-run holds: rounds alone':>27} {'with drift':>11} {'Welch false: rounds alone':>26} "
        f"{'with drift':>11}"
    )
    for history_runs in (2, 3, 5, 10):
        held_alone, held_drift, false_alone, false_drift = drift_rates(rng, args.trials // 4, history_runs)
        print(f"{history_runs:>3} {held_alone:>27.1%} {held_drift:>11.1%} {false_alone:>26.1%} {false_drift:>11.1%}")
    print(
        "\nheavy-tailed whole-run shifts (4 runs in 5 within SD 3 %, 1 in 5 SD 12 %; rounds 1 %), 10 graphs, H "
        "earlier runs:"
    )
    print(f"{'H':>3} {'re-run holds: with the drift':>29} {'and widened by its history':>27} {'median factor':>14}")
    for history_runs in (4, 6, 10):
        held, widened, factor = widening_rates(rng, max(20, args.trials // 40), history_runs)
        print(f"{history_runs:>3} {held:>29.1%} {widened:>27.1%} {factor:>14.2f}")


if __name__ == "__main__":
    main()
