"""The report as one self-contained HTML page: inline CSS, plots as base64 PNG, no script and no
network reference, so it opens offline and can be mailed as one file. Column headers stay short:
each group once over its fields, machines by short names (M1, M2) with a legend."""

from __future__ import annotations

import base64
import html

import pandas as pd

from dbench.report.build import LEGEND, Report, display_allreduce, display_family, display_models, display_summary
from dbench.report.noise import CAPTION, SECTION, calibration_answers
from dbench.report.throughput_tables import load_sections
from dbench.report.vendor import ratio_sentence

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f0f0f0; white-space: nowrap; text-align: center; }
table.legend td { text-align: left; }
.note { background: #fff6d5; border-left: 4px solid #e0b000; padding: 6px 10px; margin: 4px 0; }
img { max-width: 100%; display: block; margin: 1em 0; }
"""


FIELDS = ("median", "TFLOP/s", "speedup")
"""The columns display_family gives each group, in its order."""


def machine_names(report: Report) -> dict[str, str]:
    """Machine key -> M1, M2... in order of appearance, when the report holds several machines (their keys,
    40-odd characters each, made column headers wrap to five lines); empty for one machine."""
    machines = list(dict.fromkeys(run.machine for run in report.results.runs))
    return {machine: f"M{i}" for i, machine in enumerate(machines, 1)} if len(machines) > 1 else {}


def _short(text: object, names: dict[str, str]) -> str:
    text = str(text)
    for machine, name in names.items():
        text = text.replace(machine, name)
    return text


def _shortened(frame: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """Every header and row label with machine keys replaced by their short names."""
    if not names:
        return frame
    return frame.rename(columns=lambda c: _short(c, names), index=lambda i: _short(i, names))


def _legend(report: Report, names: dict[str, str]) -> str:
    """The short names' table: name, machine key, CPU, cores, GPUs (from each machine's first run)."""
    hosts: dict[str, dict] = {}
    for run in report.results.runs:
        hosts.setdefault(run.machine, run.header.get("host", {}))
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{html.escape(machine)}</td><td>"
        f"{html.escape(str(hosts[machine].get('cpu_model') or ''))}</td>"
        f"<td>{html.escape(str(hosts[machine].get('cpu_affinity') or ''))}</td><td>"
        f"{html.escape(', '.join(hosts[machine].get('gpus') or []))}</td></tr>"
        for machine, name in names.items()
    )
    return (
        '<table class="legend" data-caption="machines"><thead><tr><th>name</th><th>machine key</th><th>CPU</th>'
        f"<th>cores</th><th>GPUs</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def family_frame(report: Report, family: str, names: dict[str, str]) -> pd.DataFrame:
    """One family's table with a two-row header: each group once, over its median, TFLOP/s and speedup."""
    table = display_family(report, family)
    table.columns = pd.MultiIndex.from_tuples(
        [(_short(g.label, names), field) for g in report.groups for field in FIELDS]
    )
    return table


def _table(frame: pd.DataFrame, caption: str) -> str:
    body = frame.to_html(escape=True, border=0, na_rep="")
    return body.replace("<table", f'<table data-caption="{html.escape(caption)}"', 1)


def to_html(report: Report, images: dict[str, bytes]) -> str:
    """The page; `images` maps a title to PNG bytes."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>dbench report</title>',
        f"<style>{STYLE}</style></head><body>",
        "<h1>dbench report</h1>",
    ]
    parts += [f'<p class="note">{html.escape(note)}</p>' for note in report.notes]
    names = machine_names(report)
    if names:
        parts += ["<h2>Machines</h2>", _legend(report, names)]
    if report.groups:
        parts.append(
            f"<p>{html.escape(_short(ratio_sentence(report.baseline.runtime, report.baseline.label), names))}, "
            f"{html.escape(LEGEND)}</p>"
        )
        parts += ["<h2>Summary per runtime</h2>", _table(_shortened(display_summary(report), names), "summary")]
        parts += ["<h2>Support matrix</h2>", _table(_shortened(report.support, names), "support")]
        for family in report.families:
            parts += [f"<h2>{html.escape(family)}</h2>", _table(family_frame(report, family, names), family)]
    for title, table in load_sections(report):
        parts += [f"<h2>{html.escape(title)}</h2>", _table(table, title)]
    if not report.calibration.empty:
        parts += [
            f"<h2>{html.escape(SECTION)}</h2>",
            f"<p>{html.escape(CAPTION)}</p>",
            _table(_shortened(report.calibration, names), "calibration"),
        ]
        parts += [
            f"<p>{html.escape(_short(line, names))}</p>" for line in calibration_answers(report.results.calibrations)
        ]
    if not report.models.empty:
        parts += ["<h2>Whole model vs the sum of its kernels</h2>", _table(display_models(report), "models")]
    if not report.prediction_table.empty:
        parts += ["<h2>Predicted from the units vs measured</h2>", _table(report.prediction_table, "predictions")]
        parts += ["<h3>Units that take most of each model</h3>", _table(report.top_units, "units")]
    if not report.allreduce.empty:
        parts += ["<h2>All-reduce</h2>", _table(_shortened(display_allreduce(report), names), "allreduce")]
    if report.profiles:
        parts.append("<h2>Per-node profiles</h2>")
        for title, frame in report.profiles.items():
            parts += [f"<h3>{html.escape(title)}</h3>", _table(frame, title)]
    if images:
        parts.append("<h2>Plots</h2>")
    for title, data in images.items():
        encoded = base64.b64encode(data).decode("ascii")
        parts.append(
            f'<figure><img alt="{html.escape(title)}" src="data:image/png;base64,{encoded}">'
            f"<figcaption>{html.escape(title)}</figcaption></figure>"
        )
    parts.append("</body></html>")
    return "\n".join(parts)
