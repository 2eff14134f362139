"""The result row (schema version in dbench.store.log): one flat record per (graph, runtime, options,
machine), assembled from the graph's spec, the runtime, and the worker's outcome or failure. Rows are
`Row`s while a run makes them and plain dicts (`Row.to_dict`, the JSONL keys) once logged."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from dbench.gen.graph import GraphSpec
from dbench.gen.precision import WEIGHT_ONLY_COMPUTE
from dbench.outcome import Outcome, Status
from dbench.store.invariants import ARITHMETIC_PRECISIONS, NOT_PROFILED, violations
from dbench.store.metadata import load_average

if TYPE_CHECKING:
    from dbench.scenario import Load

STAT_FIELDS = (
    "median_us",
    "p10_us",
    "p90_us",
    "p99_us",
    "min_us",
    "mean_us",
    "std_us",
    "cv",
    "spread",
    "mad_us",
    "ci_low_us",
    "ci_high_us",
    "ci_rel",
    "samples",
    "calls_per_sample",
    "unstable",
    "timed_s",
    "warmup_s",
    "first_call_us",
    "runtime_median_us",
    "samples_us",
    "percentiles_us",
    "rerun_low_us",
    "rerun_high_us",
    "rerun_rel",
    "interval_note",
    "rounds",
    "round_medians_us",
    "round_sizes",
    "round_sd",
    "drift_sd",
    "drift_df",
    "drift_runs",
    "coverage_pairs",
    "coverage_inside",
    "history_factor",
)
"""The fields a row takes from its rounds' statistics (dbench.stats.summary)."""
LOAD_FIELDS = (
    "streams_executed",
    "inferences",
    "inferences_per_s",
    "inferences_per_s_low",
    "inferences_per_s_high",
    "time_per_inference_us",
    "round_per_inference_us",
    "stream_inferences",
    "latency_p50_us",
    "latency_p90_us",
    "latency_p99_us",
    "latency_percentiles_us",
    "arrival_rate",
    "round_p99_us",
    "latency_p99_low_us",
    "latency_p99_high_us",
    "latency_p99_ci_low_us",
    "latency_p99_ci_high_us",
    "latency_p99_above",
    "over_bound",
    "queue_p99_us",
    "dispatch_lag_p99_us",
    "search",
    "requests",
    "unserved",
    "utilization",
    "round_utilization",
)
"""The fields a throughput or server row takes from its rounds (dbench.stats.throughput); a latency row has none."""


def executed_precision(nodes: list[dict[str, Any]]) -> str:
    """The precision of the compute node that took the most time, as the runtime's profiler reported
    it; `unknown` when there is no profile (never assumed from the request). Nodes typed by a bool or
    index tensor (a model's Where, its token-id Gather) do no arithmetic in a precision and are not counted."""
    compute = [n for n in nodes if n.get("precision") in ARITHMETIC_PRECISIONS]
    if not compute:
        return "unknown"
    return max(compute, key=lambda n: n["time_us"])["precision"]


GEMM_OPS = frozenset({"MatMul", "Gemm", "FusedMatMul", "MatMulNBits", "FullyConnected", "FullyConnectedCompressed"})
"""Profiled op types that multiply by a weight matrix (ONNX Runtime's and OpenVINO's names)."""


def executed_weights(nodes: list[dict[str, Any]]) -> str:
    """The precision of the weights the most expensive matrix product read: `int4` for a 4-bit kernel,
    its compute precision where it read float weights (a runtime that dequantised them first);
    `unknown` without a profile or without a matrix product in it."""
    products = [
        n
        for n in nodes
        if n.get("precision") in ARITHMETIC_PRECISIONS and (n.get("weights") or n.get("op_type") in GEMM_OPS)
    ]
    if not products:
        return "unknown"
    top = max(products, key=lambda n: n["time_us"])
    return top.get("weights") or top["precision"]


def executed_statement(row: dict[str, Any]) -> str:
    """What a row's graph executed, in words: `int4 weights, fp32 compute` for a weight-only graph (its
    weights and compute precision apart), else the executed precision."""
    executed = row.get("precision_executed") or ""
    weights = row.get("weights_executed") or ""
    return f"{weights} weights, {executed} compute" if weights else executed


def precision_fallback(precision: str, executed: str, weights: str) -> bool:
    """Whether a row ran in another precision than asked: a weight-only graph whose kernel read other
    weights than its own, or computed in another precision than its form asks (WEIGHT_ONLY_COMPUTE)."""
    if precision in WEIGHT_ONLY_COMPUTE:
        return (weights not in NOT_PROFILED and weights != precision) or (
            executed not in NOT_PROFILED and executed != WEIGHT_ONLY_COMPUTE[precision]
        )
    return executed not in NOT_PROFILED and executed != precision


