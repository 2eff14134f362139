"""The result row (schema version in dbench.store.log): one flat record per (graph, runtime, options,
machine), assembled from the graph's spec, the runtime, and the worker's outcome or failure. Rows are
`Row`s while a run makes them and plain dicts (`Row.to_dict`, the JSONL keys) once logged."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from dbench.gen.graph import GraphSpec
from dbench.outcome import Outcome, Status
from dbench.store.invariants import ARITHMETIC_PRECISIONS, violations
from dbench.store.metadata import load_average


STAT_FIELDS = ("median_us", "p10_us", "p90_us", "p99_us", "min_us", "mean_us", "std_us", "cv", "spread", "mad_us",
               "ci_low_us", "ci_high_us", "ci_rel", "samples", "calls_per_sample", "unstable", "timed_s", "warmup_s",
               "first_call_us", "runtime_median_us", "samples_us", "percentiles_us", "rerun_low_us", "rerun_high_us",
               "rerun_rel", "interval_note", "rounds", "round_medians_us", "round_sizes", "round_sd")
"""The fields a row takes from its rounds' statistics (dbench.stats.summary)."""


def executed_precision(nodes: list[dict[str, Any]]) -> str:
    """The precision of the compute node that took the most time, as the runtime's profiler reported
    it; `unknown` when there is no profile (never assumed from the request). Nodes typed by a bool or
    index tensor (a model's Where, its token-id Gather) do no arithmetic in a precision and are not counted."""
    compute = [n for n in nodes if n.get("precision") in ARITHMETIC_PRECISIONS]
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


