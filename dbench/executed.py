"""What a runtime says it executes for a model: its executed layers (ONNX Runtime's optimized graph,
OpenVINO's runtime model), each with the names of the model it came from. A low module (standard
library only): the runtime adapters make it in the worker, the parent cuts the model into units with it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CHANNELS_LAST = "NHWC"
"""A layer's `layout` when it reads and writes channels-last copies of the model's NCHW tensors."""
TO_CHANNELS_LAST = (0, 2, 3, 1)
TO_CHANNELS_FIRST = (0, 3, 1, 2)
"""The axis permutations between NCHW and NHWC (numpy's transpose, ONNX's Transpose perm)."""


@dataclass(frozen=True)
class ExecutedLayer:
    """One layer as the runtime runs it, named as its profiler names it.

    `sources`: the names the runtime says the layer was made from (a node or tensor name of the model
    it was given, as ONNX Runtime derives its names or OpenVINO lists `originalLayersNames`); names
    that are neither are ignored by the cut. `inputs`/`outputs`: the tensors it reads and writes (the
    model's own tensor names where `ExecutedGraph.tensor_names`, else the runtime's own edge ids).
    `moves_data`: the layer only moves or converts its first input (a reorder, a reshape, a cast): its
    output holds the same values. `executes`: it runs on every call (False: constants, parameters,
    results). `layout`: CHANNELS_LAST where the layer reads and writes channels-last copies of the
    model's NCHW tensors, a layout only the model's other layers give it (ONNX Runtime's NhwcMaxPool
    after an NHWC QLinearConv); `attributes` then holds its node's ONNX attributes as (name, value)
    pairs, so that the layer itself can be timed (dbench.units.graph.executed_model)."""

    name: str
    op_type: str
    sources: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    moves_data: bool = False
    executes: bool = True
    layout: str = ""
    attributes: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class ExecutedGraph:
    """Every layer the runtime built for a model, in its execution order. `tensor_names`: the layers'
    inputs and outputs are tensor names of the model where the runtime kept them (ONNX Runtime), not
    only the runtime's own edge ids (OpenVINO)."""

    runtime: str
    layers: tuple[ExecutedLayer, ...]
    tensor_names: bool = False
