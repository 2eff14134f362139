"""Weights as constants: turn a graph's weight inputs into initializers at load time (never on disk),
so a runtime can pre-pack them as a deployment would (`--weights const`)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from dbench.gen.graph import GraphSpec


def embed_weights(model: onnx.ModelProto, spec: GraphSpec, feeds: dict[str, np.ndarray]) -> onnx.ModelProto:
    """A copy of `model` whose weight inputs are initializers holding `feeds`' values."""
    names = {t.name for t in spec.weights}
    embedded = onnx.ModelProto()
    embedded.CopyFrom(model)
    graph = embedded.graph
    kept = [i for i in graph.input if i.name not in names]
    del graph.input[:]
    graph.input.extend(kept)
    for name in names:
        graph.initializer.append(numpy_helper.from_array(np.asarray(feeds[name]), name))
    return embedded


def activation_feeds(spec: GraphSpec, feeds: dict[str, np.ndarray], weights: str) -> dict[str, np.ndarray]:
    """The feeds a session still needs each call: all of them for `input`, all but weights for `const`."""
    if weights == "input":
        return dict(feeds)
    names = {t.name for t in spec.weights}
    return {k: v for k, v in feeds.items() if k not in names}
