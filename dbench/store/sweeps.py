"""Stream sweeps found among throughput rows: one graph on one configuration (its variant without the
stream count) timed at several stream counts, and where each saturates (dbench.stats.knee)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dbench.stats.knee import Knee, SweepPoint, find_knee

STREAMS_LABEL = re.compile(r"\s*streams=\d+")


@dataclass(frozen=True)
class Sweep:
    """One graph's throughput rows at several stream counts on one configuration, and their knee."""

    graph_id: str
    configuration: str
    rows: list[dict[str, Any]]
    knee: Knee | None


def configuration(row: dict[str, Any]) -> str:
    """The row's variant without its stream count (`ort-cpu streams=2 threads=1` -> `ort-cpu threads=1`),
    after its machine where the row names one (rows a report read from several machines)."""
    variant = STREAMS_LABEL.sub("", row.get("variant") or row.get("runtime") or "").strip()
    return f"{row['machine']} · {variant}" if row.get("machine") else variant


def point(row: dict[str, Any]) -> SweepPoint:
    return SweepPoint(
        row["streams"],
        row["inferences_per_s"],
        row.get("inferences_per_s_low"),
        row.get("latency_p50_us"),
        row.get("latency_p99_us"),
    )


def find_sweeps(rows: list[dict[str, Any]]) -> list[Sweep]:
    """Every graph and configuration whose ok throughput rows cover two or more stream counts, in the
    rows' order."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("mode") == "throughput" and row.get("status") == "ok" and row.get("inferences_per_s"):
            groups.setdefault((row["graph_id"], configuration(row)), []).append(row)
    sweeps = []
    for (graph, config), members in groups.items():
        if len({r["streams"] for r in members}) > 1:
            members = sorted(members, key=lambda r: r["streams"])
            sweeps.append(Sweep(graph, config, members, find_knee([point(r) for r in members])))
    return sweeps
