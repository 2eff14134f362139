"""ONNX Runtime's executed graph: the optimized model it saves (`SessionOptions.optimized_model_filepath`)
read as executed layers. Its node names are what the profiler reports; ONNX Runtime derives them from
the model's names (`conv1` kept, `<node>/MatMulAddFusion`, `<node>_token_3` for a node it rebuilt,
`<tensor>_nchwc` for a convolution moved to its blocked NCHWc layout), and keeps the model's tensor
names wherever a value is still the model's. Imports onnx only (ONNX Runtime itself, in the worker,
only to read its NCHWc block)."""

from __future__ import annotations

import re
from typing import Any

import onnx
from onnx import helper

from dbench.executed import CHANNELS_LAST, NCHWC, NCHWC_DOMAIN, ExecutedGraph, ExecutedLayer

DERIVED_SUFFIX = re.compile(r"(_token_\d+|_nchwc)$")
"""Suffixes ONNX Runtime appends to the name it derives a new node's name from."""
MOVES_DATA = {
    "Reshape",
    "Transpose",
    "Squeeze",
    "Unsqueeze",
    "Flatten",
    "Identity",
    "Cast",
    "ReorderInput",
    "ReorderOutput",
    "MemcpyToHost",
    "MemcpyFromHost",
}
"""Ops whose output holds their first input's values (in another layout, shape, type or memory)."""
CHANNELS_LAST_OPS = {"com.microsoft:NhwcMaxPool"}
"""Ops ONNX Runtime's NHWC transformer puts on channels-last tensors only after a layer that already
makes them (a uint8 MaxPool after an NHWC QLinearConv): the same nodes alone get its generic NCHW kernel
(ResNet-18 int8's stem pool: 5.1 ms alone against 0.08 ms as NhwcMaxPool, docs/predict.md), so such a
layer is timed as itself."""
COPIES = {f"{NCHWC_DOMAIN}:ReorderInput", f"{NCHWC_DOMAIN}:ReorderOutput", "Transpose", "Cast"}
"""Ops that copy their one input into another layout or type: where ONNX Runtime inserts one between the
model's layers (its NCHWc reorders, the NHWC transformer's Transposes), it is timed as a unit of its own
(dbench.units.graph.inserted_model), so their attributes are reported. Views (Reshape, Squeeze, ...)
are not: ONNX Runtime runs them in place inside the model, where alone they would be copied out."""


def derived_names(name: str) -> tuple[str, ...]:
    """The name and the names ONNX Runtime derived it from: `relu_3_nchwc` -> (`relu_3_nchwc`, `relu_3`)."""
    names = [name]
    while DERIVED_SUFFIX.search(names[-1]):
        names.append(DERIVED_SUFFIX.sub("", names[-1]))
    return tuple(dict.fromkeys(n for n in names if n))


def _attribute(value: Any) -> Any:
    """An ONNX attribute value as JSON keeps it (a run header stores the layers): bytes as text, lists as tuples."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, (list, tuple)):
        return tuple(_attribute(v) for v in value)
    return value


def nchwc_block_size() -> int:
    """ONNX Runtime's NCHWc block on this CPU (MlasNchwcGetBlockSize, which it does not expose), as its
    own ReorderInput gives it: the channels it pads 4 channels to."""
    import numpy as np
    import onnxruntime as ort

    node = helper.make_node("ReorderInput", ["x"], ["y"], domain=NCHWC_DOMAIN)
    graph = helper.make_graph(
        [node],
        "block",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4, 1, 1])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(NCHWC_DOMAIN, 1)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": np.zeros((1, 4, 1, 1), dtype=np.float32)})
    return int(y.shape[1])


def _layer(node: onnx.NodeProto, block: int) -> ExecutedLayer:
    op_type = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"
    channels_last = op_type in CHANNELS_LAST_OPS
    reported = channels_last or op_type in COPIES
    attributes = tuple((a.name, _attribute(helper.get_attribute_value(a))) for a in node.attribute) if reported else ()
    layout = (
        CHANNELS_LAST
        if channels_last
        else f"{NCHWC}{block}"
        if node.domain == NCHWC_DOMAIN and op_type in COPIES
        else ""
    )
    return ExecutedLayer(
        name=node.name,
        op_type=op_type,
        sources=derived_names(node.name),
        inputs=tuple(node.input),
        outputs=tuple(node.output),
        moves_data=node.op_type in MOVES_DATA,
        layout=layout,
        attributes=attributes,
    )


def executed_graph(optimized: onnx.ModelProto, runtime: str, block: int | None = None) -> ExecutedGraph:
    """The optimized model's main-graph nodes, in order, as executed layers named by their node names;
    its NCHWc reorders carry the block (`block`, else asked of ONNX Runtime where it made any)."""
    if block is None:
        block = nchwc_block_size() if any(node.domain == NCHWC_DOMAIN for node in optimized.graph.node) else 0
    return ExecutedGraph(runtime, tuple(_layer(node, block) for node in optimized.graph.node), tensor_names=True)