def kernel_time(nodes: list[dict[str, Any]]) -> float | None:
    """The sum of the profiled nodes' times per call, containers excluded (their nodes are listed).
    None without a profile, or when a node ran several times per call (a loop body timed per
    iteration): a profiler's own cost per event (about 6 µs on ONNX Runtime 1.31, against kernels of
    under 1 µs) is then inside every one of those times, and their sum measures the profiler."""
    if not nodes or any(n.get("calls", 1) > 1 for n in nodes):
        return None
    return sum(n["time_us"] for n in nodes if not n.get("container"))


def _load_fields(spec: GraphSpec, runtime: dict[str, Any], stats: dict[str, Any], load: Load | None) -> dict[str, Any]:
    """A throughput or server row's own fields (none for a latency row): its mode and requests in
    flight from the Load, its figures from the rounds."""
    if load is None:
        return {}
    ips = stats.get("inferences_per_s")
    return {
        "mode": load.scenario,
        "streams": load.streams,
        "threads_per_stream": runtime["options"].get("threads"),
        "rate": load.rate,
        "latency_bound_us": load.latency_bound_us,
        "throughput_tflops": spec.flops * ips / 1e12 if ips and load.scenario == "throughput" else None,
        **{f: stats.get(f) for f in LOAD_FIELDS},
    }


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
    model), a second runtime's name (a foreign model the reference could not run: `verify_check`
    `cross-runtime`), or None when the row was not verified (absent from rows written before foreign graphs)."""
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
    """The SD of the rounds' log medians: the row's measured noise between rounds (a throughput row's:
    of its rounds' time per inference; a server row's: of its rounds' p99)."""
    drift_sd: float | None = None
    drift_df: int | None = None
    drift_runs: int | None = None
    """The between-run drift in the row's intervals: the SD of a run's log time beyond its rounds, the
    degrees of freedom of that estimate, and the most earlier runs of one graph it came from (this
    machine's, dbench.stats.drift); None: none measured."""
    device_graph_median_us: float | None = None
    """Device time per call with the call replayed as a captured CUDA graph (torch-cuda), beside
    `device_median_us`: the difference is launch overhead (absent from earlier rows)."""
    gpu_state: dict[str, Any] | None = None
    """NVML's clocks, power and temperature of the GPU before (`start`) and after (`end`) timing."""
    mode: str = "latency"
    """latency (one request at a time), throughput (every request in flight kept busy) or server
    (Poisson arrivals); rows written before modes are latency rows. Only latency rows have the per-call
    figures (median_us, p90_us, tflops...); the others have their own fields below."""
    streams: int | None = None
    """Requests in flight on one compiled graph (throughput and server rows)."""
    streams_executed: int | None = None
    """How many of them the runtime runs at once, as it says after compiling (OpenVINO's NUM_STREAMS)."""
    threads_per_stream: int | None = None
    inferences: int | None = None
    """Inferences timed, all rounds together."""
    inferences_per_s: float | None = None
    """Throughput: all rounds' inferences over their wall time."""
    inferences_per_s_low: float | None = None
    inferences_per_s_high: float | None = None
    """Where 95 % of a re-run's throughput should fall, from the rounds."""
    throughput_tflops: float | None = None
    """DeepBench FLOPs x inferences/s: the kernel's FLOP rate with every request busy."""
    time_per_inference_us: float | None = None
    """1 / throughput: the figure compare judges throughput rows by (lower is faster)."""
    round_per_inference_us: list[float] | None = None
    """Each round's wall time / inferences: the throughput row's per-round figures."""
    stream_inferences: list[int] | None = None
    """Inferences each request in flight completed (a starved stream shows here)."""
    latency_p50_us: float | None = None
    latency_p90_us: float | None = None
    latency_p99_us: float | None = None
    """Latency under load: each request's own run (throughput), or from its scheduled arrival to its end,
    queueing included (server); pooled over the rounds' kept latencies."""
    latency_percentiles_us: dict[str, float] | None = None
    rate: float | None = None
    """Server: the Poisson arrival rate asked for, per second."""
    arrival_rate: float | None = None
    """Server: the arrival rate the dispatcher achieved."""
    round_p99_us: list[float] | None = None
    """Server: each round's p99: its per-round figures."""
    latency_p99_low_us: float | None = None
    latency_p99_high_us: float | None = None
    """Server: where 95 % of a re-run's p99 should fall, from the rounds."""
    latency_p99_ci_low_us: float | None = None
    latency_p99_ci_high_us: float | None = None
    """Server: the distribution-free 95 % interval of the true p99 from the pooled requests' order statistics
    (binomial ranks; independent requests assumed, so queueing's correlation makes it narrower than the
    truth); None on a side too few requests cannot bound (below about 370 requests, no upper side)."""
    latency_p99_above: int | None = None
    """Server: requests slower than the p99, all rounds together: how many it rests on (25 wanted; fewer
    where --max-time or --iterations cut the arrivals)."""
    latency_bound_us: float | None = None
    over_bound: float | None = None
    """Server: the share of requests whose latency exceeded the bound."""
    requests: int | None = None
    """Server: the arrivals sent, all rounds together."""
    unserved: int | None = None
    """Server: arrivals still queued when their round ran out of time (an overloaded server), counted with
    latencies of at least that long: where they pass 1 % of the requests, the p99 is a lower bound."""
    utilization: float | None = None
    round_utilization: list[float] | None = None
    """Server: the load the rate really was, rate x the runs' mean time / requests in flight, over all
    rounds and per round (a fixed rate is a higher load on a machine that got slower)."""
    queue_p99_us: float | None = None
    dispatch_lag_p99_us: float | None = None
    """Server: p99 of the wait before a run began, and of the dispatcher's lag behind the schedule."""
    search: dict[str, Any] | None = None
    """Server with a bound: the highest rate that kept p99 under it (`max_rate`), the lowest that did not
    (`max_rate_failed`), the closed-loop ceiling, every trial, and why the search stopped."""
    verify_check: str | None = None
    """The check that gave the verdict (`full`, `rows`, `projection`, `steps`...: docs/method.md), None
    when not verified (absent from rows written before the checks were told apart)."""
    false_accept: float | None = None
    """The most probability that check had of passing an output the full reference would reject."""
    coverage_pairs: int | None = None
    coverage_inside: int | None = None
    history_factor: float | None = None
    """How this machine's earlier rows of the configuration, their intervals made again as now, held later
    runs' medians (pairs judged, pairs inside), and the factor both intervals were scaled by so that 95 %
    would have held (above 1 widened, below 1 narrowed, at most to half; dbench.stats.coverage); None: no
    history, or too few pairs."""
    overlapped: list[str] | None = None
    """Other dbench processes timing on this machine while this row's rounds were timed (their runs),
    seen through the machine's register (dbench.orchestrator.lock); None: none seen."""
    injected_slowdown: float | None = None
    """A benchmark of dbench made every timed call this fraction slower on purpose (DBENCH_BENCHMARK_SLOWDOWN)."""
    resolve_target: float | None = None
    resolved: bool | None = None
    resolve_half: float | None = None
    resolve_note: str = ""
    """--resolve: the target, whether the anytime-valid interval reached it, the half-width it reached
    (paired against the run's first variant in an interleaved run), and what happened, in words."""
    cross_check: dict[str, Any] | None = None
    """A foreign graph's second implementation, where the reference disagreed with the runtime or could
    not run: its runtime, version and options, whether it agrees with this runtime (`agrees`, `error`)
    and with the reference (`agrees_with_reference`, `error_to_reference`), or `why` it did not run;
    None where no second implementation was asked (docs/method.md)."""
    first_difference: dict[str, Any] | None = None
    """Where the runtime and the reference disagreed: the first node whose outputs differ (`node`, `op`,
    `domain`, `opset`, `output`, `error`), or `why` it was not found."""
    disagreeing_outputs: list[str] | None = None
    """The outputs outside the tolerance of the reference, where the runtime disagreed with it."""
    reference_unavailable: str | None = None
    """Why the reference could not check a foreign graph (its budget, an op it lacks), where it could not."""
    verify_random_weights: int | None = None
    """How many constant-filled weights of a structure-only model the verification replaced by seeded
    random ones (the timed graph keeps its own)."""
    placement: dict[str, list[str]] | None = None
    """Where ONNX Runtime ran each node of the graph with a plugin execution provider: provider -> the
    profiler's node names (a compiled subgraph is one node), the CPU provider's being the fallback; None
    for runtimes that place every node themselves."""
    executed_form: str = ""
    """An attention graph's form as the runtime executed it, read from its executed layers: `fused: ...` (one
    attention kernel) or `unfused: ...` (the products and softmax apart), then those layers; empty for
    other graphs and runtimes that cannot tell (dbench.worker.attention_form)."""
    weights_executed: str = ""
    """A weight-only graph (int4): the precision of the weights its main kernel read, apart from the
    compute precision in `precision_executed` (`int4` and `fp32`: a 4-bit kernel computing in fp32;
    `fp32` and `fp32`: the runtime dequantised the weights and ran a float GEMM). Empty for other graphs."""

    def to_dict(self) -> dict[str, Any]:
        row = {("pass" if f.name == "pass_name" else f.name): getattr(self, f.name) for f in dataclasses.fields(self)}
        row["status"] = self.status.value
        return row

    @classmethod
    def build(
        cls,
        run_id: str,
        seq: int,
        spec: GraphSpec,
        runtime: dict[str, Any],
        weights: str | None,
        outcome: Outcome,
        variant: str = "",
        load: Load | None = None,
    ) -> Row:
        """A row from the worker's Outcome (or the parent's, with just status and message, when the
        worker died or the graph never reached it).
        `runtime` holds name, version, device and the options in force; `weights` is the job's mode;
        `outcome.figures` holds the row's statistics fields, combined over its rounds; `load` the
        requests in flight of a throughput or server row (its mode comes from it, never from figures)."""
        stats = outcome.figures or {}
        nodes = outcome.nodes or []
        verification = outcome.verification or {}
        status = outcome.status
        median_s = stats["median_us"] / 1e6 if stats.get("median_us") else None
        kernel_us = kernel_time(nodes)
        executed = (
            executed_precision(nodes)
            if nodes
            else ("unknown" if status in (Status.OK, Status.MISMATCH, Status.DISPUTED) else "")
        )
        weights_executed = (
            (executed_weights(nodes) if nodes else executed) if spec.precision in WEIGHT_ONLY_COMPUTE else ""
        )
        row = cls(
            run_id=run_id,
            seq=seq,
            graph_id=spec.id,
            kernel_id=spec.kernel_id,
            family=spec.family,
            op=spec.op,
            pass_name=spec.pass_name,
            form=spec.form,
            suites=list(spec.suites),
            apps=list(spec.apps),
            params=spec.params,
            attrs=spec.attrs,
            precision=spec.precision,
            precision_executed=executed,
            precision_fallback=precision_fallback(spec.precision, executed, weights_executed),
            weights_executed=weights_executed,
            weights=weights,
            runtime=runtime["name"],
            runtime_version=runtime["version"],
            device=runtime.get("device"),
            runtime_options=runtime["options"],
            status=status,
            message=outcome.message or "",
            **{f: stats.get(f) for f in STAT_FIELDS},
            kernel_time_us=kernel_us,
            overhead_us=stats["median_us"] - kernel_us if stats.get("median_us") and kernel_us is not None else None,
            nodes=nodes,
            flops=spec.flops,
            flops_executed=spec.flops_executed,
            # No counted work (a model without a recognised kernel): no rate, rather than 0 TFLOP/s.
            tflops=spec.flops / median_s / 1e12 if median_s and spec.flops else None,
            tflops_executed=spec.flops_executed / median_s / 1e12 if median_s and spec.flops_executed else None,
            min_bytes=spec.min_bytes,
            gbps=spec.min_bytes / median_s / 1e9 if median_s else None,
            intensity=spec.flops / spec.min_bytes if spec.min_bytes and spec.flops else None,
            peak_rss_bytes=outcome.peak_rss_bytes,
            memory_bytes=outcome.memory_bytes,
            device_memory_bytes=outcome.device_memory_bytes,
            verified=verification.get("ok"),
            verified_by=verification.get("by"),
            error=verification.get("error"),
            tolerance_metric=verification.get("metric"),
            tolerance=verification.get("bound"),
            verified_rows=verification.get("rows_checked"),
            verify_check=verification.get("check"),
            false_accept=verification.get("false_accept"),
            cross_check=verification.get("second"),
            first_difference=verification.get("first_difference"),
            disagreeing_outputs=verification.get("outputs"),
            reference_unavailable=verification.get("reference"),
            verify_random_weights=verification.get("random_weights"),
            placement=(runtime["options"] or {}).get("placement"),
            device_median_us=outcome.device_median_us,
            inputs_s=outcome.inputs_s,
            prepare_s=outcome.prepare_s,
            verify_s=outcome.verify_s,
            profile_s=outcome.profile_s,
            profile_call_us=outcome.profile_call_us,
            executed_form=outcome.executed_form,
            device_graph_median_us=outcome.device_graph_median_us,
            gpu_state=outcome.gpu_state,
            finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            load_1m=(load_average() or [None])[0],
            variant=variant or runtime["name"],
            **_load_fields(spec, runtime, stats, load),
        )
        return dataclasses.replace(row, invariant_violations=violations(row.to_dict()))
