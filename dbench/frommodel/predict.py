"""Whole-model latency beside the sum of its kernels: for each timed model, Σ (kernel median x copies)
over the kernels of `dbench gen --from-model` timed on the same runtime, and the share of the model's
measured time those kernels explain. Plain rows in, plain rows out (the report and the CLI render them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dbench.frommodel.output import MODEL_ATTR
from dbench.gen.graph import MODEL_FAMILY


def _model_tag(row: dict[str, Any]) -> dict[str, Any]:
    return (row.get("attrs") or {}).get(MODEL_ATTR) or {}


def model_vs_kernels(model_rows: list[dict[str, Any]], kernel_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per timed model and runtime: measured median, predicted sum over its kernels, their
    ratio (`share`); the same over minimum times (`share_of_min`: less sensitive to a busy machine), and
    how many kernels (and model nodes) the sum covers; kernels that did not run ok are named, never
    counted as zero."""
    table = []
    for model in (r for r in model_rows if r.get("family") == MODEL_FAMILY):
        name, runtime = model["kernel_id"], model["runtime"]
        kernels = [r for r in kernel_rows if _model_tag(r).get("name") == name and r["runtime"] == runtime]
        timed = [r for r in kernels if r["status"] == "ok" and r.get("median_us") is not None]
        predicted = sum(r["median_us"] * _model_tag(r)["copies"] for r in timed) if timed else None
        fastest = sum(r["min_us"] * _model_tag(r)["copies"] for r in timed) if timed else None
        valid = model["status"] in ("ok", "disputed")  # a disputed row's time counts: two runtimes agree
        measured = model.get("median_us") if valid else None
        measured_min = model.get("min_us") if valid else None
        table.append(
            {
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
            }
        )
    return table


SAME_SETTINGS = {
    "runtime": "--runtime",
    "device": "--device",
    "threads": "--threads",
    "weights": "--weights",
    "graph_optimization": "--graph-opt",
    "allow_runtime_precision": "--allow-runtime-precision",
    "extra": "--option",
    "cpus": "--cpus",
}
"""Request fields a kernels run must share with the model's run for its kernels to add up to the model."""


def check_kernels_run(model: Path, request: Any, header: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """Refuse, with one line naming the difference, a kernels run that is not the model's kernels as this
    model run will run them: another runtime or setting, kernels generated from another --dim (other
    sizes) or precision, or a run of a kernel file (`--kernels`: the run's precision and default forms,
    not the model's own graphs). `request` is the model run's RunRequest."""
    from dbench.errors import UsageError
    from dbench.frommodel.output import build_graphs
    from dbench.frommodel.walk import model_kernels

    run = header.get("run_id", "the kernels run")
    asked = header.get("request", {})
    if asked.get("kernels"):
        raise UsageError(
            f"{run} timed the kernel file {asked['kernels']} (the run's --precision and default forms, not "
            f"the model's graphs); give --kernels-run a run of the folder `dbench gen --from-model {model}` writes"
        )
    for name, flag in SAME_SETTINGS.items():
        theirs, ours = asked.get(name), getattr(request, name)
        if name == "extra":
            theirs = theirs or {}
        if theirs != ours:
            said = [f"{flag} {value}" if value not in (None, {}) else f"no {flag}" for value in (theirs, ours)]
            raise UsageError(f"{run} ran with {said[0]}, this model run with {said[1]}; give both the same")
    dims = dict(request.dims)
    expected = {g.spec.id for g in build_graphs(model_kernels(model, dims), dims)}
    tagged = [r for r in rows if _model_tag(r).get("name") == model.stem]
    found = {r["graph_id"] for r in tagged}
    if not tagged:
        raise UsageError(
            f"{run} holds no kernel of model {model.stem}; give a run of the folder "
            f"`dbench gen --from-model {model}` writes"
        )
    if found != expected:
        made_with = {dims_text(_model_tag(r).get("dims")) for r in tagged}
        missing, extra = sorted(expected - found), sorted(found - expected)
        what = f"lacks {missing[0]}" if missing else f"holds {extra[0]}, not a kernel of it"
        raise UsageError(
            f"{run} {what} for model {model.stem} at --dim {dims_text(dims) or 'none'} "
            f"(its kernels were generated with --dim {' / '.join(sorted(made_with)) or 'unknown'}); "
            f"regenerate them with the same --dim and run them"
        )


def dims_text(dims: dict[str, int] | None) -> str:
    """`batch=1,seq=8` (empty for no dims; `unknown` for kernels generated before dims were recorded)."""
    if dims is None:
        return "unknown"
    return ",".join(f"{k}={v}" for k, v in dims.items())
