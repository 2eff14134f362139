"""Which attention a runtime executed for an attention graph, read from its executed layers (ONNX
Runtime's optimized graph, OpenVINO's runtime model), never assumed from the form it was given: one
fused attention kernel, or the products and the softmax as separate layers."""

from __future__ import annotations

import re
from collections.abc import Iterable

import onnx

from dbench.executed import ExecutedGraph, ExecutedLayer

FUSED = "fused"
UNFUSED = "unfused"
ATTENTION_LAYERS = frozenset(
    {"Attention", "MultiHeadAttention", "GroupQueryAttention", "ScaledAttn", "ScaledDotProductAttention"}
)
"""Layer types that are one attention kernel: ONNX's and ONNX Runtime's ops, OpenVINO's CPU SDPA node."""
MERGED_LAYERS = frozenset({"Subgraph"})
"""Layer types that merge several ops into one kernel (OpenVINO's snippets): which ops, its sources say."""
MADE_OP = re.compile(r"^([A-Za-z]+)_\d+$")
"""How OpenVINO names an op its own transformations made (`Softmax_3827`, `ScaledDotProductAttention_73`):
its type, then a number. Such a source names no node of the model, but its type."""


def model_op_types(model: onnx.ModelProto) -> dict[str, str]:
    """Each node's name and output names -> its op type: what a runtime's layer sources name."""
    types: dict[str, str] = {}
    for node in model.graph.node:
        for name in (node.name, *node.output):
            if name:
                types[name] = node.op_type
    return types


def _source_type(source: str, op_types: dict[str, str]) -> str | None:
    """The op type of a layer's source: the model's node's, else the type an OpenVINO-made name carries."""
    if source in op_types:
        return op_types[source]
    made = MADE_OP.match(source)
    return made.group(1) if made else None


def _merged_ops(layer: ExecutedLayer, op_types: dict[str, str]) -> list[str]:
    """The op types a layer says it was made from, in order, once each."""
    return list(dict.fromkeys(t for t in (_source_type(s, op_types) for s in layer.sources) if t))


def _label(layer: ExecutedLayer, op_types: dict[str, str]) -> str:
    """`Softmax`, or for a layer merging the model's ops `Subgraph[Mul,Add,Softmax,MatMul]`."""
    merged = _merged_ops(layer, op_types) if layer.op_type in MERGED_LAYERS else []
    return f"{layer.op_type}[{','.join(merged)}]" if merged else layer.op_type


def _op(layer: ExecutedLayer) -> str:
    """The layer's type without its domain (ONNX Runtime's `com.microsoft:MultiHeadAttention`)."""
    return layer.op_type.rsplit(":", 1)[-1]


def _is_fused(layer: ExecutedLayer, op_types: dict[str, str]) -> bool:
    """One kernel computing the softmax with the products: an attention layer, or a merged layer made
    from a Softmax and a MatMul or attention op."""
    if _op(layer) in ATTENTION_LAYERS:
        return True
    merged = set(_merged_ops(layer, op_types)) if layer.op_type in MERGED_LAYERS else set()
    return "Softmax" in merged and bool(merged & (ATTENTION_LAYERS | {"MatMul"}))


def _computing(layers: Iterable[ExecutedLayer]) -> list[ExecutedLayer]:
    return [layer for layer in layers if layer.executes and not layer.moves_data]


def executed_attention(graph: ExecutedGraph, op_types: dict[str, str]) -> str:
    """`fused: <layers>` when one executed layer is the attention kernel, else `unfused: <layers>`: the
    layers that run per call (data moves left out), e.g. `unfused: FusedMatMul + Add + Softmax + MatMul`
    (ONNX Runtime on an exporter's subgraph) or `fused: Subgraph[Mul,Add,Softmax,MatMul]` (OpenVINO)."""
    layers = _computing(graph.layers)
    verdict = FUSED if any(_is_fused(layer, op_types) for layer in layers) else UNFUSED
    return f"{verdict}: {' + '.join(_label(layer, op_types) for layer in layers)}"
