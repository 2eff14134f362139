"""The GraphSpec of a foreign model: inputs from its declared types and bound shapes, each drawn as
what reads it needs (dbench.sources.model_feeds), outputs from shape inference, precision from its
kernels. Inputs its exporter stripped of weight data (metadata `dbench.random_weights`) are weights
drawn in the recorded range, so the runner makes them constants as for dbench's own graphs."""

from __future__ import annotations

import json

import onnx
from onnx import TensorProto

from dbench.errors import UnsupportedError
from dbench.frommodel.dims import graph_inputs
from dbench.frommodel.model_file import LoadedModel
from dbench.frommodel.walk import Extraction
from dbench.gen.feeds import default_seed
from dbench.gen.graph import MODEL_FAMILY, GraphSpec, TensorSpec
from dbench.gen.precision import ONNX_TYPES
from dbench.sources.model_feeds import bounds, uses

FAMILY = MODEL_FAMILY
RANDOM_WEIGHTS = "dbench.random_weights"
"""Model metadata key: JSON {input name: [low, high]} for weights stored without data (drawn at run time)."""
DTYPE_NAMES = {onnx_type: name for name, onnx_type in ONNX_TYPES.items()}
PRECISION_OF = {
    TensorProto.FLOAT: "fp32",
    TensorProto.FLOAT16: "fp16",
    TensorProto.BFLOAT16: "bf16",
    TensorProto.DOUBLE: "fp64",
}


def random_weights(model: onnx.ModelProto) -> dict[str, tuple[float, float]]:
    for prop in model.metadata_props:
        if prop.key == RANDOM_WEIGHTS:
            return {name: (float(low), float(high)) for name, (low, high) in json.loads(prop.value).items()}
    return {}


def _shape(value: onnx.ValueInfoProto) -> tuple[int, ...]:
    return tuple(d.dim_value if d.HasField("dim_value") else 0 for d in value.type.tensor_type.shape.dim)


def _dtype(value: onnx.ValueInfoProto, what: str) -> str:
    if not value.type.HasField("tensor_type"):
        kind = value.type.WhichOneof("value") or "untyped"
        raise UnsupportedError(
            f"{what} {value.name!r} is a {kind.replace('_type', '')}, not a tensor: dbench feeds and "
            "checks tensors only"
        )
    elem = value.type.tensor_type.elem_type
    if elem not in DTYPE_NAMES:
        raise UnsupportedError(
            f"{what} {value.name!r} has type {TensorProto.DataType.Name(elem).lower()}; "
            f"dbench feeds and checks {', '.join(DTYPE_NAMES.values())}"
        )
    return DTYPE_NAMES[elem]


def _value_shapes(model: onnx.ModelProto):
    """name -> static shape (0 for an open dimension) of every typed value of the inferred model."""
    shapes = {
        v.name: _shape(v)
        for v in [*model.graph.input, *model.graph.value_info, *model.graph.output]
        if v.type.HasField("tensor_type")
    }
    shapes.update({t.name: tuple(t.dims) for t in model.graph.initializer})
    return shapes.get


def model_precision(model: onnx.ModelProto, extraction: Extraction) -> str:
    """The precision of the kernels that carry most of the model's FLOPs (an int8 model is int8 even
    though its scales are floats); without kernels, the floating type most of its values have (fp32
    when none is floating)."""
    flops: dict[str, int] = {}
    for mk in extraction.kernels:
        flops[mk.precision] = flops.get(mk.precision, 0) + mk.kernel.flops() * mk.copies
    if flops:
        return max(flops, key=flops.get)
    counts: dict[str, int] = {}
    types = [t.data_type for t in model.graph.initializer] + [
        v.type.tensor_type.elem_type for v in [*model.graph.input, *model.graph.value_info, *model.graph.output]
    ]
    for elem in types:
        if elem in PRECISION_OF:
            counts[PRECISION_OF[elem]] = counts.get(PRECISION_OF[elem], 0) + 1
    return max(counts, key=counts.get) if counts else "fp32"


def foreign_spec(loaded: LoadedModel, extraction: Extraction, graph_id: str) -> GraphSpec:
    """The spec of a whole model as one graph; `flops` counts the kernels dbench recognised in it.
    UnsupportedError names an input or output dbench cannot draw or check."""
    model = loaded.model
    weights = random_weights(model)
    reads = uses(model.graph)
    shape_of = _value_shapes(loaded.shapes)
    inputs = []
    for value in graph_inputs(model):
        dtype = _dtype(value, "input")
        role = "weight" if value.name in weights else "activation"
        low, high = weights.get(value.name) or bounds(value.name, value.type.tensor_type.elem_type, reads, shape_of)
        inputs.append(TensorSpec(value.name, _shape(value), dtype, role, low, high))
    outputs = tuple(TensorSpec(v.name, _shape(v), _dtype(v, "output"), "output") for v in model.graph.output)
    flops = sum(k.kernel.flops() * k.copies for k in extraction.kernels)
    ops = sorted({n.op_type for n in model.graph.node})
    return GraphSpec(
        id=graph_id,
        kernel_id=loaded.name,
        family=FAMILY,
        op=FAMILY,
        params={"file": loaded.path.name, "nodes": len(model.graph.node)},
        suites=("user",),
        apps=(loaded.name,),
        pass_name="fwd",
        form=FAMILY,
        precision=model_precision(model, extraction),
        flops=flops,
        flops_executed=flops,
        inputs=tuple(inputs),
        outputs=outputs,
        seed=default_seed(graph_id),
        attrs={
            "ops": ops,
            "kernels": len(extraction.kernels),
            "kernel_nodes": sum(k.copies for k in extraction.kernels),
        },
    )
