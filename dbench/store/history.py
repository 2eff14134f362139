"""A machine's earlier runs, read for the drift between runs (dbench.stats.drift): the round medians of
every latency row timed under the same configuration (runtime, version, device, resolved options,
weights), newest runs first. The folder is a machine's results folder (`<out>/<machine>/`), so every
log in it was made on this machine key."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbench.errors import DbenchError
from dbench.stats.drift import Drift, decade, own_spread, pooled_drift, row_drift
from dbench.store.log import RunLog

HISTORY_RUNS = 10
"""Earlier runs per graph and configuration the drift is measured from, by default (the newest)."""
MAX_LOGS = 50
"""Logs read at most, newest first: an old folder of hundreds of runs must not slow a run's start."""


def config_key(runtime: str, version: str, device: str | None, options: dict[str, Any], weights: str | None,
               mode: str) -> str:
    """What must match for an earlier row to speak for this one's drift, as one comparable string."""
    return json.dumps([runtime, version, device, options, weights, mode], sort_keys=True, default=str)


def row_config(row: dict[str, Any]) -> str:
    """The configuration key of a stored row."""
    return config_key(row.get("runtime", ""), row.get("runtime_version", ""), row.get("device"),
                      row.get("runtime_options") or {}, row.get("weights"), row.get("mode") or "latency")


@dataclass
class History:
    """Earlier runs' round medians by configuration and graph (newest run first, at most `per_graph`),
    and how many logs they came from."""

    runs: dict[str, dict[str, list[list[float]]]] = field(default_factory=dict)
    logs: int = 0
    per_graph: int = HISTORY_RUNS
    _pooled: dict[str, dict[int, Drift]] = field(default_factory=dict, repr=False)

    def add(self, row: dict[str, Any]) -> None:
        """One earlier row, if it is a measured latency row with two rounds or more."""
        medians = row.get("round_medians_us")
        if row.get("status") not in ("ok", "disputed") or (row.get("mode") or "latency") != "latency" or not medians or len(medians) < 2:
            return
        graphs = self.runs.setdefault(row_config(row), {})
        runs = graphs.setdefault(row["graph_id"], [])
        if len(runs) < self.per_graph:
            runs.append([float(m) for m in medians])

    def drift(self, config: str, graph_id: str, round_medians_us: list[float]) -> Drift | None:
        """The between-run drift for a row of this configuration, graph and rounds: pooled over the
        earlier graphs of its decade, floored by its own graph's earlier runs (dbench.stats.drift.row_drift);
        None where no two earlier runs of any such graph exist."""
        if config not in self._pooled:
            self._pooled[config] = pooled_drift(self.runs.get(config, {}))
        median = sorted(round_medians_us)[len(round_medians_us) // 2]
        own = own_spread(self.runs.get(config, {}).get(graph_id, []))
        return row_drift(self._pooled[config].get(decade(median)), own, round_medians_us)

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