@dataclass(frozen=True)
class Row:
    """One result row; `to_dict` gives the JSONL keys (`pass_name` is stored as `pass`)."""

    run_id: str
    seq: int
    graph_id: str
    kernel_id: str
    family: str
    op: str
    pass_name: str
    form: str
    suites: list[str]
    apps: list[str]
    params: dict[str, Any]
    attrs: dict[str, Any]
    precision: str
    precision_executed: str
    precision_fallback: bool
    weights: str | None
    runtime: str
    runtime_version: str
    device: str | None
    runtime_options: dict[str, Any]
    status: Status
    message: str
    median_us: float | None
    p10_us: float | None
    p90_us: float | None
    p99_us: float | None
    min_us: float | None
    mean_us: float | None
    std_us: float | None
    cv: float | None
    spread: float | None
    mad_us: float | None
    ci_low_us: float | None
    ci_high_us: float | None
    ci_rel: float | None
    samples: int | None
    calls_per_sample: int | None
    unstable: bool | None
    timed_s: float | None
    warmup_s: float | None
    first_call_us: float | None
    runtime_median_us: float | None
    device_median_us: float | None
    """Device time per call from the runtime's device events (GPU runtimes), beside the host clock."""
    samples_us: list[float] | None
    kernel_time_us: float | None
    overhead_us: float | None
    nodes: list[dict[str, Any]]
    flops: int
    flops_executed: int
    tflops: float | None
    tflops_executed: float | None
    min_bytes: int
    gbps: float | None
    intensity: float | None
    peak_rss_bytes: int | None
    memory_bytes: int | None
    device_memory_bytes: int | None
    verified: bool | None
    error: float | None
    tolerance_metric: str | None
    tolerance: float | None
    verified_rows: int | None
    inputs_s: float | None
    prepare_s: float | None
    verify_s: float | None
    profile_s: float | None
    finished_at: str
    load_1m: float | None
    """The machine's 1-minute load average when the row was made (the last row's is the run's end)."""
    invariant_violations: list[str] = dataclasses.field(default_factory=list)
    """What the row breaks of dbench.store.invariants (absent from rows written before those checks)."""
    verified_by: str | None = None
    """What computed the expected outputs: `numpy` (dbench's reference), `onnx.reference` (a foreign
    model), or None when the row was not verified (absent from rows written before foreign graphs)."""
    profile_call_us: float | None = None
    """The profiling pass's own time per call, on the clock that brackets its node times: the kernel
    time's frame (absent from rows written before it was recorded)."""
    variant: str = ""
    """The run's configuration this row was timed under (a runtime, or `threads=2`): a run given several
    (`--runtime a,b`, `--threads 1,2`) interleaves them and has one row per graph and variant."""
    percentiles_us: dict[str, float] | None = None
    """The per-call percentiles asked for (`--percentiles`), keyed by the percentile as text (`"99.9"`)."""
    rerun_low_us: float | None = None
    rerun_high_us: float | None = None
    rerun_rel: float | None = None
    """Where 95 % of a re-run's medians should fall, from the rounds, and its half-width / median."""
    interval_note: str = ""
    """Why the row has no interval (one round, or round medians all equal), else empty."""
    rounds: int | None = None
    """Rounds the row was timed in (schema 3), each in its own worker process and session."""
    round_medians_us: list[float] | None = None
    round_sizes: list[int] | None = None
    """How many of `samples_us` belong to each round, in order."""
    round_sd: float | None = None
    """The SD of the rounds' log medians: the row's measured noise between rounds."""
    device_graph_median_us: float | None = None
    """Device time per call with the call replayed as a captured CUDA graph (torch-cuda), beside
    `device_median_us`: the difference is launch overhead (absent from earlier rows)."""
    gpu_state: dict[str, Any] | None = None
    """NVML's clocks, power and temperature of the GPU before (`start`) and after (`end`) timing."""

    def to_dict(self) -> dict[str, Any]:
        row = {("pass" if f.name == "pass_name" else f.name): getattr(self, f.name) for f in dataclasses.fields(self)}
        row["status"] = self.status.value
        return row

    @classmethod
    def build(cls, run_id: str, seq: int, spec: GraphSpec, runtime: dict[str, Any], weights: str | None,
              outcome: Outcome, variant: str = "") -> "Row":
        """A row from the worker's Outcome (or the parent's, with just status and message, when the
        worker died or the graph never reached it).
        `runtime` holds name, version, device and the options in force; `weights` is the job's mode;
        `outcome.stats` holds the row's statistics fields, combined over its rounds."""
        stats = outcome.stats or {}
        nodes = outcome.nodes or []
        verification = outcome.verification or {}
        status = outcome.status
        median_s = stats["median_us"] / 1e6 if stats.get("median_us") else None
        kernel_us = kernel_time(nodes)
        executed = executed_precision(nodes) if nodes else ("unknown" if status in (Status.OK, Status.MISMATCH) else "")
        row = cls(
            run_id=run_id, seq=seq, graph_id=spec.id, kernel_id=spec.kernel_id, family=spec.family, op=spec.op,
            pass_name=spec.pass_name, form=spec.form, suites=list(spec.suites), apps=list(spec.apps),
            params=spec.params, attrs=spec.attrs, precision=spec.precision, precision_executed=executed,
            precision_fallback=executed not in ("unknown", "", spec.precision), weights=weights,
            runtime=runtime["name"], runtime_version=runtime["version"], device=runtime.get("device"),
            runtime_options=runtime["options"], status=status, message=outcome.message or "",
            **{f: stats.get(f) for f in STAT_FIELDS},
            kernel_time_us=kernel_us,
            overhead_us=stats["median_us"] - kernel_us if stats.get("median_us") and kernel_us is not None else None,
            nodes=nodes, flops=spec.flops, flops_executed=spec.flops_executed,
            # No counted work (a model without a recognised kernel): no rate, rather than 0 TFLOP/s.
            tflops=spec.flops / median_s / 1e12 if median_s and spec.flops else None,
            tflops_executed=spec.flops_executed / median_s / 1e12 if median_s and spec.flops_executed else None,
            min_bytes=spec.min_bytes, gbps=spec.min_bytes / median_s / 1e9 if median_s else None,
            intensity=spec.flops / spec.min_bytes if spec.min_bytes and spec.flops else None,
            peak_rss_bytes=outcome.peak_rss_bytes, memory_bytes=outcome.memory_bytes,
            device_memory_bytes=outcome.device_memory_bytes,
            verified=verification.get("ok"), verified_by=verification.get("by"), error=verification.get("error"),
            tolerance_metric=verification.get("metric"), tolerance=verification.get("bound"),
            verified_rows=verification.get("rows_checked"),
            device_median_us=outcome.device_median_us, inputs_s=outcome.inputs_s, prepare_s=outcome.prepare_s,
            verify_s=outcome.verify_s, profile_s=outcome.profile_s, profile_call_us=outcome.profile_call_us,
            device_graph_median_us=outcome.device_graph_median_us, gpu_state=outcome.gpu_state,
            finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            load_1m=(load_average() or [None])[0], variant=variant or runtime["name"],
        )
        return dataclasses.replace(row, invariant_violations=violations(row.to_dict()))
