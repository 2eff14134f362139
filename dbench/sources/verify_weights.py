"""Weights for verification only. A structure-only model (its kernels' weights filled with one value,
by ConstantOfShape or stored so, as onnx's `light_*` networks are) computes near-uniform outputs that
a runtime matches however wrong its kernels: every output channel of a convolution is the same. For
verification such tensors are replaced by seeded random ones, in ranges that keep a deep network's
values finite and varied; the timed graph keeps its own, and the runtime runs the copy separately."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from dbench.frommodel.dims import FIRST_IR_WITHOUT_INPUT_INITIALIZERS
from dbench.gen.graph import GraphSpec, TensorSpec
from dbench.sources.model_feeds import INDICES, SCALES, SETS_SHAPE, ZERO_POINTS, Use, reached, uses

FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE)
MIN_ELEMENTS = 2
"""A tensor of one element is a scalar constant, not a weight filled with one value."""
KERNEL_WEIGHTS = {("Conv", 1), ("ConvTranspose", 1), ("Gemm", 0), ("Gemm", 1), ("MatMul", 0), ("MatMul", 1)}
"""Where a constant-filled tensor makes the model structure-only: a kernel's weight."""
NOT_DRAWN = SETS_SHAPE | set(INDICES) | SCALES | ZERO_POINTS | {("Pow", 1)}
"""Uses whose values must stay what they are: shapes, sizes, axes, indices, quantisation parameters, an
exponent (a random one turns negative bases into NaN)."""
SOFTMAX = ("Softmax", "LogSoftmax")


def _attr(node: onnx.NodeProto, name: str, default: int) -> int:
    return next((a.i for a in node.attribute if a.name == name), default)


def _constant_value(node: onnx.NodeProto) -> float:
    value = next((a.t for a in node.attribute if a.name == "value"), None)
    return float(numpy_helper.to_array(value).reshape(-1)[0]) if value is not None else 0.0


def _filled(model: onnx.ModelProto) -> dict[str, tuple[tuple[int, ...], int, float]]:
    """Float tensors of the main graph that hold one value throughout, by name -> (shape, element
    type, value): ConstantOfShape outputs whose shape is a constant, and initializers (not fed inputs)
    of MIN_ELEMENTS or more. A model with its own weights costs a look at each weight's first values."""
    graph = model.graph
    inputs = {i.name for i in graph.input}
    stored = {
        t.name: t for t in graph.initializer if t.name not in inputs and t.data_location != onnx.TensorProto.EXTERNAL
    }
    constants = {
        node.output[0]: a.t
        for node in graph.node
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx")
        for a in node.attribute
        if a.name == "value"
    }
    found = {}
    for name, tensor in stored.items():
        if tensor.data_type in FLOAT_TYPES and math.prod(tensor.dims) >= MIN_ELEMENTS:
            flat = numpy_helper.to_array(tensor).reshape(-1)
            if np.all(flat[:64] == flat[0]) and np.all(flat == flat[0]):
                found[name] = (tuple(tensor.dims), tensor.data_type, float(flat[0]))
    for node in graph.node:
        shape_tensor = stored.get(node.input[0]) or constants.get(node.input[0]) if node.input else None
        if node.op_type != "ConstantOfShape" or node.domain not in ("", "ai.onnx") or shape_tensor is None:
            continue
        value = next((a.t for a in node.attribute if a.name == "value"), None)
        elem = value.data_type if value is not None else onnx.TensorProto.FLOAT
        shape = tuple(int(d) for d in numpy_helper.to_array(shape_tensor).reshape(-1))
        if elem in FLOAT_TYPES and math.prod(shape) >= MIN_ELEMENTS:
            found[node.output[0]] = (shape, elem, _constant_value(node))
    return found


def _fan_in(use: Use, shape: tuple[int, ...]) -> int:
    """The inputs each output of the kernel sums over, read from the weight's shape."""
    if use.op in ("Conv", "ConvTranspose"):
        return math.prod(shape[1:]) or 1
    if use.op == "Gemm":
        transposed = _attr(use.node, "transB" if use.index == 1 else "transA", 0)
        return shape[1 if transposed == (use.index == 1) else 0] if len(shape) == 2 else 1
    if len(shape) < 2:
        return shape[0] if shape else 1
    return shape[-2] if use.index == 1 else shape[-1]


