"""The report's throughput plots (matplotlib, imported by dbench.report.plots only when drawing):
throughput against streams with each point's re-run interval, latency under load against throughput
(p50 solid, p99 dashed, one line per kernel in stream order), and a server row's search trials as p99
against the arrival rate with its bound. One figure per configuration; at most MAX_LINES kernels each
(the ones with the most FLOPs), so a figure stays readable."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dbench.report.plots import MARKERS, _figure
from dbench.store.sweeps import configuration

MAX_LINES = 12


def _configured(frame: pd.DataFrame) -> pd.DataFrame:
    """Verified rows with their configuration (variant without streams, precision; machine when several)."""
    rows = frame[frame.counts].copy()
    several = frame.machine.nunique() > 1
    rows["configuration"] = [
        configuration({"variant": v, "runtime": r, **({"machine": m} if several else {})}) + f" · {p}"
        for v, r, m, p in zip(rows.variant, rows.runtime, rows.machine, rows.precision)
    ]
    return rows


def _kernels(rows: pd.DataFrame) -> list[str]:
    """The kernels to draw: those with the most FLOPs first, at most MAX_LINES."""
    return list(rows.groupby("kernel").flops.max().sort_values(ascending=False).index[:MAX_LINES])


def throughput_vs_streams(frame: pd.DataFrame) -> dict[str, object]:
    """Per configuration swept over two or more stream counts: inferences/s against streams (log), one line
    per kernel, the re-run interval as error bars."""
    figures = {}
    for config, rows in _configured(frame).groupby("configuration", sort=False):
        if rows.streams.nunique() < 2:
            continue
        figure = _figure()
        axes = figure.add_subplot()
        for i, kernel in enumerate(_kernels(rows)):
            points = rows[rows.kernel == kernel].sort_values("streams")
            low = (points.inferences_per_s - points.inferences_per_s_low).fillna(0).clip(lower=0)
            high = (points.inferences_per_s_high - points.inferences_per_s).fillna(0).clip(lower=0)
            axes.errorbar(
                points.streams,
                points.inferences_per_s,
                yerr=[low, high],
                marker=MARKERS[i % len(MARKERS)],
                capsize=3,
                label=kernel[:48],
            )
        axes.set(
            yscale="log",
            xlabel="streams (requests in flight)",
            ylabel="inferences/s",
            title=f"throughput against streams · {config}",
        )
        axes.set_xticks(sorted(rows.streams.unique()))
        axes.legend(fontsize=6)
        figures[f"throughput vs streams {config}"] = figure
    return figures


def latency_vs_throughput(frame: pd.DataFrame) -> dict[str, object]:
    """Per configuration: latency under load against inferences/s, p50 solid and p99 dashed, each kernel's
    points joined in stream order (the cost in latency of each step in throughput)."""
    figures = {}
    for config, rows in _configured(frame).groupby("configuration", sort=False):
        figure = _figure()
        axes = figure.add_subplot()
        for i, kernel in enumerate(_kernels(rows)):
            points = rows[rows.kernel == kernel].sort_values("streams")
            line = axes.plot(
                points.inferences_per_s,
                points.latency_p50_us,
                marker=MARKERS[i % len(MARKERS)],
                label=f"{kernel[:40]} p50",
            )[0]
            axes.plot(
                points.inferences_per_s,
                points.latency_p99_us,
                linestyle="--",
                marker=MARKERS[i % len(MARKERS)],
                color=line.get_color(),
                alpha=0.6,
            )
            for _, point in points.iterrows():
                axes.annotate(
                    str(int(point.streams)),
                    (point.inferences_per_s, point.latency_p50_us),
                    fontsize=6,
                    textcoords="offset points",
                    xytext=(3, 3),
                )
        axes.set(
            xscale="log",
            yscale="log",
            xlabel="inferences/s",
            ylabel="latency under load (µs; p99 dashed)",
            title=f"latency against throughput · {config} (labels: streams)",
        )
        axes.legend(fontsize=6)
        figures[f"latency vs throughput {config}"] = figure
    return figures


def server_search(frame: pd.DataFrame) -> dict[str, object]:
    """Per configuration with searched server rows: each trial's p99 against its arrival rate, the bound,
    and the bracket found."""
    figures = {}
    for config, rows in _configured(frame).groupby("configuration", sort=False):
        searched = [
            (row.kernel, row.search, row.latency_bound_us)
            for row in rows.itertuples()
            if isinstance(row.search, dict) and row.search.get("trials")
        ]
        if not searched:
            continue
        figure = _figure()
        axes = figure.add_subplot()
        for i, (kernel, search, bound) in enumerate(searched[:MAX_LINES]):
            trials = sorted(search["trials"], key=lambda t: t["rate"])
            rates = np.array([t["rate"] for t in trials])
            p99 = np.array([t["p99_us"] for t in trials])
            line = axes.plot(rates, p99, marker=MARKERS[i % len(MARKERS)], label=kernel[:48])[0]
            axes.axhline(bound, color=line.get_color(), linestyle=":", linewidth=0.8)
        axes.set(
            xscale="log",
            yscale="log",
            xlabel="arrival rate (/s)",
            ylabel="p99 latency from arrival (µs)",
            title=f"server: p99 against arrival rate · {config} (dotted: bound)",
        )
        axes.legend(fontsize=6)
        figures[f"server search {config}"] = figure
    return figures
