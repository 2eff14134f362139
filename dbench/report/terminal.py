"""The report on the terminal with rich: readable at 80 columns (one compact cell per column group:
median, TFLOP/s and speedup stacked), units that scale."""

from __future__ import annotations

from rich.console import Group as RichGroup
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from dbench.report.build import LEGEND, Report, display_allreduce, display_cell, display_models, display_summary
from dbench.report.noise import SECTION, calibration_answers
from dbench.report.throughput_tables import load_sections
from dbench.report.vendor import ratio_sentence, ratio_title


def _frame_table(frame, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(frame.index.name or "", overflow="fold")
    for column in frame.columns:
        table.add_column(escape(str(column)), justify="right", overflow="fold")
    for index, row in frame.iterrows():
        table.add_row(escape(str(index)), *[escape(str(v)) for v in row])
    return table


def family_table(report: Report, family: str) -> Table:
    """Kernels down; per column group one cell: median (★ fastest) over TFLOP/s and speedup."""
    title = ratio_title(report.baseline.runtime, report.baseline.label)
    table = Table(title=f"{family} · {title}", title_justify="left")
    table.add_column("kernel", overflow="fold", ratio=2)
    for group in report.groups:
        table.add_column(escape(group.label), justify="right", overflow="fold", ratio=1)
    data = report.families[family]
    for kernel in data.index:
        cells = []
        for group in report.groups:
            median, tflops, speedup = display_cell(data, group.label, kernel)
            second = " ".join(p for p in (f"{tflops} TF" if tflops else "", speedup) if p)
            cells.append(Text(median + ("\n" + second if second else ""), style="" if tflops else "yellow"))
        table.add_row(escape(kernel), *cells)
    return table


def terminal_report(report: Report) -> RichGroup:
    """Everything, in reading order: notes, summary, support, families, all-reduce."""
    parts = [Text(f"note: {n}", style="yellow") for n in report.notes]
    if report.groups:
        parts.append(Text(f"{ratio_sentence(report.baseline.runtime, report.baseline.label)}, {LEGEND}"))
        parts.append(_frame_table(display_summary(report), "summary per runtime"))
        parts.append(_frame_table(report.support, "support matrix"))
        parts += [family_table(report, family) for family in report.families]
    parts += [_frame_table(table, title.lower()) for title, table in load_sections(report)]
    if not report.calibration.empty:
        parts.append(_frame_table(report.calibration, SECTION.lower()))
        parts += [Text(line) for line in calibration_answers(report.results.calibrations)]
    if not report.models.empty:
        parts.append(_frame_table(display_models(report), "whole model vs the sum of its kernels"))
    if not report.prediction_table.empty:
        parts.append(_frame_table(report.prediction_table, "predicted from the units vs measured (dbench predict)"))
        parts.append(_frame_table(report.top_units, "units that take most of each model"))
    if not report.allreduce.empty:
        parts.append(_frame_table(display_allreduce(report), "all-reduce"))
    for title, frame in report.profiles.items():
        parts.append(_frame_table(frame, f"profile · {title}"))
    return RichGroup(*parts)
