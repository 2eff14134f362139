"""Resolve shapes that ONNX shape inference leaves open in exported models: compute the small
shape-arithmetic subgraphs (Shape -> Slice -> Mul -> Concat -> Reshape target) once the input
dimensions are bound, and infer again with their values as constants. Used for shapes only: the
walked and timed model keeps every node."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from dbench.frommodel.dims import FIRST_IR_WITHOUT_INPUT_INITIALIZERS

MAX_ELEMENTS = 1024
"""Only tensors this small are folded: shape arithmetic, never activations or weights."""


def static_shape(value: onnx.ValueInfoProto) -> tuple[int, ...] | None:
    dims = value.type.tensor_type.shape.dim
    if not value.type.tensor_type.HasField("shape") or not all(d.HasField("dim_value") for d in dims):
        return None
    return tuple(d.dim_value for d in dims)


def open_shapes(model: onnx.ModelProto) -> bool:
    """Whether some value of the inferred main graph lacks a static shape."""
    values = [*model.graph.value_info, *model.graph.output]
    names = {v.name for v in values}
    missing = any(out not in names for n in model.graph.node for out in n.output if out)
    return missing or any(static_shape(v) is None for v in values)


def _shape_of(node: onnx.NodeProto, shape: tuple[int, ...]) -> np.ndarray:
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return np.array(shape[attrs.get("start", 0) : attrs.get("end", len(shape))], dtype=np.int64)


def _evaluate(node: onnx.NodeProto, inputs: list[np.ndarray], opsets) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    names = [n for n in node.input]
    graph = helper.make_graph(
        [node],
        "fold",
        [
            helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in zip(names, inputs)
            if n
        ],
        [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in node.output],
    )
    return ReferenceEvaluator(helper.make_model(graph, opset_imports=opsets)).run(
        None, {n: a for n, a in zip(names, inputs) if n}
    )


def fold_shape_arithmetic(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of the inferred `model` whose computable small tensors are initializers (for re-inference)."""
    known: dict[str, np.ndarray] = {}
    for tensor in model.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL and np.prod(tensor.dims, dtype=np.int64) <= MAX_ELEMENTS:
            known[tensor.name] = numpy_helper.to_array(tensor)
    shapes = {v.name: static_shape(v) for v in [*model.graph.input, *model.graph.value_info]}
    for node in model.graph.node:
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            continue
        if node.op_type == "Shape" and shapes.get(node.input[0]) is not None:
            known[node.output[0]] = _shape_of(node, shapes[node.input[0]])
            continue
        inputs = [n for n in node.input if n]
        if (not inputs and node.op_type != "Constant") or not all(n in known for n in inputs):
            continue  # a Constant node's value is known without inputs (exporters root shape arithmetic there)
        try:
            results = _evaluate(node, [known.get(n, np.empty(0)) for n in node.input], model.opset_import)
        except Exception:  # an op the evaluator lacks: its outputs stay open, the walk says why
            continue
        for name, result in zip(node.output, results):
            if name and np.asarray(result).size <= MAX_ELEMENTS:
                known[name] = np.asarray(result)
    folded = onnx.ModelProto()
    folded.CopyFrom(model)
    # The folded values become initializers that no input declares; before IR 4 shape inference types
    # only initializers that are inputs, and every value computed from one would lose its shape.
    folded.ir_version = max(folded.ir_version, FIRST_IR_WITHOUT_INPUT_INITIALIZERS)
    graph = folded.graph
    produced = {o for n in graph.node for o in n.output}
    keep = [n for n in graph.node if not all(o in known for o in n.output if o)]
    del graph.node[:]
    graph.node.extend(keep)
    existing = {t.name for t in graph.initializer}
    graph.initializer.extend(
        numpy_helper.from_array(known[name], name) for name in known if name in produced and name not in existing
    )
    del graph.value_info[:]
    return folded
