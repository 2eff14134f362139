"""A calibration from an A/A run's rows: per kernel, the SD of a paired round's log ratio (the two copies
of one runtime timed back to back in every round) and of one copy's rounds; per size class
(dbench.store.calibration.class_of), the median kernel's figures, the noisiest pair, and the drift
between runs that this machine's earlier runs of the same runtime and threads show (dbench.stats.drift:
the spread of runs' means beyond what their rounds explain, pooled over the class's graphs)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from dbench.stats.coverage import Coverage, coverage
from dbench.stats.drift import between_runs
from dbench.store.calibration import NoiseClass, class_of
from dbench.store.history import History


def kernel_noise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per graph timed by both copies in two rounds or more: its median, paired rounds, the
    SD of a pair's log ratio, the SD of a copy's rounds (the median of the two), and one copy's wall
    seconds per round (inputs, preparing, warm-up, sampling)."""
    by_graph: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("status") == "ok" and len(row.get("round_medians_us") or []) >= 2:
            by_graph.setdefault(row["graph_id"], []).append(row)
    found = []
    for graph, pair in by_graph.items():
        if len(pair) != 2:
            continue
        a, b = (np.log(np.asarray(r["round_medians_us"], dtype=np.float64)) for r in pair)
        n = min(a.size, b.size)
        if n < 3:
            continue
        spent = [
            sum(r.get(k) or 0.0 for k in ("inputs_s", "prepare_s", "timed_s", "warmup_s")) / (r.get("rounds") or n)
            for r in pair
        ]
        found.append(
            {
                "graph_id": graph,
                "median_us": float(math.exp((a.mean() + b.mean()) / 2)),
                "pairs": int(n),
                "pair_sd": float(np.std(b[:n] - a[:n], ddof=1)),
                "round_sd": float(np.median([np.std(a, ddof=1), np.std(b, ddof=1)])),
                "round_s": float(np.mean(spent)),
            }
        )
    return sorted(found, key=lambda k: k["median_us"])


def drift_by_class(history: History, runtime: str, threads: int | None) -> dict[float, tuple[float, int]]:
    """Size class -> (the drift between runs, as an SD of a run's log time, the graphs it was pooled over)
    from the earlier runs of this runtime at this thread count."""
    sums: dict[float, list[float]] = {}
    for config, graphs in history.runs.items():
        name, _, _, options, _, mode = json.loads(config)
        if name != runtime or mode != "latency" or (options or {}).get("threads") != threads:
            continue
        for runs in graphs.values():
            found = between_runs(runs)
            if found is None:
                continue
            variance, df = found
            group = sums.setdefault(class_of(float(np.median([np.median(r) for r in runs]))), [0.0, 0.0, 0])
            group[0] += variance * df
            group[1] += df
            group[2] += 1
    return {c: (math.sqrt(max(total / df, 0.0)), int(count)) for c, (total, df, count) in sums.items() if df}


def noise_classes(
    kernels: list[dict[str, Any]], drift: dict[float, tuple[float, int]], covered: dict[float, Coverage] | None = None
) -> list[NoiseClass]:
    """The size classes of the kernels measured, with the drift and the interval coverage of each where the
    history has them."""
    grouped: dict[float, list[dict[str, Any]]] = {}
    for kernel in kernels:
        grouped.setdefault(class_of(kernel["median_us"]), []).append(kernel)
    classes = []
    for class_us, members in sorted(grouped.items()):
        pair_sds = [k["pair_sd"] for k in members]
        found = drift.get(class_us)
        held = (covered or {}).get(class_us)
        classes.append(
            NoiseClass(
                class_us,
                [k["graph_id"] for k in members],
                sum(k["pairs"] for k in members),
                float(np.median(pair_sds)),
                float(max(pair_sds)),
                float(np.median([k["round_sd"] for k in members])),
                found[0] if found else None,
                found[1] if found else 0,
                float(np.median([k["round_s"] for k in members])),
                held.pairs if held else 0,
                held.inside if held else 0,
                held.factor if held else None,
            )
        )
    return classes


def coverage_by_class(history: History, runtime: str, threads: int | None) -> dict[float, Coverage]:
    """Size class -> how intervals made as dbench makes them now would have held this runtime and thread
    count's later runs (dbench.store.history.History.coverage_of), pooled over the class's graphs and the
    runtime's configurations."""
    found: dict[float, list[float]] = {}
    for config, graphs in history.medians.items():
        name, _, _, options, _, mode = json.loads(config)
        if name != runtime or mode != "latency" or (options or {}).get("threads") != threads:
            continue
        pairs = history.pair_ratios(config)
        for graph, medians in graphs.items():
            found.setdefault(class_of(float(np.median(medians))), []).extend(pairs.get(graph, []))
    return {class_us: coverage(ratios) for class_us, ratios in found.items() if ratios}
