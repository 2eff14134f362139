"""Weights as constants (`--weights const`): which feeds are constant weights and which are fed per
call, and, for runtimes that need one self-contained graph, the graph with the weights inside."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from onnx import numpy_helper

from dbench.gen.graph import GraphSpec


def embed_weights(model: onnx.ModelProto, constants: Mapping[str, np.ndarray]) -> onnx.ModelProto:
    """A copy of `model` whose inputs named in `constants` are initializers holding those values
    (a copy through protobuf: slow for multi-GB weights, so runtimes take `constants` in memory where they can)."""
    embedded = onnx.ModelProto()
    embedded.CopyFrom(model)
    graph = embedded.graph
    kept = [i for i in graph.input if i.name not in constants]
    del graph.input[:]
    graph.input.extend(kept)
    for name, value in constants.items():
        graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    return embedded


def split_feeds(
    spec: GraphSpec, feeds: dict[str, np.ndarray], weights: str
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(constants, per-call feeds): the weights and the rest for `const`; nothing and everything for `input`."""
    if weights == "input":
        return {}, dict(feeds)
    names = {t.name for t in spec.weights}
    return ({k: v for k, v in feeds.items() if k in names}, {k: v for k, v in feeds.items() if k not in names})
