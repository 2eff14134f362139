"""Checks every result row must pass before it is written: a violation is a measuring or bookkeeping
defect in dbench or an adapter, and the row says so (`invariant_violations`) rather than carrying a
figure that cannot be true."""

from __future__ import annotations

from typing import Any

KERNEL_TIME_TOLERANCE = 2.0
"""How far the profiled kernel time may exceed the end-to-end median. The profile is a second pass in a
freshly built session, after the timed calls and its own warm-up, so the two move apart with the machine:
on 28 `--quick` rows of every family on a quiet 2-core VM, kernel time / median ranged 0.62 to 1.62
(a quick median has no warm-up time), and over a full `--quick` inference run on both CPU runtimes (612
rows, load 0.7 to 5.8) 0.20 to 2.86. The defects this check exists for were 2x to 79x: a profile of a
fresh session's cold calls (2-5x), nested loop events summed (4.6x to 79x). A pass slower than this
against the timed calls is taken again (dbench.worker.main.PROFILE_ATTEMPTS)."""

PROFILE_EVENT_US = 6.0
"""A profiler's own cost per node event, which each profiled node's time carries and the timed calls do
not (about 6 µs on ONNX Runtime 1.31: dbench.store.schema.kernel_time). Next to kernels it is noise; a
whole model of a hundred sub-µs nodes profiles at several times its timed median for this alone, so
the kernel-time check allows it per node."""

PROFILE_CLOCK_TOLERANCE = 0.05
PROFILE_CLOCK_SLACK_US = 3.0
"""The node times of one profiling pass sum to at most that pass's own time per call, which brackets
them (ONNX Runtime's `model_run`, OpenVINO's request latency, TensorRT's synchronised enqueue): 0.96 to
0.994 of it on those 28 rows, 0.24 to 1.032 over the full run (the 1.032 from per-node medians, since
replaced by means over the typical runs). Allowed: 5% and 3 µs per node (OpenVINO's CPU averages are
whole µs)."""

COMPUTE_PRECISIONS = {
    "fp32": {"fp32", "tf32", "fp16", "bf16"},
    "fp16": {"fp16", "fp32"},
    "bf16": {"bf16", "fp32"},
    "int8": {"int8", "fp32", "fp16", "bf16"},
    "fp64": {"fp64", "fp32"},
    "int4": {"fp32", "fp16", "bf16", "int8"},
}
"""The precisions a graph's compute can have run in: its own, a float fallback, or (fp32 graphs with
--allow-runtime-precision) a narrower float (TF32: a CUDA kernel torch-cuda's profile names so). Never an
index or trip-count type (int64, bool). fp64 is a foreign model's (OpenVINO computes it in fp32)."""
ARITHMETIC_PRECISIONS = frozenset().union(*COMPUTE_PRECISIONS.values())
"""The precisions a node computes in; a node typed by anything else (bool, int64) moves or selects data."""

NOT_PROFILED = ("unknown", "")
"""Executed precision of a row without a profile (`unknown`) or without a measurement (`""`)."""


def violations(row: dict[str, Any]) -> list[str]:
    """The invariants a row breaks, each as a sentence; empty when it is sound."""
    found = []
    kernel, median, call = row.get("kernel_time_us"), row.get("median_us"), row.get("profile_call_us")
    nodes = [n for n in row.get("nodes") or [] if not n.get("container")]
    if kernel is not None and median and kernel > median * (1 + KERNEL_TIME_TOLERANCE) + PROFILE_EVENT_US * len(nodes):
        load = row.get("load_1m")
        said = ([f"1-minute load {load:.2f}"] if load is not None else []) + (
            [f"the profiling pass ran at {call:.1f} us per call"] if call else []
        )
        context = f" ({'; '.join(said)})" if said else ""
        found.append(
            f"kernel time {kernel:.1f} us exceeds the end-to-end median {median:.1f} us "
            f"by more than {KERNEL_TIME_TOLERANCE:.0%} and {PROFILE_EVENT_US:g} us per profiled node{context}"
        )
    if (
        kernel is not None
        and call
        and kernel > call * (1 + PROFILE_CLOCK_TOLERANCE) + PROFILE_CLOCK_SLACK_US * len(nodes)
    ):
        found.append(
            f"kernel time {kernel:.1f} us exceeds the {call:.1f} us per call of the profiling pass it was "
            "measured in: the adapter miscounts its profiler's node times"
        )
    executed = row.get("precision_executed") or ""
    allowed = COMPUTE_PRECISIONS.get(row.get("precision", ""), set())
    if executed not in NOT_PROFILED and executed not in allowed:
        found.append(
            f"executed precision {executed} is not a compute precision a {row.get('precision')} graph "
            f"can run in ({', '.join(sorted(allowed))})"
        )
    return found
