"""One graph of benchmarks/reference_sweep.py on every implementation, and the comparison of their outputs.

Implementations: onnx.reference as it is (`reference`), dbench's foreign reference (`corrected`:
onnx.reference with dbench's corrections), ONNX Runtime CPU with every graph optimization off (`ort`),
OpenVINO CPU with its inference precision pinned to f32 (`openvino`), and the spec's outputs where the
case has them (`spec`: onnx's node test numpy, or a dbench generator's formula).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

IMPLEMENTATIONS = ("reference", "corrected", "ort", "openvino")
WITNESSES = ("ort", "openvino", "spec")
"""The implementations the reference is checked against."""
TOLERANCE = {"float64": 1e-5, "float32": 1e-3, "float16": 1e-2, "bfloat16": 4e-2}
"""Relative error two implementations may differ by, by the output's element type: summation order and
libm; float64 as float32 (OpenVINO computes f64 graphs in f32). Float8/float4 types: a step of their
grid; every other type (integers, bool, strings) must be equal."""
LOW_PRECISION = 0.25


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    return f"{type(err).__name__}: {line[:160]}" if line else type(err).__name__


def run_reference(model: onnx.ModelProto, inputs: dict[str, Any], corrected: bool) -> list[Any]:
    from onnx.reference import ReferenceEvaluator

    from dbench.sources.foreign_reference import foreign_evaluator

    evaluator = foreign_evaluator(model) if corrected else ReferenceEvaluator(model)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return list(evaluator.run(None, inputs))


BIT_TYPES = {
    "bfloat16": ("bf16", np.uint16),
    "float8_e4m3fn": ("f8e4m3", np.uint8),
    "float8_e5m2": ("f8e5m2", np.uint8),
    "float8_e8m0fnu": ("f8e8m0", np.uint8),
}
"""Element types numpy has only through ml_dtypes: the runtime's own type name and the bits that carry them."""
PACKED = {"int4", "uint4", "float4_e2m1fn", "int2", "uint2"}


def _declared(model: onnx.ModelProto, outputs: list[Any]) -> list[Any]:
    """A runtime's outputs in the element types the graph declares: a type numpy lacks (bfloat16,
    float8) comes back as its raw bits, reinterpreted here."""
    from onnx import helper

    typed = []
    for value, info in zip(outputs, model.graph.output):
        element = info.type.tensor_type.elem_type
        if isinstance(value, np.ndarray) and element:
            wanted = helper.tensor_dtype_to_np_dtype(element)
            if value.dtype != wanted and value.dtype.itemsize == wanted.itemsize and wanted.name in BIT_TYPES:
                value = value.view(wanted)
            elif wanted.name in PACKED and value.dtype != wanted:
                raise TypeError(
                    f"its {wanted.name} output comes back packed two values to a byte; the sweep does not unpack it"
                )
        typed.append(value)
    return typed


def run_ort(model: onnx.ModelProto, inputs: dict[str, Any]) -> list[Any]:
    import onnxruntime as ort
    from onnx import helper

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 4
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = {
        name: ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
            value.view(BIT_TYPES[value.dtype.name][1]), helper.np_dtype_to_tensor_dtype(value.dtype)
        )
        if isinstance(value, np.ndarray) and value.dtype.name in BIT_TYPES
        else value
        for name, value in inputs.items()
    }
    return _declared(model, list(session.run(None, feeds)))


_CORE: list[Any] = []


def run_openvino(model: onnx.ModelProto, inputs: dict[str, Any]) -> list[Any]:
    import openvino as ov

    if not _CORE:
        _CORE.append(ov.Core())
    core = _CORE[0]
    read = core.read_model(model.SerializeToString(), ov.Tensor(np.empty(0, dtype=np.uint8)))
    compiled = core.compile_model(read, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1})
    for name, value in inputs.items():
        if not isinstance(value, np.ndarray):
            raise TypeError(f"input {name} is a {type(value).__name__}, not a tensor")
    request = compiled.create_infer_request()
    feeds = {}
    for name, value in inputs.items():
        if value.dtype.name in BIT_TYPES:
            kind, bits = BIT_TYPES[value.dtype.name]
            tensor = ov.Tensor(getattr(ov.Type, kind), list(value.shape))
            tensor.data.view(bits)[...] = value.view(bits)
            value = tensor
        feeds[name] = value
    request.infer(feeds)
    return _declared(
        model, [np.array(request.get_output_tensor(i).data, copy=True) for i in range(len(compiled.outputs))]
    )


