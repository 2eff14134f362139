"""What a graph source promises the worker about each graph, and the worker's check of it: the graph's
fed inputs are the spec's (names, shapes, types), its stored weights are fed from the file, and its
outputs are verified by the reference the source names. Crosses the process boundary in the Job."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from dbench.frommodel.dims import FIRST_IR_WITHOUT_INPUT_INITIALIZERS, graph_inputs
from dbench.gen.graph import GraphSpec
from dbench.gen.precision import ONNX_TYPES

NUMPY = "numpy"
"""dbench's own float64 reference of the graph's family (generated graphs)."""
ONNX_REFERENCE = "onnx.reference"
"""ONNX's Python implementation of every standard op (foreign models)."""
STORED_WEIGHT_TYPES = (
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.FLOAT16,
    onnx.TensorProto.BFLOAT16,
    onnx.TensorProto.DOUBLE,
)
"""Initialized inputs of these types are weights: fed every call in weights-as-inputs mode. The others
(shape arithmetic, indices) stay constants in both modes."""


@dataclass(frozen=True)
class Contract:
    """How the worker holds one graph to its description: what computes the expected outputs, what the
    description is called in a message, and the fix when the graph does not match it."""

    reference: str = NUMPY
    described_by: str = "its manifest entry"
    remedy: str = "regenerate the folder with dbench gen --force"


def initialized_inputs(model: onnx.ModelProto) -> list[str]:
    """Graph inputs that have an initializer (a default value): every weight of an IR < 4 model, and the
    weights of exports that keep initializers as inputs."""
    stored = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name in stored]


def check_model(model: onnx.ModelProto, spec: GraphSpec) -> str | None:
    """Why the graph's fed inputs differ from the spec's (names, shapes, element types), or None."""
    values = graph_inputs(model)
    names, expected = [v.name for v in values], [t.name for t in spec.inputs]
    if names != expected:
        return f"graph inputs {names} differ from {expected}"
    for value, tensor in zip(values, spec.inputs):
        dims = tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
        if dims != tensor.shape:
            return f"input {tensor.name} has shape {dims} in the graph but {tensor.shape}"
        if value.type.tensor_type.elem_type != ONNX_TYPES.get(tensor.dtype, value.type.tensor_type.elem_type):
            return f"input {tensor.name} has another element type in the graph than {tensor.dtype}"
    return None


def stored_weights(model: onnx.ModelProto, weights: str) -> dict[str, np.ndarray]:
    """Make the model's initialized inputs what the weights mode asks, in place, and return the arrays
    to feed every call. `const`: they become constants (no longer inputs; IR raised to 4 where lower,
    so every runtime reads them so). `input`: floating ones are detached from their initializers and
    fed every call with the stored values; the others (shapes, indices) stay constants."""
    names = initialized_inputs(model)
    if not names:
        return {}
    fed = set(names) if weights == "input" else set()
    graph = model.graph
    tensors = {t.name: t for t in graph.initializer}
    fed = {n for n in fed if tensors[n].data_type in STORED_WEIGHT_TYPES}
    arrays = {n: numpy_helper.to_array(tensors[n]) for n in fed}
    keep_inputs = [i for i in graph.input if i.name not in tensors or i.name in fed]
    keep_tensors = [t for t in graph.initializer if t.name not in fed]
    del graph.input[:]
    graph.input.extend(keep_inputs)
    del graph.initializer[:]
    graph.initializer.extend(keep_tensors)
    model.ir_version = max(model.ir_version, FIRST_IR_WITHOUT_INPUT_INITIALIZERS)
    return arrays
