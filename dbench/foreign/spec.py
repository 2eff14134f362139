"""The GraphSpec of a foreign model: inputs from its declared types and bound shapes, outputs from
shape inference; inputs its exporter stripped of weight data (metadata `dbench.random_weights`) are
weights drawn in the recorded range, so the runner makes them constants as for dbench's own graphs."""

from __future__ import annotations

import json

import onnx
from onnx import TensorProto

from dbench.errors import InputError
from dbench.frommodel.dims import graph_inputs
from dbench.frommodel.load import LoadedModel
from dbench.frommodel.walk import Extraction
from dbench.gen.feeds import default_seed
from dbench.gen.graph import GraphSpec, TensorSpec
from dbench.gen.precision import ONNX_TYPES

FAMILY = "model"
RANDOM_WEIGHTS = "dbench.random_weights"
"""Model metadata key: JSON {input name: [low, high]} for weights stored without data (drawn at run time)."""
DTYPE_NAMES = {onnx_type: name for name, onnx_type in ONNX_TYPES.items()}
INTEGER_RANGE = (0, 1)
"""Integer inputs (token ids, indices) are drawn from {0, 1}: valid for any table with two entries or more."""
PRECISION_OF = {TensorProto.FLOAT: "fp32", TensorProto.FLOAT16: "fp16", TensorProto.BFLOAT16: "bf16"}


def random_weights(model: onnx.ModelProto) -> dict[str, tuple[float, float]]:
    for prop in model.metadata_props:
        if prop.key == RANDOM_WEIGHTS:
            return {name: (float(low), float(high)) for name, (low, high) in json.loads(prop.value).items()}
    return {}


def _tensor(value: onnx.ValueInfoProto, role: str, bounds: tuple[float, float] | None, what: str) -> TensorSpec:
    tensor = value.type.tensor_type
    if tensor.elem_type not in DTYPE_NAMES:
        raise InputError(f"{what} {value.name!r} has type {TensorProto.DataType.Name(tensor.elem_type).lower()}; "
                          f"dbench feeds {', '.join(DTYPE_NAMES.values())}")
    shape = tuple(d.dim_value if d.HasField("dim_value") else 0 for d in tensor.shape.dim)
    dtype = DTYPE_NAMES[tensor.elem_type]
    low, high = bounds or (INTEGER_RANGE if dtype.startswith(("int", "uint")) else (-1.0, 1.0))
    return TensorSpec(value.name, shape, dtype, role, low, high)


def model_precision(model: onnx.ModelProto) -> str:
    """The floating type most of the model's weights and inputs are in (fp32 when none is floating)."""
    counts: dict[str, int] = {}
    types = [t.data_type for t in model.graph.initializer] + [i.type.tensor_type.elem_type for i in model.graph.input]
    for elem in types:
        if elem in PRECISION_OF:
            counts[PRECISION_OF[elem]] = counts.get(PRECISION_OF[elem], 0) + 1
    return max(counts, key=counts.get) if counts else "fp32"


def foreign_spec(loaded: LoadedModel, extraction: Extraction, graph_id: str) -> GraphSpec:
    """The spec of a whole model as one graph; `flops` counts the kernels dbench recognised in it."""
    model = loaded.model
    weights = random_weights(model)
    inputs = tuple(_tensor(v, "weight" if v.name in weights else "activation", weights.get(v.name), "input")
                   for v in graph_inputs(model))
    outputs = tuple(_tensor(v, "output", None, "output") for v in model.graph.output)
    flops = sum(k.kernel.flops() * k.copies for k in extraction.kernels)
    ops = sorted({n.op_type for n in model.graph.node})
    return GraphSpec(
        id=graph_id, kernel_id=loaded.name, family=FAMILY, op=FAMILY, params={"file": loaded.path.name, "nodes": len(model.graph.node)},
        suites=("user",), apps=(loaded.name,), pass_name="fwd", form=FAMILY, precision=model_precision(model),
        flops=flops, flops_executed=flops, inputs=inputs, outputs=outputs, seed=default_seed(graph_id),
        attrs={"ops": ops, "kernels": len(extraction.kernels), "kernel_nodes": sum(k.copies for k in extraction.kernels)},
    )
