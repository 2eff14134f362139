"""torch.profiler events -> dbench's per-node Profile. Each profiled call is one `record_function`
range; its nodes are the ATen operators called directly inside it (CPU), or the device kernels those
operators launched (CUDA). A node's time per call is the sum of its events within a call (an eager
loop calls the same operator at every step: `calls` counts them), averaged over the typical calls
(base.typical_runs); the pass's time per call is the mean of those calls' ranges."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from dbench.runtimes.base import NodeProfile, Profile, typical_runs

CALL_RANGE = "dbench::call"
"""The record_function name around each profiled call."""

DTYPE_PRECISION = {
    "float": "fp32",
    "c10::Half": "fp16",
    "c10::BFloat16": "bf16",
    "double": "fp64",
    "c10::quint8": "int8",
    "c10::qint8": "int8",
    "signed char": "int8",
    "unsigned char": "int8",
    "int": "int32",
    "long int": "int64",
    "bool": "bool",
}
"""The profiler's C++ type names of an operator's inputs -> dbench's precision names."""

NON_COMPUTE_OPS = {
    "aten::t",
    "aten::transpose",
    "aten::view",
    "aten::reshape",
    "aten::_reshape_alias",
    "aten::expand",
    "aten::as_strided",
    "aten::select",
    "aten::slice",
    "aten::split",
    "aten::unsqueeze",
    "aten::squeeze",
    "aten::empty",
    "aten::empty_like",
    "aten::empty_strided",
    "aten::zeros",
    "aten::zeros_like",
    "aten::copy_",
    "aten::contiguous",
    "aten::clone",
    "aten::to",
    "aten::_to_copy",
    "aten::cat",
    "aten::stack",
    "aten::detach",
    "aten::lift_fresh",
    "aten::resolve_conj",
    "aten::resolve_neg",
    "aten::quantize_per_tensor",
    "aten::dequantize",
    "aten::int_repr",
    "aten::_to_dense",
    "aten::to_sparse_csr",
    "aten::_to_sparse_csr",
    "aten::fill_",
    "aten::zero_",
    "aten::new_empty",
    "aten::item",
    "aten::_local_scalar_dense",
    "aten::lt",
    "aten::gt",
    "aten::clamp",
    "aten::round",
}
"""Operators that move, convert or allocate data (or only threshold it): their input type says nothing
about the precision the math ran in, so they carry none."""


def precision_of(op: str, input_dtypes: Iterable[str], kernel: str = "") -> str:
    """The precision an operator computed in, from its first typed input; `tf32` where the device
    kernel's name says TF32; empty for data movement."""
    if op in NON_COMPUTE_OPS:
        return ""
    if "tf32" in kernel.lower():
        return "tf32"
    for dtype in input_dtypes:
        if dtype in DTYPE_PRECISION:
            return DTYPE_PRECISION[dtype]
    return ""


def dtypes_by_start(profiler) -> dict[tuple[int, str], list[str]]:
    """Every profiled event's input types keyed by (start in ns from the trace's start, name), read from the
    profiler's kineto results: torch 2.11's FunctionEvent has no `input_dtypes` (seen on a GPU machine's
    torch 2.11.0+cu130), while its kineto events carry them as `dtypes()`; empty where neither exists."""
    result = getattr(getattr(profiler, "profiler", None), "kineto_results", None)
    if result is None:
        return {}
    start = result.trace_start_ns()
    return {(event.start_ns() - start, event.name()): list(event.dtypes()) for event in result.events()}


def input_dtypes(op, by_start: dict[tuple[int, str], list[str]]) -> list[str]:
    """An operator event's input types: its own where this torch records them, else its kineto event's."""
    own = getattr(op, "input_dtypes", None)
    if own is not None:
        return own
    return by_start.get((round(op.time_range.start * 1000), op.name), [])


def _kernels(event) -> list[Any]:
    """The device kernels an operator launched, its children's included."""
    found = list(getattr(event, "kernels", []) or [])
    for child in event.cpu_children:
        found += _kernels(child)
    return found


def parse_events(
    events: Iterable[Any], warmup: int, device: bool, by_start: dict[tuple[int, str], list[str]] | None = None
) -> Profile:
    """A Profile from torch.profiler FunctionEvents: one node per operator name (CPU) or per
    (operator, kernel name) (device), the first `warmup` call ranges dropped when later ones exist;
    `by_start` (dtypes_by_start) gives input types where the events lack them."""
    by_start = by_start or {}
    # With CUDA activity a record_function range is also a device annotation event: the host's is the call.
    calls = [e for e in events if e.name == CALL_RANGE and e.device_type.name == "CPU"]
    calls.sort(key=lambda e: e.time_range.start)
    if not calls:
        return Profile([], None)
    totals: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0] * len(calls))
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0] * len(calls))
    precision: dict[tuple[str, str], str] = {}
    for index, call in enumerate(calls):
        for op in call.cpu_children:
            if device:
                for kernel in _kernels(op):
                    key = (op.name, kernel.name)
                    totals[key][index] += float(kernel.duration)
                    counts[key][index] += 1
                    precision[key] = precision_of(op.name, input_dtypes(op, by_start), kernel.name)
            else:
                key = (op.name, "")
                totals[key][index] += float(op.time_range.elapsed_us())
                counts[key][index] += 1
                precision[key] = precision_of(op.name, input_dtypes(op, by_start))
    warm = range(warmup, len(calls)) if len(calls) > warmup else range(len(calls))
    durations = [calls[i].time_range.elapsed_us() for i in warm]
    kept = [warm[i] for i in typical_runs(durations)]
    nodes = [
        NodeProfile(
            name=op if not kernel else f"{op}/{kernel}",
            op_type=op,
            kernel=kernel or op,
            provider="cuda" if device else "cpu",
            precision=precision[(op, kernel)],
            time_us=float(np.mean([totals[(op, kernel)][i] for i in kept])),
            calls=int(np.median([counts[(op, kernel)][i] for i in kept])),
        )
        for op, kernel in totals
    ]
    return Profile(nodes, float(np.mean([calls[i].time_range.elapsed_us() for i in kept])))
