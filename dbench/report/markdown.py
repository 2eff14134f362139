"""The report as Markdown: notes, summary per runtime, support matrix, one side-by-side table per
family, all-reduce, and links to the plots."""

from __future__ import annotations

import pandas as pd

from dbench.report.build import LEGEND, Report, display_allreduce, display_family, display_models, display_summary
from dbench.report.noise import CAPTION, SECTION, calibration_answers
from dbench.report.throughput_tables import load_sections
from dbench.report.vendor import ratio_sentence


def markdown_table(frame: pd.DataFrame, index_name: str | None = None) -> str:
    """A GitHub-flavoured Markdown table (pipes in cells escaped), index as the first column."""
    header = [index_name or frame.index.name or ""] + [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for index, row in frame.iterrows():
        cells = [str(index)] + ["" if v is None else str(v) for v in row]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def to_markdown(report: Report, images: list[str]) -> str:
    """The whole report; `images` are PNG file names beside the Markdown file."""
    parts = ["# dbench report", ""]
    parts += [f"> {note}" for note in report.notes] + ([""] if report.notes else [])
    if report.groups:
        parts += [f"{ratio_sentence(report.baseline.runtime, report.baseline.label)}, {LEGEND}", ""]
        parts += ["## Summary per runtime", "", markdown_table(display_summary(report)), ""]
        parts += ["## Support matrix", "", markdown_table(report.support), ""]
        for family in report.families:
            parts += [f"## {family}", "", markdown_table(display_family(report, family)), ""]
    for title, table in load_sections(report):
        parts += [f"## {title}", "", markdown_table(table), ""]
    if not report.calibration.empty:
        parts += [f"## {SECTION}", "", CAPTION, "", markdown_table(report.calibration), ""]
        parts += [f"* {line}" for line in calibration_answers(report.results.calibrations)] + [""]
    if not report.models.empty:
        parts += ["## Whole model vs the sum of its kernels", "", markdown_table(display_models(report)), ""]
    if not report.prediction_table.empty:
        parts += ["## Predicted from the units vs measured", "", markdown_table(report.prediction_table), ""]
        parts += ["### Units that take most of each model", "", markdown_table(report.top_units), ""]
    if not report.allreduce.empty:
        parts += ["## All-reduce", "", markdown_table(display_allreduce(report)), ""]
    if report.profiles:
        parts += ["## Per-node profiles", ""]
        for title, frame in report.profiles.items():
            parts += [f"### {title}", "", markdown_table(frame), ""]
    if images:
        parts += ["## Plots", ""] + [f"![{name}]({name})" for name in images] + [""]
    return "\n".join(parts)
