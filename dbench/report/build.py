"""A report as data: the side-by-side tables, summary, support matrix and all-reduce table built from
loaded results, plus the same tables as display text (units scaled, winner starred, status where a
row has no verified time) shared by the Markdown, HTML and terminal outputs."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from dbench.frommodel.predict import model_vs_kernels
from dbench.render.numbers import format_ratio, format_time, significant
from dbench.report.frames import (
    Group,
    allreduce_table,
    baseline_group,
    groups,
    runtime_summary,
    side_by_side,
    support_matrix,
)
from dbench.report.noise import calibration_frame
from dbench.report.results import Results
from dbench.report.throughput_tables import LoadTables, load_tables
from dbench.report.vendor import ratio_title
from dbench.report.verdicts import speedups, winners

WINNER = "★"
TIE = "≈"
LEGEND = (
    f"in brackets its 95% interval; ± after a median: where 95% of re-runs' medians should fall (w, n: widened or "
    "narrowed to what this machine's history showed re-runs to need); N runs a–b: N runs of the configuration "
    "measured it, their "
    f"medians from a to b, the latest shown; {WINNER} = fastest, separated from the next by the test; "
    f"{TIE} after a median: fastest but within noise of the next; {TIE} after a speedup: same as the baseline within "
    "noise; ? = no interval (too few rounds); only verified rows have times."
)


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
    load: LoadTables = field(default_factory=LoadTables)
    """Throughput rows, stream-sweep knees and server rows: their own tables (dbench.report.throughput_tables)."""
    predictions: list = field(default_factory=list)
    """`dbench predict`'s predictions (dbench.units.prediction.Prediction), and their display frames."""
    prediction_table: pd.DataFrame = field(default_factory=pd.DataFrame)
    top_units: pd.DataFrame = field(default_factory=pd.DataFrame)
    profiles: dict[str, pd.DataFrame] = field(default_factory=dict)
    """Per row, its per-node profile (only when asked: `dbench report --profile`)."""
    calibration: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Each machine's calibrated noise per runtime and size class (`dbench calibrate`), where stored."""
    notes: list[str] = field(default_factory=list)

    @property
    def has_verified(self) -> bool:
        return not self.results.kernels.empty and bool(self.results.kernels.counts.any())


def build_report(
    results: Results, baseline: str | None = None, home: str | None = None, profile: bool = False
) -> Report:
    """Every table; notes say what is missing (no verified rows, machines that differ, schema-1 runs).
    `home` is this machine's key: without `baseline`, its runs are the baseline. `profile`: every row's
    per-node profile too."""
    from dbench.report import predictions

    found, table, top, profiles = predictions.build(results.rows, profile)
    report = Report(
        results,
        notes=list(results.notes),
        allreduce=allreduce_table(results.allreduce),
        models=pd.DataFrame(model_vs_kernels(predictions.without_predicted_models(results.rows), results.rows)),
        load=load_tables(results.throughput, results.server),
        predictions=found,
        prediction_table=table,
        top_units=top,
        profiles=profiles,
        calibration=calibration_frame(results.calibrations),
    )
    frame = results.kernels
    if frame.empty:
        if results.allreduce.empty and results.throughput.empty and results.server.empty:
            report.notes.append("the result files hold no rows")
        return report
    report.groups = groups(frame)
    report.baseline = baseline_group(report.groups, baseline, home)
    judged = speedups(frame, report.groups, report.baseline)
    wins = winners(frame, report.groups, list(dict.fromkeys(frame.kernel)))
    report.families = {f: side_by_side(frame, f, report.groups, judged, wins) for f in dict.fromkeys(frame.family)}
    report.summary = runtime_summary(frame, report.groups, judged, wins)
    report.support = support_matrix(frame)
    if not report.has_verified:
        statuses = ", ".join(f"{n} {s}" for s, n in frame.status.value_counts().items())
        report.notes.append(f"no verified rows ({statuses}): no times to compare or plot; see the support matrix")
    report.notes += repeated_runs_notes(frame, report.groups)
    report.notes += noise_notes(frame)
    machines = sorted(frame.machine.unique())
    if len(machines) > 1:
        report.notes.append(
            f"results from {len(machines)} different machines ({', '.join(machines)}): "
            "differences between their columns include the hardware"
        )
    return report


def repeated_runs_notes(frame: pd.DataFrame, all_groups: list[Group]) -> list[str]:
    """Per column group measured by several runs: which run each figure is from, and how far apart the runs were."""
    if "runs" not in frame:
        return []
    notes = []
    for group in all_groups:
        rows = group.rows(frame)
        mixed = sorted(
            {c for text in rows.get("configurations", pd.Series(dtype=str)).dropna() for c in text.split("; ")}
        )
        if len(mixed) > 1:
            notes.append(
                f"{group.label} holds rows of {len(mixed)} configurations ({'; '.join(mixed)}): each kernel's "
                "figure is its latest run's, whatever its configuration; give dbench report one configuration's "
                "runs to set them side by side"
            )
        repeated = rows[rows.runs.fillna(1) > 1]
        if repeated.empty:
            continue
        ids = list(dict.fromkeys(i for text in repeated.runs_ids for i in str(text).split()))
        latest = sorted(repeated.run_id.unique())
        sds = sorted(float(v) for v in repeated.runs_sd.dropna())
        spread = (
            f"; their medians spread by SD {sds[len(sds) // 2]:.1%} at the median kernel ({sds[0]:.1%} to "
            f"{sds[-1]:.1%})"
            if sds
            else ""
        )
        named = ", ".join(ids) if len(ids) <= 6 else f"{', '.join(ids[:2])} ... {', '.join(ids[-2:])}"
        notes.append(
            f"{group.label}: {len(ids)} runs of one configuration measured {len(repeated)} kernels ({named}); "
            f"each figure is the latest run's ({', '.join(latest)}), each cell names how many runs and their "
            f"lowest and highest medians{spread}"
        )
    return notes


