"""TensorRT's engine inspector JSON (TensorRT 10 and 11 schemas) and per-layer profiler times ->
NodeProfile rows: layer name, type, tactic (kernel) and the precision the layer executed."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dbench.runtimes.base import NodeProfile, typical_runs

# Inspector data-type spellings (TensorRT 10 "Format/Datatype" prose, 11 "DataType") -> our names.
PRECISION_PATTERNS = [
    (re.compile(r"\b(bf16|bfloat16)\b", re.I), "bf16"),
    (re.compile(r"\b(fp16|half)\b", re.I), "fp16"),
    (re.compile(r"\b(fp32|float)\b", re.I), "fp32"),
    (re.compile(r"\b(fp8|e4m3)\b", re.I), "fp8"),
    (re.compile(r"\bint8\b", re.I), "int8"),
    (re.compile(r"\bint32\b", re.I), "int32"),
    (re.compile(r"\bint64\b", re.I), "int64"),
]
# Layers that move or reformat data, not compute: their tensor type says nothing about the math.
NON_COMPUTE_LAYERS = {"Reformat", "Shuffle", "NoOp", "Constant", "Cast", "Slice", "Identity", "Copy"}


def precision_of(text: str) -> str:
    """Our precision name for an inspector type description ("" when it names none)."""
    for pattern, name in PRECISION_PATTERNS:
        if pattern.search(text):
            return name
    return ""


def _tensor_type(tensor: Mapping[str, Any]) -> str:
    return str(tensor.get("DataType") or tensor.get("Format/Datatype") or "")


def layer_precision(layer: Mapping[str, Any]) -> str:
    """The precision a compute layer ran in: its first input's type (int8 convolutions take int8 in
    and may write float out); "" for data-movement layers."""
    if layer.get("LayerType") in NON_COMPUTE_LAYERS:
        return ""
    tensors = list(layer.get("Inputs") or []) + list(layer.get("Outputs") or [])
    for tensor in tensors:
        if isinstance(tensor, Mapping) and (precision := precision_of(_tensor_type(tensor))):
            return precision
    return ""


def node_profiles(engine_info: Mapping[str, Any], layer_times_us: Mapping[str, float]) -> list[NodeProfile]:
    """One NodeProfile per engine layer, in engine order, with the profiler's median time (0 for a
    layer the profiler never reported, such as one fused away at run time)."""
    nodes = []
    for layer in engine_info.get("Layers", []):
        if not isinstance(layer, Mapping):  # inspector without DETAILED verbosity: names only
            layer = {"Name": str(layer)}
        name = str(layer.get("Name", ""))
        nodes.append(
            NodeProfile(
                name=name,
                op_type=str(layer.get("LayerType", "")),
                kernel=str(layer.get("TacticName") or layer.get("Tactic") or ""),
                provider="TensorRT",
                precision=layer_precision(layer),
                time_us=float(layer_times_us.get(name, 0.0)),
            )
        )
    return nodes


def typical_layer_times(
    reports_us: Mapping[str, Sequence[float]], warmup: int, calls_us: Sequence[float]
) -> tuple[dict[str, float], float]:
    """An IProfiler's reports (one per layer per run, warm-up runs first) and the profiled runs' times
    per call -> each layer's mean over the typical runs (`typical_runs`), and those runs' mean call. A
    layer not reported once per run gets the mean of its reports."""
    kept = typical_runs(calls_us)
    layers = {
        name: float(np.mean([times[warmup + run] for run in kept]))
        if len(times) == warmup + len(calls_us)
        else float(np.mean(times))
        for name, times in reports_us.items()
    }
    return layers, float(np.mean([calls_us[run] for run in kept]))
