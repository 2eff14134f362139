"""An independent FLOP count of a model's kernel nodes, written from the ONNX operator spec and the
shapes the model really has when it runs (not from dbench's extractor): each value's shape is read
from an ONNX Runtime run with every intermediate value exposed, or onnx.reference's run where ONNX
Runtime cannot run the model, or ONNX shape inference where neither can.

Counting convention (dbench's documented DeepBench formulas, applied to what the spec computes):
  MatMul, MatMulInteger, QLinearMatMul   2 · |Y| · K            (K: A's last axis)
  Gemm                                   2 · M · N · K          (the C add is not counted)
  Conv, ConvInteger, QLinearConv         2 · |Y| · C/group · ∏ kernel
  ConvTranspose                          2 · |X| · C_out/group · ∏ kernel
  RNN, GRU, LSTM (per direction)         2 · gates · T · N · H² + T · N · H (the recurrent product,
                                         as DeepBench's inference sheets; gates 1, 3, 4)
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

KERNEL_OPS = {
    "MatMul",
    "MatMulInteger",
    "QLinearMatMul",
    "Gemm",
    "Conv",
    "ConvInteger",
    "QLinearConv",
    "ConvTranspose",
    "RNN",
    "GRU",
    "LSTM",
}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
STANDARD = ("", "ai.onnx")


def _attr(node: onnx.NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def node_flops(node: onnx.NodeProto, shape) -> int:
    """FLOPs of one kernel node from the spec, `shape(name)` giving a value's real shape."""
    op = node.op_type
    if op in ("MatMul", "MatMulInteger", "QLinearMatMul"):
        a = shape(node.input[0 if op != "QLinearMatMul" else 0])
        return 2 * int(np.prod(shape(node.output[0]), dtype=np.int64)) * a[-1]
    if op == "Gemm":
        a, y = shape(node.input[0]), shape(node.output[0])
        k = a[0] if _attr(node, "transA", 0) else a[1]
        return 2 * y[0] * y[1] * k
    if op in ("Conv", "ConvInteger", "QLinearConv"):
        w = shape(node.input[3 if op == "QLinearConv" else 1])
        return 2 * int(np.prod(shape(node.output[0]), dtype=np.int64)) * w[1] * int(np.prod(w[2:], dtype=np.int64))
    if op == "ConvTranspose":
        x, w = shape(node.input[0]), shape(node.input[1])
        return 2 * int(np.prod(x, dtype=np.int64)) * w[1] * int(np.prod(w[2:], dtype=np.int64))
    gates = GATES[op]
    x, r = shape(node.input[0]), shape(node.input[2])
    t, n = (x[1], x[0]) if _attr(node, "layout", 0) else (x[0], x[1])
    directions, hidden = r[0], r[-1]
    return directions * (2 * gates * t * n * hidden * hidden + t * n * hidden)


def _kernel_values(model: onnx.ModelProto) -> list[str]:
    names = [
        n
        for node in model.graph.node
        if node.op_type in KERNEL_OPS and node.domain in STANDARD
        for n in [*node.input, *node.output]
        if n
    ]
    return list(dict.fromkeys(names))


def _shapes_by_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray], names: list[str]) -> dict[str, tuple]:
    import onnxruntime as ort

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    produced = {o for n in probe.graph.node for o in n.output}
    wanted = [n for n in names if n in produced]
    del probe.graph.output[:]
    probe.graph.output.extend(onnx.ValueInfoProto(name=n) for n in wanted)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return dict(zip(wanted, (tuple(np.shape(v)) for v in session.run(None, feeds))))


def _shapes_by_reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, tuple]:
    from onnx.reference import ReferenceEvaluator

    results = ReferenceEvaluator(model).run(None, feeds, intermediate=True)
    return {name: tuple(np.shape(value)) for name, value in results.items()}


def _shapes_by_inference(model: onnx.ModelProto) -> dict[str, tuple]:
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    shapes = {}
    for v in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]:
        dims = v.type.tensor_type.shape.dim
        if v.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
            shapes[v.name] = tuple(d.dim_value for d in dims)
    return shapes


def count(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> tuple[dict[int, int], str]:
    """({node index: FLOPs} for every standard kernel node whose shapes are known, how shapes were read)."""
    names = _kernel_values(model)
    if not names:
        return {}, "no kernel node"
    known = {t.name: tuple(t.dims) for t in model.graph.initializer}
    known.update({k: tuple(v.shape) for k, v in feeds.items()})
    how = "onnxruntime"
    try:
        known.update(_shapes_by_ort(model, feeds, names))
    except Exception:
        try:
            known.update(_shapes_by_reference(model, feeds))
            how = "onnx.reference"
        except Exception:
            known.update(_shapes_by_inference(model))
            how = "shape inference"
    flops = {}
    for index, node in enumerate(model.graph.node):
        if node.op_type in KERNEL_OPS and node.domain in STANDARD:
            try:
                flops[index] = node_flops(node, lambda name: known[name])
            except (KeyError, IndexError):
                continue  # a shape no method could read: left out, and said by the caller
    return flops, how
