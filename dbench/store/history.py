"""A machine's earlier runs, read for the drift between runs (dbench.stats.drift) and for how well the
rows' intervals held (dbench.stats.coverage): the round medians, median and re-run interval of every
latency row timed under the same configuration (runtime, version, device, resolved options, weights),
newest runs first. The folder is a machine's results folder (`<out>/<machine>/`), so every log in it
was made on this machine key."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbench.errors import DbenchError
from dbench.stats.coverage import MIN_PAIRS, Coverage, coverage, ratios
from dbench.stats.drift import Drift, decade, own_spread, pooled_drift, row_drift
from dbench.stats.rounds import round_spread
from dbench.store.log import RunLog

HISTORY_RUNS = 10
"""Earlier runs per graph and configuration the drift is measured from, by default (the newest)."""
MAX_LOGS = 50
"""Logs read at most, newest first: an old folder of hundreds of runs must not slow a run's start."""


def config_key(
    runtime: str, version: str, device: str | None, options: dict[str, Any], weights: str | None, mode: str
) -> str:
    """What must match for an earlier row to speak for this one's drift, as one comparable string."""
    return json.dumps([runtime, version, device, options, weights, mode], sort_keys=True, default=str)


def row_config(row: dict[str, Any]) -> str:
    """The configuration key of a stored row."""
    return config_key(
        row.get("runtime", ""),
        row.get("runtime_version", ""),
        row.get("device"),
        row.get("runtime_options") or {},
        row.get("weights"),
        row.get("mode") or "latency",
    )


@dataclass
class History:
    """Earlier runs' round medians by configuration and graph (newest run first, at most `per_graph`),
    and how many logs they came from."""

    runs: dict[str, dict[str, list[list[float]]]] = field(default_factory=dict)
    logs: int = 0
    per_graph: int = HISTORY_RUNS
    medians: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    """Beside `runs`, each earlier row's median (the median of all its samples: what a re-run is judged by)."""
    run_ids: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """Beside `runs`, the run each came from (so that a check can leave whole runs out)."""
    _pooled: dict[str, dict[int, Drift]] = field(default_factory=dict, repr=False)
    _coverage: dict[tuple[str, int | None], Coverage] = field(default_factory=dict, repr=False)
    _ratios_cache: dict[str, dict[str, list[float]]] = field(default_factory=dict, repr=False)

    def add(self, row: dict[str, Any]) -> None:
        """One earlier row, if it is a measured latency row with two rounds or more."""
        medians = row.get("round_medians_us")
        if (
            row.get("status") not in ("ok", "disputed")
            or (row.get("mode") or "latency") != "latency"
            or not medians
            or len(medians) < 2
        ):
            return
        config = row_config(row)
        runs = self.runs.setdefault(config, {}).setdefault(row["graph_id"], [])
        if len(runs) < self.per_graph:
            runs.append([float(m) for m in medians])
            self.medians.setdefault(config, {}).setdefault(row["graph_id"], []).append(
                float(row.get("median_us") or 0.0)
            )
            self.run_ids.setdefault(config, {}).setdefault(row["graph_id"], []).append(
                str(row.get("run_id") or f"#{len(runs)}")
            )

    def drift(self, config: str, graph_id: str, round_medians_us: list[float]) -> Drift | None:
        """The between-run drift for a row of this configuration, graph and rounds: pooled over the
        earlier graphs of its decade, floored by its own graph's earlier runs (dbench.stats.drift.row_drift);
        None where no two earlier runs of any such graph exist."""
        if config not in self._pooled:
            self._pooled[config] = pooled_drift(self.runs.get(config, {}))
        median = sorted(round_medians_us)[len(round_medians_us) // 2]
        own = own_spread(self.runs.get(config, {}).get(graph_id, []))
        return row_drift(self._pooled[config].get(decade(median)), own, round_medians_us)

    def coverage(self, config: str, median_us: float) -> Coverage:
        """How well intervals made as dbench makes them now would have held this configuration's later runs
        (dbench.stats.coverage), over the graphs of this median's decade, or over every graph of the
        configuration where the decade has too few pairs."""
        found = self._coverage_of(config, decade(median_us))
        return found if found.pairs >= MIN_PAIRS else self._coverage_of(config, None)

    def coverage_of(self, config: str, graphs: list[str]) -> Coverage:
        """The same check over the given graphs of a configuration (a calibration's size class)."""
        found = self.pair_ratios(config)
        return coverage(r for graph in graphs for r in found.get(graph, []))

    def _coverage_of(self, config: str, group: int | None) -> Coverage:
        key = (config, group)
        if key not in self._coverage:
            graphs = [
                g
                for g, medians in self.medians.get(config, {}).items()
                if group is None or decade(sorted(medians)[len(medians) // 2]) == group
            ]
            self._coverage[key] = self.coverage_of(config, graphs)
        return self._coverage[key]

    def pair_ratios(self, config: str) -> dict[str, list[float]]:
        """Per graph, r_ij for every earlier run i and later run j, run i's interval made as a new row's is
        made now but from the history without runs i and j: a new row's own run and its re-run are never in
        the history it is made from, so neither may be here (with them, a big shift would widen the very
        interval that is judged on it, and the check would always pass)."""
        if config in self._ratios_cache:
            return self._ratios_cache[config]
        graphs = self.runs.get(config, {})
        ids = self.run_ids.get(config, {})
        pooled: dict[frozenset, dict[int, Drift]] = {}
        found: dict[str, list[float]] = {}
        for graph, runs in graphs.items():
            order = list(zip(ids[graph], runs, self.medians[config][graph]))[::-1]  # oldest first
            for k, (id_i, rounds_i, median_i) in enumerate(order):
                for id_j, _, median_j in order[k + 1 :]:
                    left_out = frozenset((id_i, id_j))
                    if left_out not in pooled:
                        pooled[left_out] = pooled_drift(
                            {g: [r for r, i in zip(rs, ids[g]) if i not in left_out] for g, rs in graphs.items()}
                        )
                    own = own_spread([r for r, i in zip(runs, ids[graph]) if i not in left_out])
                    drift = row_drift(pooled[left_out].get(decade(sorted(rounds_i)[len(rounds_i) // 2])), own, rounds_i)
                    spread = round_spread(median_i, rounds_i, drift=drift)
                    if spread.rerun and median_i and median_j:
                        found.setdefault(graph, []).extend(
                            ratios([(median_i, math.log(spread.rerun[1] / median_i)), (median_j, None)])
                        )
        self._ratios_cache[config] = found
        return found

    def graphs_with_runs(self) -> int:
        """How many (configuration, graph) pairs have the two earlier runs a drift needs."""
        return sum(1 for graphs in self.runs.values() for runs in graphs.values() if len(runs) >= 2)


def read_history(folder: Path, exclude: str, per_graph: int = HISTORY_RUNS) -> History:
    """The earlier runs in a machine's results folder, newest first (run ids sort by time), leaving
    out the run `exclude` (the one being made or resumed); a log this dbench cannot read is skipped."""
    history = History(per_graph=per_graph)
    if per_graph <= 0 or not folder.is_dir():
        return history
    logs = sorted((p for p in folder.glob("run-*.jsonl") if p.stem != exclude), reverse=True)[:MAX_LOGS]
    for path in logs:
        try:
            rows = RunLog.read(path).rows()
        except (DbenchError, OSError, ValueError):
            continue
        history.logs += 1
        for row in rows:
            history.add(row)
    return history
