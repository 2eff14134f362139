"""Where an ONNX graph would read external tensor data from: every tensor in the graph, its
subgraphs and its Constant nodes, so a bundle can refuse a location that leaves it."""

from __future__ import annotations

from collections.abc import Iterator

import onnx


def _graph_tensors(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            if attribute.HasField("sparse_tensor"):
                yield attribute.sparse_tensor.values
                yield attribute.sparse_tensor.indices
            if attribute.HasField("g"):
                yield from _graph_tensors(attribute.g)
            for subgraph in attribute.graphs:
                yield from _graph_tensors(subgraph)


def external_locations(model: onnx.ModelProto) -> list[str]:
    """The `location` of every tensor stored as external data (empty for dbench's own graphs)."""
    locations = []
    for function in model.functions:
        for node in function.node:
            for attribute in node.attribute:
                if attribute.HasField("t") and attribute.t.data_location == onnx.TensorProto.EXTERNAL:
                    locations.extend(e.value for e in attribute.t.external_data if e.key == "location")
    for tensor in _graph_tensors(model.graph):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            entries = {e.key: e.value for e in tensor.external_data}
            locations.append(entries.get("location", ""))
    return locations
