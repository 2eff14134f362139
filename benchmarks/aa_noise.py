"""Where an interleaved A/A run's noise lives, read from its stored rounds (no new measurement): would
another per-round statistic, or taking out what a round's graphs share, let the paired test resolve a
smaller change?

For every kernel of at least --min-us with both variants in at least 3 common rounds, the paired test
of `dbench compare` (dbench.stats.differences.paired, unmoderated) is applied to each round's
* median (what dbench uses), mean, minimum, 10th and 25th percentile of its samples: a statistic that
  ignores slow moments would resolve less if the noise were bursts inside a round;
* median, less the round's effect (the median over the round's graphs of their log(b/a), minus that
  over all rounds; one degree of freedom spent): a round's worker pair serves all its graphs, so a
  slow worker would shift every graph of the round alike.
It prints, per statistic, the median and 90th-percentile kernel's resolvable change (found 80 % of the
time at 5 %), the share of kernels resolving 10 %, and the paired rounds the 90th-percentile kernel
would need for 10 % with its noise per round held as measured.

    python benchmarks/aa_noise.py results/<machine>/run-*.jsonl [--min-us 100]
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dbench.stats.differences import ALPHA, POWER, Difference, paired, paired_rounds_to_resolve
from dbench.stats.student import t_quantile
from dbench.store.log import RunLog

STATISTICS: dict[str, Callable[[np.ndarray], float]] = {
    "median": np.median,
    "mean": np.mean,
    "min": np.min,
    "p10": lambda x: float(np.percentile(x, 10)),
    "p25": lambda x: float(np.percentile(x, 25)),
}
ROUND_EFFECT = "median less the round's effect"


def round_samples(log: RunLog) -> tuple[list[str], dict[str, dict[str, dict[int, np.ndarray]]]]:
    """The run's two variant labels and, per graph and variant, each round's samples (µs)."""
    labels = [v["label"] for v in log.header().get("variants") or []]
    if len(labels) != 2:
        raise SystemExit(f"{log.path}: an interleaved run of exactly two variants is needed, it has {len(labels)}")
    samples: dict[str, dict[str, dict[int, np.ndarray]]] = defaultdict(lambda: defaultdict(dict))
    for record in log.rounds():
        stats = record["outcome"].get("stats") or {}
        if stats.get("samples_us") and not stats.get("mode"):
            samples[record["graph_id"]][record["variant"]][record["round"]] = np.asarray(stats["samples_us"])
    return labels, samples


def paired_logs(labels: list[str], samples, min_us: float) -> dict[str, tuple[list[int], dict, dict]]:
    """Per kernel of at least `min_us` (median over its rounds): its common rounds and both sides' samples."""
    kept = {}
    for graph, sides in samples.items():
        a, b = sides.get(labels[0], {}), sides.get(labels[1], {})
        rounds = sorted(set(a) & set(b))
        if len(rounds) >= 3 and np.median(np.concatenate([a[r] for r in rounds])) >= min_us:
            kept[graph] = (rounds, a, b)
    return kept


def resolvable_by_statistic(kernels) -> dict[str, list[tuple[float, float, int]]]:
    """Per statistic: each kernel's (resolvable change, SD per pair of log(b/a), pairs)."""
    out: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for rounds, a, b in kernels.values():
        for name, stat in STATISTICS.items():
            diff = paired([stat(a[r]) for r in rounds], [stat(b[r]) for r in rounds])
            if diff is not None:
                out[name].append((diff.resolvable, diff.se * math.sqrt(len(rounds)), len(rounds)))
    return out


def resolvable_without_round_effect(kernels) -> tuple[list[tuple[float, float, int]], float]:
    """Each kernel's resolvable change once each round's shared shift is taken out, and that shift's SD."""
    logs = {
        g: {r: math.log(np.median(b[r]) / np.median(a[r])) for r in rounds} for g, (rounds, a, b) in kernels.items()
    }
    by_round: dict[int, list[float]] = defaultdict(list)
    for per_round in logs.values():
        for r, d in per_round.items():
            by_round[r].append(d)
    centre = float(np.median([d for ds in by_round.values() for d in ds]))
    effect = {r: float(np.median(ds)) - centre for r, ds in by_round.items()}
    out = []
    for per_round in logs.values():
        d = np.array([v - effect[r] for r, v in per_round.items()])
        df = d.size - 2
        if df < 1:
            continue
        sd = float(np.sqrt(((d - d.mean()) ** 2).sum() / df))
        out.append(
            (math.exp((t_quantile(1 - ALPHA / 2, df) + t_quantile(POWER, df)) * sd / math.sqrt(d.size)) - 1, sd, d.size)
        )
    return out, float(np.std(list(effect.values()), ddof=1))


def summary(name: str, kernels: list[tuple[float, float, int]]) -> str:
    """One line: median and p90 resolvable, share resolving 10 %, rounds the p90 kernel would need."""
    resolvable = np.array([k[0] for k in kernels])
    p90 = float(np.percentile(resolvable, 90))
    change, sd, pairs = min(kernels, key=lambda k: abs(k[0] - p90))  # the kernel nearest the 90th percentile
    test = Difference(1.0, 1.0, 1.0, 1.0, pairs - 1, sd / math.sqrt(pairs), "paired", change)  # what the estimate reads
    needed = paired_rounds_to_resolve(test, pairs, 0.10)
    return (
        f"  {name:32s} {np.median(resolvable) * 100:16.1f} % {p90 * 100:6.1f} % "
        f"{np.mean(resolvable <= 0.10) * 100:13.0f} % {needed if needed else '>1000':>29}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", type=Path, help="interleaved A/A run logs (two variants)")
    parser.add_argument("--min-us", type=float, default=100.0, help="kernels at least this slow (median, µs)")
    args = parser.parse_args()
    for path in args.logs:
        log = RunLog.read(path)
        labels, samples = round_samples(log)
        kernels = paired_logs(labels, samples, args.min_us)
        if not kernels:
            print(f"{path.name}: no kernel of {args.min_us:g} µs or more in 3 common rounds")
            continue
        pairs = sorted(len(k[0]) for k in kernels.values())
        print(
            f"{path.name}: {labels[0]} vs {labels[1]}, {len(kernels)} kernels >= {args.min_us:g} µs, "
            f"{pairs[0]}-{pairs[-1]} paired rounds (median {pairs[len(pairs) // 2]})"
        )
        print(
            f"  {'per-round statistic':32s} {'resolvable: median':>18s} {'p90':>8s} {'resolving 10 %':>15s} "
            f"{'rounds for 10 % (p90 kernel)':>29s}"
        )
        for name, found in resolvable_by_statistic(kernels).items():
            print(summary(name, found))
        without, effect_sd = resolvable_without_round_effect(kernels)
        print(summary(ROUND_EFFECT, without) + f"   (the rounds' shared shift: SD {effect_sd * 100:.1f} %)")


if __name__ == "__main__":
    main()
