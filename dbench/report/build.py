"""A report as data: the side-by-side tables, summary, support matrix and all-reduce table built from
loaded results, plus the same tables as display text (units scaled, winner starred, status where a
row has no verified time) shared by the Markdown, HTML and terminal outputs."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from dbench.frommodel.predict import model_vs_kernels
from dbench.report.frames import (Group, allreduce_table, baseline_group, groups, runtime_summary, side_by_side,
                                  support_matrix)
from dbench.report.load import Results
from dbench.report.units import format_ratio, format_time, significant

WINNER = "★"


@dataclass
class Report:
    """Everything the writers need."""

    results: Results
    groups: list[Group] = field(default_factory=list)
    baseline: Group | None = None
    families: dict[str, pd.DataFrame] = field(default_factory=dict)
    summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    support: pd.DataFrame = field(default_factory=pd.DataFrame)
    allreduce: pd.DataFrame = field(default_factory=pd.DataFrame)
    models: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Each timed whole model beside the sum of its kernels' times (`dbench gen --from-model`)."""
    notes: list[str] = field(default_factory=list)

    @property
    def has_verified(self) -> bool:
        return not self.results.kernels.empty and bool(self.results.kernels.counts.any())


def build_report(results: Results, baseline: str | None = None, home: str | None = None) -> Report:
    """Every table; notes say what is missing (no verified rows, machines that differ, schema-1 runs).
    `home` is this machine's key: without `baseline`, its runs are the baseline."""
    report = Report(results, notes=list(results.notes), allreduce=allreduce_table(results.allreduce),
                    models=pd.DataFrame(model_vs_kernels(results.rows, results.rows)))
    frame = results.kernels
    if frame.empty:
        if results.allreduce.empty:
            report.notes.append("the result files hold no rows")
        return report
    report.groups = groups(frame)
    report.baseline = baseline_group(report.groups, baseline, home)
    report.families = {f: side_by_side(frame, f, report.groups, report.baseline) for f in dict.fromkeys(frame.family)}
    report.summary = runtime_summary(frame, report.groups, report.baseline)
    report.support = support_matrix(frame)
    if not report.has_verified:
        statuses = ", ".join(f"{n} {s}" for s, n in frame.status.value_counts().items())
        report.notes.append(f"no verified rows ({statuses}): no times to compare or plot; see the support matrix")
    machines = sorted(frame.machine.unique())
    if len(machines) > 1:
        report.notes.append(f"results from {len(machines)} different machines ({', '.join(machines)}): "
                            "differences between their columns include the hardware")
    return report


def display_cell(table: pd.DataFrame, label: str, kernel: str) -> tuple[str, str, str]:
    """(median, TFLOP/s, speedup) as text for one kernel and group; the status in place of the
    median where the row is not verified; the winner's median starred."""
    median = table.at[kernel, (label, "median_us")]
    if pd.isna(median):
        return table.at[kernel, (label, "status")] or "—", "", ""
    star = f" {WINNER}" if table.at[kernel, (label, "winner")] else ""
    return (format_time(median) + star, significant(table.at[kernel, (label, "tflops")]),
            format_ratio(table.at[kernel, (label, "speedup")]))


def display_family(report: Report, family: str) -> pd.DataFrame:
    """One family's side-by-side table as text columns `<group> median`, `<group> TFLOP/s`, `<group> speedup`."""
    table = report.families[family]
    columns: dict[str, list[str]] = {}
    for group in report.groups:
        cells = [display_cell(table, group.label, kernel) for kernel in table.index]
        for i, name in enumerate(("median", "TFLOP/s", "speedup")):
            columns[f"{group.label} {name}"] = [c[i] for c in cells]
    return pd.DataFrame(columns, index=table.index)


def display_summary(report: Report) -> pd.DataFrame:
    """The summary per group with the speedup as ×1.23 and zero counts blank."""
    summary = report.summary.copy()
    summary["geomean_speedup"] = summary.geomean_speedup.map(format_ratio)
    counts = [c for c in summary.columns if c not in ("machine", "runtime", "precision", "geomean_speedup")]
    summary[counts] = summary[counts].map(lambda n: "" if n == 0 else str(n))
    empty = [c for c in counts if c not in ("graphs", "verified", "won") and not summary[c].any()]
    return summary.drop(columns=["machine", "runtime", "precision", *empty]).rename(
        columns={"geomean_speedup": f"geomean speedup vs {report.baseline.label}", "precision_fallback": "precision fallback"})


def display_allreduce(report: Report) -> pd.DataFrame:
    """The all-reduce table with sizes in bytes as given and bandwidths to three digits."""
    table = report.allreduce.copy()
    table.columns = [" · ".join(map(str, c)) for c in table.columns]
    return table.map(lambda v: significant(v) if isinstance(v, float) else ("" if v is None else str(v)))


def display_models(report: Report) -> pd.DataFrame:
    """Whole model against Σ kernel median x copies: times scaled, shares as percentages."""
    models = report.models

    def share(value) -> str:
        return "" if value is None or pd.isna(value) else f"{value:.0%}"

    return pd.DataFrame({
        "model": models.model, "runtime": models.runtime, "model median": models.model_us.map(format_time),
        "Σ kernels": models.kernels_us.map(format_time), "share": models.share.map(share),
        "share of min": models.share_of_min.map(share),
        "kernels timed": [f"{t}/{n}" for t, n in zip(models.kernels_timed, models.kernels)],
        "not ok": models.kernels_not_ok.map(", ".join), "model checked by": models.model_verified_by,
    }).set_index("model")
