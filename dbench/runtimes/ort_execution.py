"""ONNX Runtime's executed graph: the optimized model it saves (`SessionOptions.optimized_model_filepath`)
read as executed layers. Its node names are what the profiler reports; ONNX Runtime derives them from
the model's names (`conv1` kept, `<node>/MatMulAddFusion`, `<node>_token_3` for a node it rebuilt,
`<tensor>_nchwc` for a convolution moved to its blocked NCHWc layout), and keeps the model's tensor
names wherever a value is still the model's. Imports onnx only."""

from __future__ import annotations

import re

import onnx

from dbench.executed import ExecutedGraph, ExecutedLayer

DERIVED_SUFFIX = re.compile(r"(_token_\d+|_nchwc)$")
"""Suffixes ONNX Runtime appends to the name it derives a new node's name from."""
MOVES_DATA = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Cast", "ReorderInput",
              "ReorderOutput", "MemcpyToHost", "MemcpyFromHost"}
"""Ops whose output holds their first input's values (in another layout, shape, type or memory)."""


def derived_names(name: str) -> tuple[str, ...]:
    """The name and the names ONNX Runtime derived it from: `relu_3_nchwc` -> (`relu_3_nchwc`, `relu_3`)."""
    names = [name]
    while DERIVED_SUFFIX.search(names[-1]):
        names.append(DERIVED_SUFFIX.sub("", names[-1]))
    return tuple(dict.fromkeys(n for n in names if n))


def executed_graph(optimized: onnx.ModelProto, runtime: str) -> ExecutedGraph:
    """The optimized model's main-graph nodes, in order, as executed layers named by their node names."""
    layers = tuple(ExecutedLayer(name=node.name, op_type=node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}",
                                 sources=derived_names(node.name), inputs=tuple(node.input), outputs=tuple(node.output),
                                 moves_data=node.op_type in MOVES_DATA)
                   for node in optimized.graph.node)
    return ExecutedGraph(runtime, layers, tensor_names=True)