def _range(direct: list[Use], shape: tuple[int, ...], value: float) -> tuple[float, float]:
    """Where to draw a replaced tensor: a kernel's weight symmetric with variance 2 / fan-in (He: a
    ReLU network's activations keep their scale through any depth); any other tensor around its own
    value, keeping its sign (a variance stays positive, a scale near 1), or in [-0.5, 0.5] for zeros."""
    kernel = next((use for use in direct if (use.op, use.index) in KERNEL_WEIGHTS), None)
    if kernel is not None:
        bound = math.sqrt(6.0 / _fan_in(kernel, shape))
        return -bound, bound
    if value == 0.0:
        return -0.5, 0.5
    return tuple(sorted((0.5 * value, 1.5 * value)))


@dataclass(frozen=True)
class ForVerification:
    """The graph verification runs instead of the timed one, and what differs: `replaced`, the
    constant-filled tensors drawn at random (in order); `exposed`, values added as outputs (the inputs
    of a Softmax whose output is the model's: a softmax of large logits is one-hot, of small ones
    uniform, and either hides the network's errors, which its logits show)."""

    model: onnx.ModelProto
    spec: GraphSpec
    replaced: tuple[str, ...] = ()
    exposed: tuple[str, ...] = ()


def _exposed_logits(graph: onnx.GraphProto) -> list[str]:
    outputs = {o.name for o in graph.output}
    return [
        node.input[0]
        for node in graph.node
        if node.op_type in SOFTMAX
        and node.domain in ("", "ai.onnx")
        and node.output[0] in outputs
        and node.input[0] not in outputs
    ]


def for_verification(model: onnx.ModelProto, spec: GraphSpec) -> ForVerification:
    """For a structure-only model, a copy whose constant-filled tensors (every one whose values set no
    shape, index, quantisation parameter or exponent) are random initializers seeded by the spec's
    seed, with its output Softmax's logits exposed; any other model as it is."""
    filled = _filled(model)
    everywhere = uses(model.graph)
    flows = {name: reached(name, everywhere) for name in filled}
    if not any((use.op, use.index) in KERNEL_WEIGHTS for found in flows.values() for use, direct in found if direct):
        return ForVerification(model, spec)
    replace = sorted(
        name for name, found in flows.items() if not any((use.op, use.index) in NOT_DRAWN for use, _ in found)
    )
    rng = np.random.default_rng(spec.seed)
    drawn = {}
    for name in replace:
        shape, elem, value = filled[name]
        low, high = _range([use for use, direct in flows[name] if direct], shape, value)
        data = rng.uniform(low, high, size=shape).astype(helper.tensor_dtype_to_np_dtype(elem))
        drawn[name] = numpy_helper.from_array(data, name)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    keep = [node for node in graph.node if not (node.op_type == "ConstantOfShape" and node.output[0] in drawn)]
    del graph.node[:]
    graph.node.extend(keep)
    read = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    kept = [
        t
        for t in graph.initializer
        if t.name not in drawn and (t.name in read or t.name in {i.name for i in graph.input})
    ]
    del graph.initializer[:]
    graph.initializer.extend(kept + [drawn[name] for name in replace])
    copy.ir_version = max(copy.ir_version, FIRST_IR_WITHOUT_INPUT_INITIALIZERS)  # initializers that no input lists
    exposed = _exposed_logits(graph)
    dtype = {t.name: t.dtype for t in spec.outputs}
    extra = []
    for name in exposed:
        graph.output.append(onnx.ValueInfoProto(name=name))
        producer_output = next(
            node.output[0] for node in graph.node if node.input[:1] == [name] and node.op_type in SOFTMAX
        )
        extra.append(TensorSpec(name, (), dtype.get(producer_output, "float32"), "output"))
    return ForVerification(
        copy, dataclasses.replace(spec, outputs=spec.outputs + tuple(extra)), tuple(replace), tuple(exposed)
    )
