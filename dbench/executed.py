"""What a runtime says it executes for a model: its executed layers (ONNX Runtime's optimized graph,
OpenVINO's runtime model), each with the names of the model it came from. A low module (standard
library only): the runtime adapters make it in the worker, the parent cuts the model into units with it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CHANNELS_LAST = "NHWC"
"""A layer's `layout` when it reads and writes channels-last copies of the model's NCHW tensors."""
NCHWC = "NCHWc"
"""A layer's `layout` where one side of it is ONNX Runtime's blocked NCHWc layout, followed by the block
(`NCHWc16`: the channels in blocks of 16, the last one padded with zeros; the CPU's block, which ONNX
Runtime's own reorder reports): its ReorderInput and ReorderOutput."""
NCHWC_DOMAIN = "com.microsoft.nchwc"
"""ONNX Runtime's domain of its NCHWc layers."""
NCHWC_BLOCK_KEY = "dbench.nchwc_block"
"""A graph's metadata key holding the NCHWc block its reorders were cut with (the reference check reads it)."""
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
    after an NHWC QLinearConv), NCHWC and its block where one side is the blocked NCHWc layout.
    `attributes`: its node's ONNX attributes as (name, value) pairs, where the layer itself can be
    timed (a channels-last layer: dbench.units.graph.executed_model; a layer the runtime inserts that
    copies its input into another layout or type: dbench.units.graph.inserted_model)."""

    name: str
    op_type: str
    sources: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    moves_data: bool = False
    executes: bool = True
    layout: str = ""
    attributes: tuple[tuple[str, Any], ...] = ()


def nchwc_block(layout: str) -> int | None:
    """The NCHWc block of a layer's `layout` (`NCHWc16` -> 16), None for any other layout."""
    return int(layout[len(NCHWC) :]) if layout.startswith(NCHWC) and layout[len(NCHWC) :].isdigit() else None


@dataclass(frozen=True)
class ExecutedGraph:
    """Every layer the runtime built for a model, in its execution order. `tensor_names`: the layers'
    inputs and outputs are tensor names of the model where the runtime kept them (ONNX Runtime), not
    only the runtime's own edge ids (OpenVINO)."""

    runtime: str
    layers: tuple[ExecutedLayer, ...]
    tensor_names: bool = False
