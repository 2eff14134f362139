"""How each input of a foreign model is drawn, from what reads it: data of 8-bit quantised kernels over
the type's whole range, zero points around its middle, scales positive, indices within the axis they
index, other integers in [1, 4] (never 0: a divisor), floats in [-1, 1]. An input whose values set a
shape, a size or an axis (Reshape's shape, TopK's k, CumSum's axis), directly or through the ops that
pass values on (Slice, Concat, Cast...), has no value dbench can invent: the model is unsupported, with
that reason, until the input is made a constant."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from dbench.errors import UnsupportedError

SCALE_RANGE = (2.0**-8, 2.0**-5)
"""Quantisation scales: an input in [-1, 1] then spans 32 to 256 steps of the 8-bit grid."""
FLOAT_RANGE = (-1.0, 1.0)
INTEGER_RANGE = (1, 4)
"""Integers with no recognised use: small, positive (no division by zero, no negative size)."""
BOOL_RANGE = (0, 1)
FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE)

# (op, input index) pairs, by role. The domain is the standard one ("" or "ai.onnx").
QUANTISED_DATA = {
    ("DequantizeLinear", 0),
    ("QLinearConv", 0),
    ("QLinearConv", 3),
    ("QLinearMatMul", 0),
    ("QLinearMatMul", 3),
    ("MatMulInteger", 0),
    ("MatMulInteger", 1),
    ("ConvInteger", 0),
    ("ConvInteger", 1),
}
ZERO_POINTS = {
    ("QuantizeLinear", 2),
    ("DequantizeLinear", 2),
    ("QLinearConv", 2),
    ("QLinearConv", 5),
    ("QLinearConv", 7),
    ("QLinearMatMul", 2),
    ("QLinearMatMul", 5),
    ("QLinearMatMul", 7),
    ("MatMulInteger", 2),
    ("MatMulInteger", 3),
    ("ConvInteger", 2),
    ("ConvInteger", 3),
}
SCALES = {
    ("QuantizeLinear", 1),
    ("DequantizeLinear", 1),
    ("QLinearConv", 1),
    ("QLinearConv", 4),
    ("QLinearConv", 6),
    ("QLinearMatMul", 1),
    ("QLinearMatMul", 4),
    ("QLinearMatMul", 6),
}
INDICES = {
    ("Gather", 1): "axis",
    ("GatherElements", 1): "axis",
    ("ScatterElements", 1): "axis",
    ("GatherND", 1): "nd",
    ("ScatterND", 1): "nd",
    ("ArrayFeatureExtractor", 1): "last",
    ("RoiAlign", 2): "axis",
}
"""Index inputs: bounded by the data's size along `axis` (default 0; RoiAlign's batch indices: X's
batch), its last axis, or for the ND forms by the smallest of the axes the last index dimension
addresses. An index out of bounds is an error to one runtime and a crash to another."""
SHAPE_ONLY = {"Shape", "Size"}
"""Ops that read only a tensor's shape: its values go no further."""
PASS_THROUGH = {"Cast", "Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten"}
"""Ops that hand their first input's values on unchanged: an index cast to int64 is still that index."""
DOMAINS = ("", "ai.onnx", "ai.onnx.ml")
SETS_SHAPE = {
    ("Reshape", 1),
    ("Expand", 1),
    ("Tile", 1),
    ("ConstantOfShape", 0),
    ("Range", 0),
    ("Range", 1),
    ("Range", 2),
    ("Slice", 1),
    ("Slice", 2),
    ("Slice", 3),
    ("Slice", 4),
    ("Pad", 1),
    ("Pad", 3),
    ("Resize", 3),
    ("TopK", 1),
    ("Split", 1),
    ("Squeeze", 1),
    ("Unsqueeze", 1),
    ("OneHot", 1),
    ("ReduceSum", 1),
    ("ReduceMean", 1),
    ("ReduceMax", 1),
    ("ReduceMin", 1),
    ("ReduceProd", 1),
    ("ReduceL1", 1),
    ("ReduceL2", 1),
    ("ReduceLogSum", 1),
    ("ReduceLogSumExp", 1),
    ("ReduceSumSquare", 1),
    ("CumSum", 1),
    ("CumProd", 1),
    ("MaxUnpool", 2),
    ("Loop", 0),
    ("Loop", 1),
    ("CenterCropPad", 1),
    ("Col2Im", 1),
    ("Col2Im", 2),
    ("DFT", 1),
    ("DFT", 2),
    ("STFT", 1),
    ("STFT", 3),
    ("NonMaxSuppression", 2),
    ("BlackmanWindow", 0),
    ("HannWindow", 0),
    ("HammingWindow", 0),
    ("MelWeightMatrix", 0),
    ("MelWeightMatrix", 1),
    ("MelWeightMatrix", 2),
    ("AffineGrid", 1),
    ("ReverseSequence", 1),
    ("SplitToSequence", 1),
    ("Upsample", 1),
    ("Resize", 2),
}
"""Inputs whose values set an output's shape or size (or the trip count of a loop), floats included
(Resize's and Upsample's scales)."""


