"""Write a report's files into one folder: report.md, report.html, report.xlsx, the CSVs and the PNGs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from dbench.report.build import Report
from dbench.report.extras import require_extras
from dbench.report.results import read_peaks
from dbench.store.log import ensure_writable


@dataclass(frozen=True)
class Written:
    """The files a report wrote."""

    markdown: Path
    html: Path
    xlsx: Path
    csv: list[Path]
    images: list[Path]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower()


def plot_load(report: Report) -> dict[str, bytes]:
    """The throughput and server plots as PNG bytes by title (verified rows only)."""
    from dbench.report import plots, throughput_plots

    figures = {}
    for frame in (report.results.throughput, report.results.server):
        if not frame.empty and frame.counts.any():
            if frame is report.results.throughput:
                figures.update(
                    {**throughput_plots.throughput_vs_streams(frame), **throughput_plots.latency_vs_throughput(frame)}
                )
            else:
                figures.update(throughput_plots.server_search(frame))
    return {title: plots.png(figure) for title, figure in figures.items()}


def plot_all(report: Report) -> dict[str, bytes]:
    """Every plot as PNG bytes by title (none when nothing is verified)."""
    from dbench.report import plots

    images: dict[str, bytes] = {}
    if report.predictions:
        from dbench.report.predictions import scatter

        figure = scatter(report.predictions)
        if figure is not None:
            images["predicted vs measured"] = plots.png(figure)
    if not report.has_verified:
        return {**images, **plot_load(report)}
    frame = report.results.kernels
    peaks = read_peaks(report.results.runs)
    caches = {run.machine: run.header.get("host", {}).get("caches") or {} for run in report.results.runs}
    for machine, precision in dict.fromkeys(zip(frame[frame.counts].machine, frame[frame.counts].precision)):
        figure, _ = plots.roofline(frame, machine, precision, peaks.get(machine), caches.get(machine, {}))
        images[f"roofline {machine} {precision}"] = plots.png(figure)
    for family in report.families:
        if frame[(frame.family == family) & frame.counts].size:
            images[f"latency {family}"] = plots.png(plots.latency_bars(frame, family, report.groups))
    images["tflops vs size"] = plots.png(plots.tflops_vs_size(frame, report.groups))
    speedups: dict[str, list[float]] = {g.label: [] for g in report.groups}
    for table in report.families.values():
        for group in report.groups:
            speedups[group.label] += list(table[(group.label, "speedup")].dropna())
    others = {label: values for label, values in speedups.items() if values and label != report.baseline.label}
    if others:
        images["speedup cdf"] = plots.png(plots.speedup_cdf(others, report.baseline.label))
    return {**images, **plot_load(report)}


def all_profiles(profiles):
    """Every row's profile in one frame, the row named in a first column."""
    import pandas as pd

    return pd.concat([frame.assign(row=title) for title, frame in profiles.items()]).reset_index().set_index("row")


def write_report(report: Report, folder: Path) -> Written:
    """All outputs into `folder` (created), PNGs included; returns what was written."""
    require_extras()
    from dbench.report.html import to_html
    from dbench.report.markdown import to_markdown
    from dbench.report.xlsx import write_xlsx

    ensure_writable(folder)
    images = plot_all(report)
    image_paths = []
    for title, data in images.items():
        path = folder / f"{_slug(title)}.png"
        path.write_bytes(data)
        image_paths.append(path)
    csvs = []
    if not report.results.kernels.empty:
        rows = report.results.kernels.drop(columns=["samples_us"])
        csvs.append(folder / "rows.csv")
        rows.to_csv(csvs[-1], index=False)
        csvs.append(folder / "summary.csv")
        report.summary.to_csv(csvs[-1])
    for name, frame in (("throughput.csv", report.results.throughput), ("server.csv", report.results.server)):
        if not frame.empty:
            csvs.append(folder / name)
            frame.to_csv(csvs[-1], index=False)
    if report.predictions:
        csvs.append(folder / "predictions.csv")
        report.prediction_table.to_csv(csvs[-1])
        csvs.append(folder / "top-units.csv")
        report.top_units.to_csv(csvs[-1])
    if report.profiles:
        csvs.append(folder / "profiles.csv")
        all_profiles(report.profiles).to_csv(csvs[-1])
    if not report.allreduce.empty:
        csvs.append(folder / "allreduce.csv")
        report.results.allreduce.to_csv(csvs[-1], index=False)
    markdown = folder / "report.md"
    markdown.write_text(to_markdown(report, [p.name for p in image_paths]))
    page = folder / "report.html"
    page.write_text(to_html(report, images))
    return Written(markdown, page, write_xlsx(report, folder / "report.xlsx"), csvs, image_paths)
