"""The report as an .xlsx workbook laid out like DeepBench's result sheets: one sheet per family
(kernels down, column groups across, numbers as numbers), Summary, Support, All-reduce, and a Specs
sheet with each run's machine and versions."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dbench.report.build import Report

FIELD_NAMES = {
    "median_us": "median µs",
    "rerun_rel": "re-run ± share",
    "history_factor": "interval scaled by history",
    "runs": "runs",
    "runs_low_us": "runs' lowest median µs",
    "runs_high_us": "runs' highest median µs",
    "tflops": "TFLOP/s",
    "speedup": "speedup",
    "speedup_low": "speedup low",
    "speedup_high": "speedup high",
    "same": "same within noise",
    "rounds": "rounds",
    "status": "status",
    "winner": "fastest",
}
NUMBER_FORMATS = (
    ("median µs", "#,##0.0"),
    ("± share", "0.0%"),
    ("TFLOP/s", "0.0000"),
    ("speedup", '0.00"×"'),
    ("speedup low", '0.00"×"'),
    ("speedup high", '0.00"×"'),
    ("GB/s", "0.000"),
    ("time µs", "#,##0.0"),
    ("_us", "#,##0.0"),
    ("share", "0%"),
)
"""Excel number formats by the end of a column's header (first match): times with thousands separators,
speedups as ×1.23, shares as percentages; other columns keep Excel's General."""
MAX_WIDTH = 40


def specs(report: Report) -> pd.DataFrame:
    """One row per run: machine, host, CPU, cores, memory, OS, runtime and package versions."""
    records = []
    for run in report.results.runs:
        host = run.header.get("host", {})
        records.append(
            {
                "run": run.run_id,
                "parts": ", ".join(run.parts),
                "kind": run.kind,
                "schema": run.schema_version,
                "machine": run.machine,
                "hostname": host.get("hostname"),
                "cpu": host.get("cpu_model"),
                "microarchitecture": host.get("microarchitecture"),
                "isa": " ".join(host.get("isa") or []),
                "cores": host.get("cpu_affinity"),
                "memory GiB": round((host.get("memory_bytes") or 0) / 2**30, 1),
                "gpus": ", ".join(host.get("gpus") or []),
                "os": host.get("os"),
                "python": host.get("python"),
                "runtime": (run.header.get("runtime") or {}).get("name"),
                "runtime version": (run.header.get("runtime") or {}).get("version"),
                "load at start": " ".join(map(str, host.get("load_start") or [])),
                "taken at": host.get("taken_at"),
                "packages": ", ".join(f"{k} {v}" for k, v in (host.get("packages") or {}).items()),
                "git": host.get("git_commit"),
            }
        )
    return pd.DataFrame(records)


def _sheet_name(name: str, used: set[str]) -> str:
    """Excel's limits: 31 characters, no []:*?/\\, unique."""
    clean = "".join("_" if c in "[]:*?/\\" else c for c in name)[:31]
    while clean in used:
        clean = clean[:28] + f"~{len(used)}"
    used.add(clean)
    return clean


def _number_format(header: object) -> str | None:
    text = str(header or "")
    return next(
        (fmt for end, fmt in NUMBER_FORMATS if text.endswith(end) or text.endswith(end.replace(" ", "_"))), None
    )


def format_sheet(sheet) -> None:
    """Header row and label column frozen (they stay in view while scrolling), numbers formatted by
    their column, columns as wide as their header (up to MAX_WIDTH)."""
    sheet.freeze_panes = "B2"
    for column in sheet.iter_cols(min_row=1, max_row=sheet.max_row):
        header = column[0].value
        fmt = _number_format(header)
        if fmt:
            for cell in column[1:]:
                if isinstance(cell.value, (int, float)) and not isinstance(cell.value, bool):
                    cell.number_format = fmt
        widest = max((len(str(cell.value)) for cell in column if cell.value is not None), default=6)
        sheet.column_dimensions[column[0].column_letter].width = min(MAX_WIDTH, max(8, widest + 2))


def write_xlsx(report: Report, path: Path) -> Path:
    """Write the workbook (every sheet formatted by format_sheet) and return its path."""
    used: set[str] = set()
    with pd.ExcelWriter(path, engine="openpyxl") as writer:
        if not report.summary.empty:
            report.summary.to_excel(writer, sheet_name=_sheet_name("Summary", used))
            report.support.to_excel(writer, sheet_name=_sheet_name("Support", used))
        for family, table in report.families.items():
            flat = table.copy()
            flat.columns = [f"{label} {FIELD_NAMES[field]}" for label, field in flat.columns]
            ordered = [f"{g.label} {FIELD_NAMES[f]}" for g in report.groups for f in FIELD_NAMES]
            flat[ordered].to_excel(writer, sheet_name=_sheet_name(family, used))
        for frame, name in ((report.results.throughput, "Throughput"), (report.results.server, "Server")):
            if not frame.empty:
                frame.drop(columns=["search"]).to_excel(writer, sheet_name=_sheet_name(name, used), index=False)
        if not report.models.empty:
            report.models.assign(kernels_not_ok=report.models.kernels_not_ok.map(", ".join)).to_excel(
                writer, sheet_name=_sheet_name("Models", used), index=False
            )
        if not report.prediction_table.empty:
            report.prediction_table.to_excel(writer, sheet_name=_sheet_name("Predictions", used))
            report.top_units.to_excel(writer, sheet_name=_sheet_name("Top units", used))
        if not report.allreduce.empty:
            table = report.allreduce.copy()
            table.columns = [" · ".join(map(str, c)) for c in table.columns]
            table.to_excel(writer, sheet_name=_sheet_name("All-reduce", used))
        notes = pd.DataFrame({"note": report.notes or ["(none)"]})
        specs(report).to_excel(writer, sheet_name=_sheet_name("Specs", used), index=False)
        notes.to_excel(writer, sheet_name=_sheet_name("Notes", used), index=False)
        for sheet in writer.sheets.values():
            format_sheet(sheet)
    return path
