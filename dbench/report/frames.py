"""The report's tables as pandas frames (numbers, not text): side by side per family, the summary per
runtime, the support matrix and the all-reduce bandwidths. Only verified rows (status ok and output
matching the reference, or disputed: two runtimes agree against the reference) count as times; other
rows show their status."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dbench.errors import UsageError

PROBLEM_STATUSES = ("disputed", "unsupported", "mismatch", "failed", "crashed", "timeout", "oom")
"""Statuses the summary counts per runtime (a disputed row's time counts too, but its reference was overruled)."""


@dataclass(frozen=True)
class Group:
    """One column group: a (machine, variant, precision) and its label; the variant is the runtime,
    or the runtime with its setting in a run that interleaved several (`ort-cpu threads=2`)."""

    machine: str
    variant: str
    precision: str
    label: str
    runtime: str = ""

    def rows(self, frame: pd.DataFrame) -> pd.DataFrame:
        return frame[
            (frame.machine == self.machine) & (frame.variant == self.variant) & (frame.precision == self.precision)
        ]


def groups(frame: pd.DataFrame) -> list[Group]:
    """The column groups in first-seen order; labels name only the parts that vary between groups."""
    keys = list(dict.fromkeys(zip(frame.machine, frame.variant, frame.precision)))
    runtimes = dict(zip(frame.variant, frame.runtime))
    varying = [len({k[i] for k in keys}) > 1 for i in range(3)]
    if not any(varying):
        varying = [False, True, True]
    return [
        Group(*key, " · ".join(part for part, shown in zip(key, varying) if shown), runtimes[key[1]]) for key in keys
    ]


def baseline_group(all_groups: list[Group], baseline: str | None, home: str | None = None) -> Group:
    """The group speedups are relative to: its label, or the first group of that variant or runtime; by
    default the first group measured on `home` (this machine: the user's own runs, not reference runs of
    another), else the first."""
    if baseline is None:
        return next((group for group in all_groups if group.machine == home), all_groups[0])
    for group in all_groups:
        if baseline in (group.label, group.variant, group.runtime):
            return group
    raise UsageError(
        f"--baseline {baseline!r} matches no column group; valid: {', '.join(g.label for g in all_groups)}"
    )


def side_by_side(frame: pd.DataFrame, family: str, all_groups: list[Group], judged: dict, wins: dict) -> pd.DataFrame:
    """One row per kernel of `family`; per group: median_us, tflops, speedup against the baseline with
    its interval and `same` (within noise), rounds, the re-run interval's half-width (and the history's factor on it),
    how many runs of the configuration measured it and their lowest and highest medians, winner (★
    fastest and separated from the next; ≈ fastest but within noise of it), status (the row's status, or
    `unverified`). `judged` and `wins` come from dbench.report.verdicts."""
    rows = frame[frame.family == family]
    kernels = list(dict.fromkeys(rows.kernel))
    table = pd.DataFrame(index=pd.Index(kernels, name="kernel"))
    for group in all_groups:
        mine = group.rows(rows).set_index("kernel").reindex(kernels)
        counted = mine.counts.fillna(False).astype(bool)
        table[(group.label, "median_us")] = mine.median_us.where(counted)
        table[(group.label, "tflops")] = mine.tflops.where(counted)
        found = [judged.get((group.label, k)) for k in kernels]
        table[(group.label, "speedup")] = [s.value if s else None for s in found]
        table[(group.label, "speedup_low")] = [s.low if s else None for s in found]
        table[(group.label, "speedup_high")] = [s.high if s else None for s in found]
        table[(group.label, "same")] = [s.same if s else None for s in found]
        table[(group.label, "rounds")] = mine.rounds.where(counted)
        for name in ("rerun_rel", "history_factor", "runs", "runs_low_us", "runs_high_us"):
            table[(group.label, name)] = mine[name].where(counted) if name in mine else None
        table[(group.label, "status")] = [
            "" if not isinstance(s, str) else ("unverified" if s == "ok" and not c else s)
            for s, c in zip(mine.status, counted)
        ]
        table[(group.label, "winner")] = [
            ("★" if wins[k][1] else "≈") if k in wins and wins[k][0] == group.label else "" for k in kernels
        ]
    table.columns = pd.MultiIndex.from_tuples(table.columns)
    return table


def geomean(values) -> float | None:
    """Geometric mean of the positive finite values, or None when there are none."""
    clean = [v for v in values if v and np.isfinite(v) and v > 0]
    return float(math.exp(np.mean(np.log(clean)))) if clean else None


def runtime_summary(frame: pd.DataFrame, all_groups: list[Group], judged: dict, wins: dict) -> pd.DataFrame:
    """Per group: verified rows, geometric-mean speedup vs the baseline with its 95 % interval, kernels
    won (separated from the next fastest) and tied, counts of each problem status and of precision
    fallbacks."""
    from dbench.report.verdicts import geomean_speedup

    records = []
    for group in all_groups:
        rows = group.rows(frame)
        mean, low, high = geomean_speedup([s for (label, _), s in judged.items() if label == group.label])
        record = {
            "group": group.label,
            "machine": group.machine,
            "runtime": group.runtime,
            "precision": group.precision,
            "graphs": len(rows),
            "verified": int(rows.counts.sum()),
            "geomean_speedup": mean,
            "geomean_low": low,
            "geomean_high": high,
            "won": sum(1 for label, separated in wins.values() if label == group.label and separated),
            "tied": sum(1 for label, separated in wins.values() if label == group.label and not separated),
        }
        record.update({status: int((rows.status == status).sum()) for status in PROBLEM_STATUSES})
        record["precision_fallback"] = int(rows.precision_fallback.fillna(False).astype(bool).sum())
        records.append(record)
    return pd.DataFrame(records).set_index("group")


def support_cell(rows: pd.DataFrame) -> str:
    """`ok`, `unsupported`, ... when every row agrees, else counts (`ok 3/5, mismatch 2`); the
    executed precision is added where it differs from the one asked."""
    counts = rows.status.value_counts()
    text = (
        str(counts.index[0])
        if len(counts) == 1
        else ", ".join(
            f"{status} {n}/{len(rows)}" if status == "ok" else f"{status} {n}" for status, n in counts.items()
        )
    )
    executed = {e for e, fallback in zip(rows.precision_executed, rows.precision_fallback) if fallback}
    return text + (f" (ran {'/'.join(sorted(executed))})" if executed else "")


def support_matrix(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows: machine · runtime; columns: family · precision; cells: support_cell."""
    multi_machine = frame.machine.nunique() > 1
    frame = frame.assign(
        who=frame.runtime if not multi_machine else frame.machine + " · " + frame.runtime,
        what=frame.family + " " + frame.precision,
    )
    cells = {(who, what): support_cell(rows) for (who, what), rows in frame.groupby(["who", "what"], sort=False)}
    whos, whats = list(dict.fromkeys(frame.who)), list(dict.fromkeys(frame.what))
    return pd.DataFrame(
        [[cells.get((w, c), "") for c in whats] for w in whos], index=pd.Index(whos, name="runtime"), columns=whats
    )


ALLREDUCE_VALUES = {
    "busbw_gbps": "busbw GB/s",
    "algbw_gbps": "algbw GB/s",
    "deepbench_gbps": "DeepBench GB/s",
    "time_mean_us": "time µs",
}


def allreduce_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Bytes down the side; per (machine, implementation, ranks): busbw, algbw, DeepBench GB/s, time.
    Only rows whose check passed carry numbers; the others show their status."""
    if frame.empty:
        return frame
    frame = frame.assign(
        where=frame.machine + " · " + frame.implementation + " · " + frame.ranks.astype(str) + " ranks"
    )
    table = pd.DataFrame(index=pd.Index(sorted(frame["bytes"].unique()), name="bytes"))
    for where, rows in frame.groupby("where", sort=False):
        rows = rows.drop_duplicates("bytes", keep="last").set_index("bytes")
        for column, name in ALLREDUCE_VALUES.items():
            table[(where, name)] = rows[column].where(rows.status == "ok")
        table[(where, "status")] = rows.status
    table.columns = pd.MultiIndex.from_tuples(table.columns)
    return table
