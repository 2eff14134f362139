"""The result row (schema version in dbench.store.log): one flat record per (graph, runtime, options,
machine), assembled from the graph's spec, the runtime, and the worker's outcome or failure."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from dbench.gen.graph import GraphSpec
from dbench.store.invariants import violations

STATUSES = ("ok", "unsupported", "mismatch", "failed", "crashed", "timeout", "oom")
STAT_FIELDS = ("median_us", "p10_us", "p90_us", "p99_us", "min_us", "mean_us", "std_us", "cv", "samples",
               "calls_per_sample", "unstable", "timed_s", "warmup_s")


def executed_precision(nodes: list[dict[str, Any]]) -> str:
    """The precision of the compute node that took the most time, as the runtime's profiler reported
    it; `unknown` when there is no profile (never assumed from the request)."""
    compute = [n for n in nodes if n.get("precision")]
    if not compute:
        return "unknown"
    return max(compute, key=lambda n: n["time_us"])["precision"]


def kernel_time(nodes: list[dict[str, Any]]) -> float | None:
    """The sum of the profiled nodes' times per call, containers excluded (their nodes are listed).
    None without a profile, or when a node ran several times per call (a loop body timed per
    iteration): a profiler's own cost per event (about 6 µs on ONNX Runtime 1.31, against kernels of
    under 1 µs) is then inside every one of those times, and their sum measures the profiler."""
    if not nodes or any(n.get("calls", 1) > 1 for n in nodes):
        return None
    return sum(n["time_us"] for n in nodes if not n.get("container"))


def make_row(run_id: str, seq: int, spec: GraphSpec, runtime: dict[str, Any], outcome: dict[str, Any]) -> dict[str, Any]:
    """A result row. `runtime` holds name, version, device and options; `outcome` is the worker's
    Outcome as a dict (a parent-side failure has just status and message)."""
    stats = outcome.get("stats") or {}
    nodes = outcome.get("nodes") or []
    verification = outcome.get("verification") or {}
    median_s = stats["median_us"] / 1e6 if stats.get("median_us") else None
    kernel_us = kernel_time(nodes)
    executed = executed_precision(nodes) if nodes else ("unknown" if outcome["status"] in ("ok", "mismatch") else "")
    row: dict[str, Any] = {
        "run_id": run_id,
        "seq": seq,
        "graph_id": spec.id,
        "kernel_id": spec.kernel_id,
        "family": spec.family,
        "op": spec.op,
        "pass": spec.pass_name,
        "form": spec.form,
        "suites": list(spec.suites),
        "apps": list(spec.apps),
        "params": spec.params,
        "attrs": spec.attrs,
        "precision": spec.precision,
        "precision_executed": executed,
        "precision_fallback": executed not in ("unknown", "", spec.precision),
        "weights": runtime["options"].get("weights"),
        "runtime": runtime["name"],
        "runtime_version": runtime["version"],
        "device": runtime.get("device"),
        "runtime_options": runtime["options"],
        "status": outcome["status"],
        "message": outcome.get("message", ""),
        **{f: stats.get(f) for f in STAT_FIELDS},
        "kernel_time_us": kernel_us,
        "overhead_us": stats["median_us"] - kernel_us if stats.get("median_us") and kernel_us is not None else None,
        "nodes": nodes,
        "flops": spec.flops,
        "flops_executed": spec.flops_executed,
        "tflops": spec.flops / median_s / 1e12 if median_s else None,
        "tflops_executed": spec.flops_executed / median_s / 1e12 if median_s else None,
        "min_bytes": spec.min_bytes,
        "gbps": spec.min_bytes / median_s / 1e9 if median_s else None,
        "intensity": spec.flops / spec.min_bytes if spec.min_bytes else None,
        "peak_rss_bytes": outcome.get("peak_rss_bytes"),
        "memory_bytes": outcome.get("memory_bytes"),
        "device_memory_bytes": outcome.get("device_memory_bytes"),
        "verified": verification.get("ok"),
        "verified_by": verification.get("by"),
        "error": verification.get("error"),
        "tolerance_metric": verification.get("metric"),
        "tolerance": verification.get("bound"),
        "verified_rows": verification.get("rows_checked"),
        "inputs_s": outcome.get("inputs_s"),
        "prepare_s": outcome.get("prepare_s"),
        "verify_s": outcome.get("verify_s"),
        "profile_s": outcome.get("profile_s"),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    row["invariant_violations"] = violations(row)
    return row
