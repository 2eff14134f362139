"""The report's predictions (`dbench predict` runs, and boards' runs of exported units): predicted vs
measured per model and runtime, the units that take most of each model, and, on request, the per-node
profile every row stores (benchmark_app's -pc, trtexec's --dumpProfile) for kernels, foreign graphs,
models and units alike. Frames of text, ready for every writer."""

from __future__ import annotations

from typing import Any

import pandas as pd

from dbench.render.numbers import format_time
from dbench.units.prediction import MODEL, Prediction, predictions, tag

TOP_UNITS = 10
"""Units shown per model, by their time inside the model."""
BAND = 0.10
"""The band the scatter draws around predicted = measured (nn-Meter's ±10 %)."""


def without_predicted_models(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows minus the whole models of prediction runs (they are set beside their units, not their kernels)."""
    return [r for r in rows if tag(r).get("role") != MODEL]


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value * 100:+.1f}%"


def prediction_frame(found: list[Prediction]) -> pd.DataFrame:
    """One row per model, runtime and run."""
    return pd.DataFrame(
        {
            "model": [p.model for p in found],
            "runtime": [p.runtime for p in found],
            "method": [p.method for p in found],
            "dims": [",".join(f"{k}={v}" for k, v in p.dims.items()) for p in found],
            "predicted": [format_time(p.predicted_us) for p in found],
            "measured": [format_time(p.measured_us) or "not run" for p in found],
            "error": [_percent(p.error) for p in found],
            "95% interval": [
                f"{_percent(p.error_low)} to {_percent(p.error_high)}" if p.error_low is not None else p.interval_note
                for p in found
            ],
            "units timed": [f"{p.units_timed}/{p.units_total}" for p in found],
            "nodes": [f"{p.nodes_timed}/{p.nodes_total}" for p in found],
            "empty graph": [format_time(p.empty_us) for p in found],
            "reorders left out": [format_time(p.reorders_us) for p in found],
            "inserted layers": [format_time(p.inserted_us) for p in found],
            "cache": [format_time(p.gap["cache"]) if "cache" in p.gap else "" for p in found],
            "left out": [", ".join(p.left_out) for p in found],
            "left out share": ["" if p.left_out_share is None else f"{p.left_out_share:.1%}" for p in found],
            "flagged": [", ".join(p.flagged) for p in found],
            "run": [p.run_id for p in found],
        }
    ).set_index("model")


def kernel_medians(rows: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """(catalog kernel id, runtime) -> the median of a verified DeepBench-family row of that kernel in
    the report's runs (a suite run, or the kernels of `gen --from-model`): set beside the units that
    hold that kernel."""
    found = {}
    for row in rows:
        if row.get("family") in ("gemm", "conv", "rnn", "sparse") and row.get("status") == "ok" and row.get("verified"):
            found[(row["kernel_id"], row.get("runtime", ""))] = row["median_us"]
    return found


def top_units_frame(
    found: list[Prediction], top: int = TOP_UNITS, kernels: dict[tuple[str, str], float] | None = None
) -> pd.DataFrame:
    """Each model's units with the largest time inside the model (isolated time without a profile),
    with the median of the DeepBench kernel they hold where the report has a row of it."""
    kernels = kernels or {}
    rows = []
    for p in found:
        lines = sorted(p.units, key=lambda u: -(u.in_model_us if u.in_model_us is not None else (u.isolated_us or 0.0)))
        for u in lines[:top]:
            timed = u.kind in ("executed", "unmatched")
            rows.append(
                {
                    "model": p.model,
                    "runtime": p.runtime,
                    "unit": u.graph if timed else f"{u.graph} ({u.kind})",
                    "nodes": ", ".join(u.nodes[:3]) + (f" (+{len(u.nodes) - 3})" if len(u.nodes) > 3 else ""),
                    "count": u.count if timed else "",
                    "isolated": format_time(u.isolated_us),
                    "cache": format_time(u.cache_us),
                    "check": u.flag or (u.status if u.status not in ("", "ok") else ""),
                    "reorders": format_time(u.reorders_us),
                    "in model": format_time(u.in_model_us),
                    "share": "" if u.share is None else f"{u.share:.1%}",
                    "isolated/in model": "" if u.ratio is None else f"×{u.ratio:.2f}" + (" ≠" if u.disagrees else ""),
                    "kernel": ", ".join(dict.fromkeys(u.kernels)),
                    "kernel alone": ", ".join(
                        format_time(kernels[(k, p.runtime)])
                        for k in dict.fromkeys(u.kernels)
                        if (k, p.runtime) in kernels
                    ),
                }
            )
    return pd.DataFrame(rows).set_index("model") if rows else pd.DataFrame()


def profile_frames(rows: list[dict[str, Any]]) -> dict[str, pd.DataFrame]:
    """Per row with a profile (`<graph> · <variant> · <run>`): its layers in the order the runtime
    reported them, with op, kernel, precision, time per call and share of the profiled total."""
    frames = {}
    for row in rows:
        nodes = row.get("nodes") or []
        if not nodes:
            continue
        total = sum(n["time_us"] for n in nodes if not n.get("container")) or None
        frames[f"{row['graph_id']} · {row.get('variant') or row.get('runtime')} · {row.get('run_id', '')}"] = (
            pd.DataFrame(
                {
                    "layer": [n["name"] for n in nodes],
                    "op": [n.get("op_type", "") for n in nodes],
                    "kernel": [n.get("kernel", "") for n in nodes],
                    "precision": [n.get("precision", "") for n in nodes],
                    "time": [
                        format_time(n["time_us"]) + (f" ({n['calls']} calls)" if n.get("calls", 1) > 1 else "")
                        for n in nodes
                    ],
                    "share": [
                        "(contains others)" if n.get("container") else (f"{n['time_us'] / total:.1%}" if total else "")
                        for n in nodes
                    ],
                }
            ).set_index("layer")
        )
    return frames


def scatter(found: list[Prediction]):
    """Predicted against measured latency, log-log, one point per model and runtime, with y = x and the
    ±10 % band; None when no prediction has a measurement."""
    points = [p for p in found if p.predicted_us and p.measured_us]
    if not points:
        return None
    import numpy as np

    from dbench.report.plots import MARKERS, _figure

    figure = _figure(6.5, 6.0)
    axes = figure.add_subplot()
    low = min(min(p.predicted_us, p.measured_us) for p in points) / 1.5
    high = max(max(p.predicted_us, p.measured_us) for p in points) * 1.5
    span = np.geomspace(low, high, 50)
    axes.plot(span, span, "k-", linewidth=1, label="predicted = measured")
    axes.fill_between(span, span * (1 - BAND), span * (1 + BAND), color="#cccccc", alpha=0.5, label=f"±{BAND:.0%}")
    for i, runtime in enumerate(dict.fromkeys(p.runtime for p in points)):
        mine = [p for p in points if p.runtime == runtime]
        axes.scatter(
            [p.measured_us for p in mine],
            [p.predicted_us for p in mine],
            marker=MARKERS[i % len(MARKERS)],
            s=40,
            label=runtime,
        )
    inside = sum(abs(p.error) <= BAND for p in points if p.error is not None)
    axes.set(
        xscale="log",
        yscale="log",
        xlim=(low, high),
        ylim=(low, high),
        xlabel="measured median (µs)",
        ylabel="predicted from units (µs)",
        title=f"predicted vs measured: {inside} of {len(points)} within ±{BAND:.0%}",
    )
    axes.legend(fontsize=8)
    return figure


def build(
    rows: list[dict[str, Any]], profile: bool
) -> tuple[list[Prediction], pd.DataFrame, pd.DataFrame, dict[str, pd.DataFrame]]:
    """(predictions, their table, the top units, the per-row profiles when asked) from a report's rows."""
    found = predictions(rows)
    return (
        found,
        prediction_frame(found) if found else pd.DataFrame(),
        top_units_frame(found, kernels=kernel_medians(rows)),
        profile_frames(rows) if profile else {},
    )