def noise_notes(frame: pd.DataFrame) -> list[str]:
    """Rows whose times carry noise they did not choose: timed beside another dbench, or slowed on purpose."""
    notes = []
    if "overlapped" in frame:
        overlapped = frame[frame.overlapped.map(lambda v: bool(v) if isinstance(v, (list, tuple)) else False)]
        if len(overlapped):
            notes.append(
                f"{len(overlapped)} rows were timed while another dbench was timing on the same machine "
                f"({', '.join(sorted({o for v in overlapped.overlapped for o in v}))}): their times carry its load"
            )
    if "injected_slowdown" in frame:
        slowed = frame[frame.injected_slowdown.notna()]
        if len(slowed):
            notes.append(
                f"{len(slowed)} rows carry an injected slowdown (DBENCH_BENCHMARK_SLOWDOWN, a benchmark of dbench): "
                "not the runtime's times"
            )
    return notes


def speedup_text(value, low, high, same) -> str:
    """`×1.23 [1.10–1.38]` for a speedup the test separates from 1, `×1.02 ≈` for one within noise,
    `×1.02 ?` for one without an interval."""
    if value is None or pd.isna(value):
        return ""
    if low is None or pd.isna(low):
        return format_ratio(value) + ("" if same and value == 1.0 else " ?")
    return format_ratio(value) + (f" {TIE}" if same else f" [{low:.2f}–{high:.2f}]")


def display_cell(table: pd.DataFrame, label: str, kernel: str) -> tuple[str, str, str]:
    """(median, TFLOP/s, speedup) as text for one kernel and group; the status in place of the
    median where the row is not verified; the winner's median starred (or ≈ when within noise of the
    next); a row timed in fewer than 2 rounds says so."""
    median = table.at[kernel, (label, "median_us")]
    if pd.isna(median):
        return table.at[kernel, (label, "status")] or "—", "", ""
    mark = table.at[kernel, (label, "winner")]
    rounds = table.at[kernel, (label, "rounds")]
    few = f" ({int(rounds)} round)" if not pd.isna(rounds) and rounds < 2 else ""
    return (
        format_time(median)
        + _interval_text(table, label, kernel)
        + few
        + (f" {mark}" if mark else "")
        + _runs_text(table, label, kernel),
        significant(table.at[kernel, (label, "tflops")]),
        speedup_text(*(table.at[kernel, (label, f)] for f in ("speedup", "speedup_low", "speedup_high", "same"))),
    )


def _value(table: pd.DataFrame, label: str, kernel: str, name: str):
    value = table.at[kernel, (label, name)] if (label, name) in table.columns else None
    return None if value is None or pd.isna(value) else value


def _interval_text(table: pd.DataFrame, label: str, kernel: str) -> str:
    """` ±2.1%` (the re-run interval's half-width), `w` or `n` when this machine's history widened or narrowed it."""
    rel = _value(table, label, kernel, "rerun_rel")
    factor = _value(table, label, kernel, "history_factor")
    mark = "" if factor is None or abs(factor - 1.0) < 0.005 else ("w" if factor > 1 else "n")
    return "" if rel is None else f" ±{rel:.1%}{mark}"


def _runs_text(table: pd.DataFrame, label: str, kernel: str) -> str:
    """` (5 runs 1.20–1.31 ms)` where several runs of the configuration measured the kernel."""
    runs = _value(table, label, kernel, "runs")
    if runs is None or runs < 2:
        return ""
    return (
        f" ({int(runs)} runs {format_time(_value(table, label, kernel, 'runs_low_us'))}–"
        f"{format_time(_value(table, label, kernel, 'runs_high_us'))})"
    )


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
    summary["geomean_speedup"] = [
        ""
        if mean is None or pd.isna(mean)
        else format_ratio(mean) + ("" if low is None or pd.isna(low) else f" [{low:.2f}–{high:.2f}]")
        for mean, low, high in zip(summary.geomean_speedup, summary.geomean_low, summary.geomean_high)
    ]
    summary = summary.drop(columns=["geomean_low", "geomean_high"])
    counts = [c for c in summary.columns if c not in ("machine", "runtime", "precision", "geomean_speedup")]
    summary[counts] = summary[counts].map(lambda n: "" if n == 0 else str(n))
    empty = [c for c in counts if c not in ("graphs", "verified", "won", "tied") and not summary[c].any()]
    return summary.drop(columns=["machine", "runtime", "precision", *empty]).rename(
        columns={
            "geomean_speedup": f"geomean {ratio_title(report.baseline.runtime, report.baseline.label)}",
            "precision_fallback": "precision fallback",
        }
    )


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

    return pd.DataFrame(
        {
            "model": models.model,
            "runtime": models.runtime,
            "model median": models.model_us.map(format_time),
            "Σ kernels": models.kernels_us.map(format_time),
            "share": models.share.map(share),
            "share of min": models.share_of_min.map(share),
            "kernels timed": [f"{t}/{n}" for t, n in zip(models.kernels_timed, models.kernels)],
            "not ok": models.kernels_not_ok.map(", ".join),
            "model checked by": models.model_verified_by,
        }
    ).set_index("model")
