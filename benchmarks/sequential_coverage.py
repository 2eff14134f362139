"""`run --resolve` by simulation: whether its stopping rule keeps the level it states, what it costs in
rounds, and how well a short calibration predicts those rounds (no machine is measured: the figures hold
for any machine whose paired rounds are independent draws of the noise given).

A graph's paired rounds are log ratios drawn around the true change (normal, or heavy-tailed: one round in
ten three times further out, as this VM's rounds are). --resolve gives rounds until the anytime-valid
half-width (dbench.stats.sequential) is within the target or the rounds reach the most (60), then the
verdict is the interval's: changed when it excludes 1. Printed per noise level (SD of a paired round's
log ratio) and target:

* A/A (no change): the share of graphs called changed, by the anytime-valid interval, and by Student's t
  looked at the same way (the rule it replaces), whose level looking after every round breaks;
* a true change of twice the target: the share called changed (power), and the share whose interval
  holds the true change (coverage), at the round it stopped;
* rounds taken (median, 90th percentile) against the rounds `dbench calibrate` predicts from 10 paired
  rounds of the same noise (dbench.stats.sequential.rounds_to_reach on their SD): the share of graphs
  whose rounds were within a factor of 2 of the prediction.

    python benchmarks/sequential_coverage.py [--trials 2000] [--seed 1]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from dbench.stats.sequential import critical, rounds_to_reach
from dbench.stats.student import t_quantile

MOST = 60
START = 3
CALIBRATION_PAIRS = 10


def draw(rng, size: int, shift: float, sd: float, heavy: bool) -> np.ndarray:
    """Paired log ratios: normal around `shift`, or one in ten three times further out (same SD overall)."""
    if not heavy:
        return shift + sd * rng.standard_normal(size)
    scale = np.where(rng.random(size) < 0.1, 3.0, 1.0)
    return shift + sd / math.sqrt(0.9 + 0.1 * 9) * scale * rng.standard_normal(size)


def resolve(path: np.ndarray, target: float, boundary) -> tuple[int, float, float]:
    """Rounds until the boundary's half-width is within log(1 + target), or MOST: (rounds, mean, half-width)."""
    goal = math.log1p(target)
    for n in range(START, MOST + 1):
        x = path[:n]
        half = boundary(n) * float(np.std(x, ddof=1)) / math.sqrt(n)
        if half <= goal or n == MOST:
            return n, float(x.mean()), half
    raise AssertionError("unreachable")


def cell(rng, trials: int, sd: float, target: float, heavy: bool) -> dict[str, float]:
    anytime, naive = critical, lambda n: t_quantile(0.975, n - 1)
    aa_any = aa_naive = found = covered = within = 0
    taken = []
    change = math.log1p(2 * target)
    for _ in range(trials):
        same = draw(rng, MOST, 0.0, sd, heavy)
        n, mean, half = resolve(same, target, anytime)
        aa_any += abs(mean) > half
        n, mean, half = resolve(same, target, naive)
        aa_naive += abs(mean) > half
        moved = draw(rng, MOST, change, sd, heavy)
        n, mean, half = resolve(moved, target, anytime)
        found += mean - half > 0
        covered += abs(mean - change) <= half
        taken.append(n)
        calibration = draw(rng, CALIBRATION_PAIRS, 0.0, sd, heavy)
        predicted = rounds_to_reach(float(np.std(calibration, ddof=1)), target) or 1000
        within += predicted / 2 <= n <= predicted * 2 if n < MOST else predicted >= MOST / 2
    taken.sort()
    return {
        "aa_any": aa_any / trials,
        "aa_naive": aa_naive / trials,
        "found": found / trials,
        "covered": covered / trials,
        "median": taken[len(taken) // 2],
        "p90": taken[int(0.9 * len(taken))],
        "within": within / trials,
        "expected": rounds_to_reach(sd, target) or 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(
        f"{args.trials} simulated graphs a line; rounds {START} to {MOST}; a true change of twice the target for power"
    )
    print(
        f"{'tail':>6} {'pair SD':>7} {'target':>6} {'A/A changed: anytime':>21} {'t peeking':>10} "
        f"{'2x target found':>16} "
        f"{'interval covers':>16} {'rounds: median':>15} {'p90':>4} {'at true SD':>10} {'calibrate within 2x':>20}"
    )
    for heavy in (False, True):
        for sd in (0.02, 0.05, 0.10):
            for target in (0.02, 0.05, 0.10):
                r = cell(rng, args.trials, sd, target, heavy)
                print(
                    f"{'heavy' if heavy else 'normal':>6} {sd:>7.0%} {target:>6.0%} {r['aa_any']:>21.1%} "
                    f"{r['aa_naive']:>10.1%} "
                    f"{r['found']:>16.1%} {r['covered']:>16.1%} {r['median']:>15} {r['p90']:>4} {r['expected']:>10} "
                    f"{r['within']:>20.1%}"
                )


if __name__ == "__main__":
    main()
