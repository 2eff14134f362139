"""The report's tables as pandas frames (numbers, not text): side by side per family, the summary per
runtime, the support matrix and the all-reduce bandwidths. Only verified rows (status ok and output
matching the reference) count as times; other rows show their status."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dbench.errors import UsageError

PROBLEM_STATUSES = ("unsupported", "mismatch", "failed", "crashed", "timeout", "oom")


@dataclass(frozen=True)
class Group:
    """One column group: a (machine, runtime, precision) and its label."""

    machine: str
    runtime: str
    precision: str
    label: str

    def rows(self, frame: pd.DataFrame) -> pd.DataFrame:
        return frame[(frame.machine == self.machine) & (frame.runtime == self.runtime) & (frame.precision == self.precision)]


def groups(frame: pd.DataFrame) -> list[Group]:
    """The column groups in first-seen order; labels name only the parts that vary between groups."""
    keys = list(dict.fromkeys(zip(frame.machine, frame.runtime, frame.precision)))
    varying = [len({k[i] for k in keys}) > 1 for i in range(3)]
    if not any(varying):
        varying = [False, True, True]
    return [Group(*key, " · ".join(part for part, shown in zip(key, varying) if shown)) for key in keys]


def baseline_group(all_groups: list[Group], baseline: str | None, home: str | None = None) -> Group:
    """The group speedups are relative to: its label, or the first group of that runtime; by default the
    first group measured on `home` (this machine: the user's own runs, not reference runs of another),
    else the first."""
    if baseline is None:
        return next((group for group in all_groups if group.machine == home), all_groups[0])
    for group in all_groups:
        if baseline in (group.label, group.runtime):
            return group
    raise UsageError(f"--baseline {baseline!r} matches no column group; valid: {', '.join(g.label for g in all_groups)}")


def side_by_side(frame: pd.DataFrame, family: str, all_groups: list[Group], base: Group) -> pd.DataFrame:
    """One row per kernel of `family`; per group: median_us, tflops, speedup (baseline time / time),
    winner (fastest verified), status (the row's status, or `unverified`)."""
    rows = frame[frame.family == family]
    kernels = list(dict.fromkeys(rows.kernel))
    table = pd.DataFrame(index=pd.Index(kernels, name="kernel"))
    base_times = base.rows(rows).set_index("kernel")
    base_times = base_times.loc[base_times.counts, "median_us"]
    for group in all_groups:
        mine = group.rows(rows).set_index("kernel").reindex(kernels)
        counted = mine.counts.fillna(False).astype(bool)
        median = mine.median_us.where(counted)
        table[(group.label, "median_us")] = median
        table[(group.label, "tflops")] = mine.tflops.where(counted)
        table[(group.label, "speedup")] = base_times.reindex(kernels) / median
        table[(group.label, "status")] = [
            "" if not isinstance(s, str) else ("unverified" if s == "ok" and not c else s) for s, c in zip(mine.status, counted)]
    medians = table[[(g.label, "median_us") for g in all_groups]]
    timed = medians.dropna(how="all")  # pandas refuses idxmin over a row with no value at all
    fastest = timed.astype(float).idxmin(axis=1) if not timed.empty else pd.Series(index=table.index, dtype=object)
    contested = medians.notna().sum(axis=1) > 1
    for group in all_groups:
        table[(group.label, "winner")] = [f == (group.label, "median_us") and c for f, c in zip(fastest.reindex(table.index), contested)]
    table.columns = pd.MultiIndex.from_tuples(table.columns)
    return table


def geomean(values) -> float | None:
    """Geometric mean of the positive finite values, or None when there are none."""
    clean = [v for v in values if v and np.isfinite(v) and v > 0]
    return float(math.exp(np.mean(np.log(clean)))) if clean else None


def runtime_summary(frame: pd.DataFrame, all_groups: list[Group], base: Group) -> pd.DataFrame:
    """Per group: verified rows, geometric-mean speedup vs the baseline, kernels won, counts of each
    problem status and of precision fallbacks."""
    won = {g.label: 0 for g in all_groups}
    speedups: dict[str, list[float]] = {g.label: [] for g in all_groups}
    for family in dict.fromkeys(frame.family):
        table = side_by_side(frame, family, all_groups, base)
        for group in all_groups:
            won[group.label] += int(table[(group.label, "winner")].sum())
            speedups[group.label] += list(table[(group.label, "speedup")].dropna())
    records = []
    for group in all_groups:
        rows = group.rows(frame)
        record = {"group": group.label, "machine": group.machine, "runtime": group.runtime, "precision": group.precision,
                  "graphs": len(rows), "verified": int(rows.counts.sum()), "geomean_speedup": geomean(speedups[group.label]),
                  "won": won[group.label]}
        record.update({status: int((rows.status == status).sum()) for status in PROBLEM_STATUSES})
        record["precision_fallback"] = int(rows.precision_fallback.fillna(False).astype(bool).sum())
        records.append(record)
    return pd.DataFrame(records).set_index("group")


def support_cell(rows: pd.DataFrame) -> str:
    """`ok`, `unsupported`, ... when every row agrees, else counts (`ok 3/5, mismatch 2`); the
    executed precision is added where it differs from the one asked."""
    counts = rows.status.value_counts()
    text = str(counts.index[0]) if len(counts) == 1 else ", ".join(
        f"{status} {n}/{len(rows)}" if status == "ok" else f"{status} {n}" for status, n in counts.items())
    executed = {e for e, fallback in zip(rows.precision_executed, rows.precision_fallback) if fallback}
    return text + (f" (ran {'/'.join(sorted(executed))})" if executed else "")


def support_matrix(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows: machine · runtime; columns: family · precision; cells: support_cell."""
    multi_machine = frame.machine.nunique() > 1
    frame = frame.assign(who=frame.runtime if not multi_machine else frame.machine + " · " + frame.runtime,
                         what=frame.family + " " + frame.precision)
    cells = {(who, what): support_cell(rows) for (who, what), rows in frame.groupby(["who", "what"], sort=False)}
    whos, whats = list(dict.fromkeys(frame.who)), list(dict.fromkeys(frame.what))
    return pd.DataFrame([[cells.get((w, c), "") for c in whats] for w in whos],
                        index=pd.Index(whos, name="runtime"), columns=whats)


ALLREDUCE_VALUES = {"busbw_gbps": "busbw GB/s", "algbw_gbps": "algbw GB/s", "deepbench_gbps": "DeepBench GB/s",
                    "time_mean_us": "time µs"}


def allreduce_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Bytes down the side; per (machine, implementation, ranks): busbw, algbw, DeepBench GB/s, time.
    Only rows whose check passed carry numbers; the others show their status."""
    if frame.empty:
        return frame
    frame = frame.assign(where=frame.machine + " · " + frame.implementation + " · " + frame.ranks.astype(str) + " ranks")
    table = pd.DataFrame(index=pd.Index(sorted(frame["bytes"].unique()), name="bytes"))
    for where, rows in frame.groupby("where", sort=False):
        rows = rows.drop_duplicates("bytes", keep="last").set_index("bytes")
        for column, name in ALLREDUCE_VALUES.items():
            table[(where, name)] = rows[column].where(rows.status == "ok")
        table[(where, "status")] = rows.status
    table.columns = pd.MultiIndex.from_tuples(table.columns)
    return table
