"""Rotary position embedding graphs, the rotate-half form Llama, Qwen2 and Phi-3 export: for X of
[batch, heads, seq, head_dim] (queries or keys after their projection) and the tables COS and SIN of
[seq, head_dim] (the tokens' positions, computed once per forward pass and shared by every layer),
Y = X · COS + rotate_half(X) · SIN, rotate_half(X) = concat(-X[..., d/2:], X[..., :d/2]).

Forms: `subgraph`, Slice, Slice, Neg, Concat, Mul, Mul, Add, as exporters write it (the row's profile
says whether a runtime fused it); `op`, ONNX's RotaryEmbedding (opset 23); `ms`, ONNX Runtime's
com.microsoft RotaryEmbedding. The two operators take half-width caches, COS_CACHE and SIN_CACHE of
[seq, head_dim/2], and the tokens' positions POS [batch, seq] that index them; their reference rotates
by the gathered half tables repeated over both halves, as the operators define. The tables are drawn at
random like any activation: the graph is linear in them, so any values verify it.
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from dbench.catalog.kernels import RotaryKernel
from dbench.errors import UsageError
from dbench.gen.family import PlannedGraph, check_whole_outputs, float_tolerance, make_spec
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, make_model
from dbench.gen.options import GenOptions
from dbench.gen.precision import PRECISIONS
from dbench.gen.subgraph import at_opset, constant, float_dtype, with_domain

SUPPORTED_PRECISIONS = tuple(PRECISIONS)
ROW_SAMPLED = False
FORMS = ("subgraph", "op", "ms")
OP_OPSET = 23
"""ONNX's RotaryEmbedding."""
MS_DOMAIN = "com.microsoft"


def _operator(kernel: RotaryKernel, dt: str, form: str) -> tuple[tuple[TensorSpec, ...], list]:
    """The inputs and node of the `op` or `ms` form: X, the positions and the half-width caches."""
    shape = (kernel.batch, kernel.heads, kernel.seq, kernel.head_dim)
    cache = (kernel.seq, kernel.head_dim // 2)
    inputs = (
        TensorSpec("X", shape, dt, "activation"),
        TensorSpec("POS", (kernel.batch, kernel.seq), "int64", "activation", low=0, high=kernel.seq - 1),
        TensorSpec("COS_CACHE", cache, dt, "activation"),
        TensorSpec("SIN_CACHE", cache, dt, "activation"),
    )
    if form == "op":
        node = helper.make_node("RotaryEmbedding", ["X", "COS_CACHE", "SIN_CACHE", "POS"], ["Y"], interleaved=0)
    else:
        node = helper.make_node(
            "RotaryEmbedding", ["X", "POS", "COS_CACHE", "SIN_CACHE"], ["Y"], domain=MS_DOMAIN, interleaved=0
        )
    return inputs, [node]


def build(kernel: RotaryKernel, precision: str, pass_name: str = "fwd", form: str = "subgraph") -> Graph:
    """The rotate-half rotary embedding in `form` and a floating-point precision."""
    if form not in FORMS:
        raise UsageError(f"unknown rotary form {form!r}; valid: {', '.join(FORMS)}")
    dt = float_dtype(precision)
    if form != "subgraph":
        inputs, nodes = _operator(kernel, dt, form)
        outputs = (TensorSpec("Y", inputs[0].shape, dt, "output"),)
        spec = make_spec(
            kernel, precision, pass_name, form, inputs=inputs, outputs=outputs, flops_executed=kernel.flops()
        )
        model = make_model(spec.id, nodes, inputs, outputs, doc=f"rotary embedding {kernel.id}, {form} form")
        return Graph(spec, at_opset(model, OP_OPSET) if form == "op" else with_domain(model, MS_DOMAIN, 1))
    d, half = kernel.head_dim, kernel.head_dim // 2
    shape = (kernel.batch, kernel.heads, kernel.seq, d)
    inputs = (
        TensorSpec("X", shape, dt, "activation"),
        TensorSpec("COS", (kernel.seq, d), dt, "activation"),
        TensorSpec("SIN", (kernel.seq, d), dt, "activation"),
    )
    outputs = (TensorSpec("Y", shape, dt, "output"),)
    nodes = [
        constant("axis", [-1], dt),
        constant("zero", [0], dt),
        constant("half", [half], dt),
        constant("end", [d], dt),
        helper.make_node("Slice", ["X", "zero", "half", "axis"], ["x1"]),
        helper.make_node("Slice", ["X", "half", "end", "axis"], ["x2"]),
        helper.make_node("Neg", ["x2"], ["neg_x2"]),
        helper.make_node("Concat", ["neg_x2", "x1"], ["rotated"], axis=-1),
        helper.make_node("Mul", ["X", "COS"], ["x_cos"]),
        helper.make_node("Mul", ["rotated", "SIN"], ["rotated_sin"]),
        helper.make_node("Add", ["x_cos", "rotated_sin"], ["Y"]),
    ]
    spec = make_spec(kernel, precision, pass_name, form, inputs=inputs, outputs=outputs, flops_executed=kernel.flops())
    return Graph(spec, make_model(spec.id, nodes, inputs, outputs, doc=f"rotary embedding {kernel.id}"))


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray], rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """float64 X · COS + rotate_half(X) · SIN; for the operators, COS and SIN are the caches' rows at each
    token's position, repeated over both halves of a head ([batch, 1, seq, head_dim])."""
    check_whole_outputs("rotary", rows)
    x = np.asarray(feeds["X"], dtype=np.float64)
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    if spec.form == "subgraph":
        cos, sin = (np.asarray(feeds[name], dtype=np.float64) for name in ("COS", "SIN"))
    else:
        positions = feeds["POS"]
        cos, sin = (
            np.tile(np.asarray(feeds[name], dtype=np.float64)[positions], 2)[:, None]
            for name in ("COS_CACHE", "SIN_CACHE")
        )
    return {"Y": x * cos + rotated * sin}


tolerance = float_tolerance


def plan(kernel: RotaryKernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
    """The exported subgraph, ONNX's operator and ONNX Runtime's, side by side."""
    return [("fwd", form, {}) for form in FORMS]