BODY = -1
"""The input index of a Use by a control-flow node whose body reads the tensor."""


@dataclass(frozen=True)
class Use:
    """One place a tensor is read: the reading node's op, the input's position, and the node."""

    op: str
    index: int
    node: onnx.NodeProto


def uses(graph: onnx.GraphProto) -> dict[str, list[Use]]:
    """Every tensor name -> where it is read, subgraphs included (a Loop body reads outer names)."""
    found: dict[str, list[Use]] = {}

    def walk(g: onnx.GraphProto) -> set[str]:
        """Register g's readers; return every name read in g or below it."""
        read: set[str] = set()
        for node in g.node:
            if node.domain in DOMAINS:
                for index, name in enumerate(node.input):
                    if name:
                        found.setdefault(name, []).append(Use(node.op_type, index, node))
            read.update(node.input)
            inner: set[str] = set()
            for attr in node.attribute:
                for sub in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
                    inner |= walk(sub)
            for name in inner - {""}:  # a body's result leaves through the node's outputs, not by name
                found.setdefault(name, []).append(Use(node.op_type, BODY, node))
            read |= inner
        return read

    walk(graph)
    return found


def _index_bound(use: Use, shape_of) -> int | None:
    """The exclusive upper bound of an index input at `use`: the data's size along the indexed axis."""
    data = shape_of(use.node.input[0])
    if not data:
        return None
    rule = INDICES[(use.op, use.index)]
    if rule == "last":
        return data[-1] if data[-1] > 0 else None
    if rule == "axis":
        axis = next((a.i for a in use.node.attribute if a.name == "axis"), 0)
        return data[axis] if -len(data) <= axis < len(data) and data[axis] > 0 else None
    batch = next((a.i for a in use.node.attribute if a.name == "batch_dims"), 0)
    sizes = [d for d in data[batch:] if d > 0]
    return min(sizes) if sizes else None


def reached(name: str, everywhere: dict[str, list[Use]]) -> list[tuple[Use, bool]]:
    """Every place the values of `name` are read, following them through the ops they flow into (not
    through Shape or Size, which read only the shape), each with whether only PASS_THROUGH ops lie
    between (`direct`: the values arrive unchanged)."""
    found: list[tuple[Use, bool]] = []
    seen, todo = {name}, [(name, True)]
    while todo:
        tensor, direct = todo.pop()
        for use in everywhere.get(tensor, []):
            found.append((use, direct))
            if use.op in SHAPE_ONLY:
                continue
            onward = direct and use.op in PASS_THROUGH and use.index == 0
            for out in use.node.output:
                if out and out not in seen:
                    seen.add(out)
                    todo.append((out, onward))
    return found


def _integer_range(elem: int) -> tuple[int, int]:
    info = np.iinfo(onnx.helper.tensor_dtype_to_np_dtype(elem))
    return int(info.min), int(info.max)


def bounds(name: str, elem: int, everywhere: dict[str, list[Use]], shape_of) -> tuple[float, float]:
    """[low, high] to draw input `name` of ONNX element type `elem` in, from the places it is read
    (`everywhere`: every tensor's readers); UnsupportedError when its values set a shape, size or axis."""
    flows = reached(name, everywhere)
    reads = [use for use, direct in flows if direct]
    keys = {(u.op, u.index) for u in reads}
    for use, direct in flows:
        if (use.op, use.index) in SETS_SHAPE:
            raise UnsupportedError(
                f"input {name!r} sets a shape, size or axis ({use.op} input {use.index}): dbench cannot "
                "draw it; make it a constant (an initializer) in the model"
            )
        if (use.op, use.index) in INDICES and not direct:
            raise UnsupportedError(
                f"input {name!r} becomes indices ({use.op} input {use.index}) through other ops: dbench "
                "cannot tell their bounds; make it a constant (an initializer) in the model"
            )
    if elem == onnx.TensorProto.BOOL:
        return BOOL_RANGE
    if elem in FLOAT_TYPES:
        return SCALE_RANGE if keys & SCALES else FLOAT_RANGE
    low, high = _integer_range(elem)
    if keys & QUANTISED_DATA:
        return low, high
    if keys & ZERO_POINTS:
        quarter = (high - low + 1) // 4
        return low + quarter, high - quarter
    index_bounds = [_index_bound(u, shape_of) for u in reads if (u.op, u.index) in INDICES]
    if index_bounds:
        known = [b for b in index_bounds if b]
        return 0, (min(known) - 1 if known else 1)
    return max(low, INTEGER_RANGE[0]), min(high, INTEGER_RANGE[1])
