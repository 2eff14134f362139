"""The report's plots as PNG bytes (matplotlib's Agg canvas, imported only here and only when called):
roofline per machine and precision (one roof per kind of device among its rows), latency bars per
family, TFLOP/s against problem size, and the CDF of speedups. Only verified rows are drawn."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pandas as pd

from dbench.peak.ceilings import ceilings, device_bandwidth, device_kind
from dbench.report.frames import Group

FAMILY_COLOURS = {"gemm": "#1f77b4", "conv": "#ff7f0e", "rnn": "#2ca02c", "sparse": "#d62728"}
MARKERS = "os^Dv<>pP*X"
MAX_BARS = 40
"""Latency bars show at most this many kernels per family (the slowest first are kept)."""
ROOF_STYLES = {"cpu": "k-", "gpu": "k--"}
"""The roof's line per kind of device: a GPU's roof dashed beside the host's."""


def _figure(width: float = 7.5, height: float = 4.5):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def png(figure) -> bytes:
    """The figure as PNG bytes."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _device_name(peaks: dict[str, Any] | None, kind: str) -> str:
    """What the roof of `kind` runtimes is called: the host's CPU, or the GPU by name where peak.json has it."""
    record = device_bandwidth(peaks, kind) if peaks and kind == "gpu" else None
    return (record or {}).get("device") or kind.upper()


def _cache_bytes(peaks: dict[str, Any] | None, kind: str, host_llc: int) -> int:
    """The last-level cache `kind` runtimes' working sets may fit in: the host's, or the GPU's L2 (0 unmeasured)."""
    if kind == "cpu":
        return host_llc
    return ((device_bandwidth(peaks, kind) if peaks else None) or {}).get("l2_bytes") or 0


def _roof(
    axes, rows: pd.DataFrame, kind: str, precision: str, peaks: dict[str, Any], cache: int
) -> tuple[list[str], float | None]:
    """Draw the roof of `kind` runtimes' device under their rows; (its notes, its GEMM ceiling)."""
    runtime = rows.runtime.iloc[0]
    name = _device_name(peaks, kind)
    peak_tflops, bandwidth = ceilings(peaks, precision, runtime)
    notes = []
    if peak_tflops is None:
        notes.append(
            f"no {precision} GEMM rate for {name} runtimes in peak.json: "
            f"run dbench peak --runtime {runtime} --precision {precision}"
        )
    if bandwidth is None:
        notes.append(f"no {name} memory bandwidth in peak.json: run dbench peak --runtime {runtime}")
    if bandwidth:
        span = np.logspace(np.log10(max(rows.intensity.min() / 2, 1e-2)), np.log10(rows.intensity.max() * 2), 100)
        roof = bandwidth * span / 1e3
        if peak_tflops:
            roof = np.minimum(roof, peak_tflops)
        axes.plot(
            span,
            roof,
            ROOF_STYLES[kind],
            linewidth=1,
            label=f"{name}: triad {bandwidth:.0f} GB/s" + (f", GEMM {peak_tflops:.3g} TFLOP/s" if peak_tflops else ""),
        )
        above = rows[rows.gbps > bandwidth]
        if len(above):
            fits = int((above.min_bytes <= cache).sum())
            notes.append(
                f"{len(above)} {name} points above its memory bandwidth: {fits} of them have a working set that fits "
                f"in its {cache / 2**20:.0f} MiB last-level cache (hollow markers), so they run from cache"
            )
    elif peak_tflops:
        axes.axhline(
            peak_tflops, color="k", linestyle=":", linewidth=1, label=f"{name}: GEMM {peak_tflops:.3g} TFLOP/s"
        )
    if peak_tflops and (rows.tflops > peak_tflops).any():
        load = peaks.get("load_start") or ["?"]
        why = (
            f"peak.json was measured on a busy machine (load {load[0]})"
            if peaks.get("busy_start")
            else "these kernels beat every shape dbench peak measured"
        )
        over = rows[rows.tflops > peak_tflops]
        axes.scatter(
            over.intensity,
            over.tflops,
            marker="o",
            s=110,
            facecolors="none",
            edgecolors="red",
            linewidths=1.5,
            label=f"above the {name} ceiling",
        )
        notes.append(
            f"{len(over)} {name} points above its GEMM ceiling (ringed red: no fraction of peak is given for them): "
            f"{why}; re-run dbench peak on a quiet machine"
        )
    return notes, peak_tflops


