"""Whole-model latency beside the sum of its kernels: for each timed model, Σ (kernel median x copies)
over the kernels of `dbench gen --from-model` timed on the same runtime, and the share of the model's
measured time those kernels explain. Plain rows in, plain rows out (the report and the CLI render them)."""

from __future__ import annotations

from typing import Any

from dbench.frommodel.output import MODEL_ATTR
from dbench.gen.graph import MODEL_FAMILY


def _model_tag(row: dict[str, Any]) -> dict[str, Any]:
    return (row.get("attrs") or {}).get(MODEL_ATTR) or {}


def model_vs_kernels(model_rows: list[dict[str, Any]], kernel_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per timed model and runtime: measured median, predicted sum over its kernels, their
    ratio (`share`); the same over minimum times (`share_of_min`: less sensitive to a busy machine), and how many kernels (and model nodes) the sum covers; kernels that did not run ok
    are named, never counted as zero."""
    table = []
    for model in (r for r in model_rows if r.get("family") == MODEL_FAMILY):
        name, runtime = model["kernel_id"], model["runtime"]
        kernels = [r for r in kernel_rows if _model_tag(r).get("name") == name and r["runtime"] == runtime]
        timed = [r for r in kernels if r["status"] == "ok" and r.get("median_us") is not None]
        predicted = sum(r["median_us"] * _model_tag(r)["copies"] for r in timed) if timed else None
        fastest = sum(r["min_us"] * _model_tag(r)["copies"] for r in timed) if timed else None
        measured = model.get("median_us") if model["status"] == "ok" else None
        measured_min = model.get("min_us") if model["status"] == "ok" else None
        table.append({
            "model": name,
            "runtime": runtime,
            "model_status": model["status"],
            "model_verified_by": model.get("verified_by") or "unverified",
            "model_us": measured,
            "kernels_us": predicted,
            "share": predicted / measured if predicted is not None and measured else None,
            "model_min_us": measured_min,
            "kernels_min_us": fastest,
            "share_of_min": fastest / measured_min if fastest is not None and measured_min else None,
            "kernels_timed": len(timed),
            "kernels": len(kernels),
            "kernel_nodes_timed": sum(_model_tag(r)["copies"] for r in timed),
            "model_nodes": (model.get("params") or {}).get("nodes"),
            "kernels_not_ok": [f"{r['kernel_id']} ({r['status']})" for r in kernels if r not in timed],
        })
    return table