RUNNERS: dict[str, Callable[[onnx.ModelProto, dict[str, Any]], list[Any]]] = {
    "reference": lambda m, i: run_reference(m, i, corrected=False),
    "corrected": lambda m, i: run_reference(m, i, corrected=True),
    "ort": run_ort,
    "openvino": run_openvino,
}


def _tolerance(array: np.ndarray) -> float | None:
    """Relative tolerance for outputs like `array`, None where they must be equal."""
    name = array.dtype.name
    if name in TOLERANCE:
        return TOLERANCE[name]
    if name.startswith(("float8", "float4", "float6")):
        return LOW_PRECISION
    return None


def difference(a: Any, b: Any) -> str:
    """'' where output `a` matches `b` within the tolerance of `b`'s type, else how they differ."""
    if isinstance(b, (list, tuple)) or isinstance(a, (list, tuple)):
        if not isinstance(a, (list, tuple)) or not isinstance(b, (list, tuple)) or len(a) != len(b):
            return "sequences of different lengths"
        return next((d for d in (difference(x, y) for x, y in zip(a, b)) if d), "")
    if a is None or b is None:
        return "" if a is None and b is None else "one output is empty"
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    if a.size == 0:
        return ""
    if b.dtype.kind in "OUS" or a.dtype.kind in "OUS":
        return "" if np.array_equal(a.astype(str), b.astype(str)) else "strings differ"
    tolerance = _tolerance(b) if b.dtype.kind == "f" or b.dtype.name.startswith(("float", "bfloat")) else None
    try:
        x, y = a.astype(np.float64), b.astype(np.float64)
    except (TypeError, ValueError):
        return "" if np.array_equal(a, b) else "values differ"
    same_nan = np.isnan(x) == np.isnan(y)
    if not same_nan.all():
        return f"NaN at {int((~same_nan).sum())} of {a.size} elements"
    finite = np.isfinite(y) & np.isfinite(x)
    if not np.array_equal(x[~finite & ~np.isnan(y)], y[~finite & ~np.isnan(y)]):
        return "infinities differ"
    x, y = x[finite], y[finite]
    if tolerance is None:
        wrong = int((x != y).sum())
        return f"{wrong} of {a.size} elements differ (max {np.abs(x - y).max():.3g})" if wrong else ""
    scale = max(
        float(np.sqrt(np.mean(x * x))) if x.size else 0.0, float(np.sqrt(np.mean(y * y))) if y.size else 0.0, 1e-3
    )
    error = np.abs(x - y) / (np.maximum(np.abs(x), np.abs(y)) + scale)
    worst = float(error.max()) if error.size else 0.0
    return "" if worst <= tolerance else f"relative error {worst:.3g} > {tolerance:g}"


def outputs_difference(a: list[Any], b: list[Any]) -> str:
    """'' where every output of `a` matches `b`'s, else the first difference and which output."""
    if len(a) != len(b):
        return f"{len(a)} outputs vs {len(b)}"
    for index, (x, y) in enumerate(zip(a, b)):
        found = difference(x, y)
        if found:
            return f"output {index}: {found}"
    return ""


def run_case(
    model: onnx.ModelProto,
    inputs: dict[str, Any],
    expected: list[Any] | None,
    skip: dict[str, str],
    started: Callable[[str], None] = lambda name: None,
) -> dict[str, Any]:
    """Every implementation on one graph (except those `skip` names, with the reason recorded), and
    each one's difference from the corrected reference and from each witness."""
    results: dict[str, list[Any]] = {}
    errors: dict[str, str] = dict(skip)
    for name, runner in RUNNERS.items():
        if name in skip:
            continue
        started(name)
        try:
            results[name] = runner(model, inputs)
        except Exception as err:  # each runtime's own exception types: the refusal is the result
            errors[name] = _first_line(err)
    if expected is not None:
        results["spec"] = list(expected)
    pairs = {}
    names = list(results)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            pairs[f"{a}|{b}"] = outputs_difference(results[a], results[b])
    return {"ran": sorted(results), "errors": errors, "pairs": pairs}