def roofline(
    frame: pd.DataFrame, machine: str, precision: str, peaks: dict[str, Any] | None, caches: dict[str, int]
) -> tuple[Any, list[str]]:
    """Achieved TFLOP/s against arithmetic intensity (FLOP per minimum byte), colour = family, marker =
    runtime, hollow = the working set fits in its device's last-level cache; each kind of device among
    the rows (CPU, GPU) gets its own roof from peak.json, never another's. Returns the figure and its notes."""
    rows = frame[(frame.machine == machine) & (frame.precision == precision) & frame.counts & (frame.intensity > 0)]
    figure = _figure()
    axes = figure.add_subplot()
    axes.set(
        xscale="log",
        yscale="log",
        xlabel="arithmetic intensity (FLOP / minimum byte)",
        ylabel="TFLOP/s",
        title=f"roofline · {machine} · {precision}",
    )
    kinds = rows.runtime.map(device_kind)
    host_llc = max(caches.values(), default=0)
    cache = {kind: _cache_bytes(peaks, kind, host_llc) for kind in kinds.dropna().unique()}
    fits_cache = rows.min_bytes <= kinds.map(cache).fillna(0)
    for i, (runtime, mine) in enumerate(rows.groupby("variant", sort=False)):
        for family, points in mine.groupby("family", sort=False):
            colour = FAMILY_COLOURS.get(family, "#7f7f7f")
            in_cache = fits_cache[points.index]
            common = dict(marker=MARKERS[i % len(MARKERS)], s=36, edgecolors=colour, linewidths=1.2)
            axes.scatter(
                points.intensity[~in_cache],
                points.tflops[~in_cache],
                c=colour,
                label=f"{runtime} · {family}" if (~in_cache).any() else None,
                **common,
            )
            axes.scatter(
                points.intensity[in_cache],
                points.tflops[in_cache],
                facecolors="none",
                label=f"{runtime} · {family} (fits in cache)" if in_cache.any() else None,
                **common,
            )
    notes, gemm_ceilings = [], []
    if peaks is None:
        notes.append("no ceilings measured: run dbench peak on this machine")
    else:
        for kind in cache:
            kind_notes, peak_tflops = _roof(axes, rows[kinds == kind], kind, precision, peaks, cache[kind])
            notes += kind_notes
            gemm_ceilings.append(peak_tflops or 0.0)
    if notes:
        top = max(float(rows.tflops.max()) if len(rows) else 1.0, *gemm_ceilings, 0.0)
        axes.set_ylim(top=top * 8)  # headroom for the notes
        axes.text(
            0.01,
            0.99,
            "\n".join(notes),
            transform=axes.transAxes,
            va="top",
            fontsize=7,
            wrap=True,
            bbox=dict(facecolor="white", alpha=0.8, edgecolor="#ccc"),
        )
    if len(rows):
        axes.legend(fontsize=7, loc="lower right")
    return figure, notes


def latency_bars(frame: pd.DataFrame, family: str, groups: list[Group]):
    """Median latency per kernel of `family`, one bar per column group, log scale; each bar's error bar is
    its row's re-run interval (where 95 % of a re-run's medians should fall), and where several runs of the
    configuration measured the kernel, a grey tick marks each end of their medians' range."""
    rows = frame[(frame.family == family) & frame.counts]
    kernels = list(rows.groupby("kernel").median_us.max().sort_values(ascending=False).index[:MAX_BARS])
    figure = _figure(7.5, max(2.5, 0.28 * len(kernels) * max(1, len(groups)) ** 0.5 + 1.2))
    axes = figure.add_subplot()
    height = 0.8 / max(len(groups), 1)
    positions = np.arange(len(kernels))
    for i, group in enumerate(groups):
        mine = group.rows(rows).set_index("kernel").reindex(kernels)
        times = mine.median_us
        low = (times - mine.rerun_low_us).clip(lower=0) if "rerun_low_us" in mine else None
        high = (mine.rerun_high_us - times).clip(lower=0) if "rerun_high_us" in mine else None
        errors = np.vstack([low.fillna(0), high.fillna(0)]) if low is not None and high is not None else None
        axes.barh(
            positions + i * height,
            times.fillna(0),
            height=height,
            label=group.label,
            xerr=errors,
            error_kw=dict(elinewidth=0.8, capsize=1.5, ecolor="#333"),
        )
        if "runs" in mine and (mine.runs.fillna(1) > 1).any():
            several = mine.runs.fillna(1) > 1
            for column in ("runs_low_us", "runs_high_us"):
                axes.scatter(
                    mine[column][several],
                    (positions + i * height)[several.to_numpy()],
                    marker="|",
                    s=40,
                    color="#777",
                    linewidths=1,
                    zorder=3,
                )
    axes.set_yticks(positions + height * (len(groups) - 1) / 2, [k[:48] for k in kernels], fontsize=6)
    axes.invert_yaxis()
    axes.set(
        xscale="log",
        xlabel="median (µs) · error bar: re-run interval · grey |: range of several runs",
        title=f"{family}: latency per kernel (verified rows)",
    )
    axes.legend(fontsize=7)
    return figure


def tflops_vs_size(frame: pd.DataFrame, groups: list[Group]):
    """Achieved TFLOP/s against problem size (FLOPs), one series per column group."""
    figure = _figure()
    axes = figure.add_subplot()
    for i, group in enumerate(groups):
        rows = group.rows(frame[frame.counts])
        axes.scatter(rows.flops, rows.tflops, marker=MARKERS[i % len(MARKERS)], s=24, label=group.label)
    axes.set(
        xscale="log", yscale="log", xlabel="problem size (FLOP)", ylabel="TFLOP/s", title="TFLOP/s against problem size"
    )
    axes.legend(fontsize=7)
    return figure


def speedup_cdf(speedups: dict[str, list[float]], baseline: str):
    """Cumulative distribution of per-kernel speedups against the baseline, one line per group."""
    figure = _figure(7.5, 4)
    axes = figure.add_subplot()
    for label, values in speedups.items():
        values = np.sort(np.asarray(values, dtype=float))
        axes.step(values, np.arange(1, values.size + 1) / values.size, where="post", label=f"{label} ({values.size})")
    axes.axvline(1.0, color="#999", linewidth=0.8)
    axes.set(
        xscale="log",
        xlabel=f"speedup against {baseline} (baseline time / time)",
        ylabel="fraction of kernels",
        title="distribution of speedups",
        ylim=(0, 1.02),
    )
    axes.legend(fontsize=7)
    return figure
