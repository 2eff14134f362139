"""Rotary position embedding graphs, the rotate-half form Llama, Qwen2 and Phi-3 export: for X of
[batch, heads, seq, head_dim] (queries or keys after their projection) and the tables COS and SIN of
[seq, head_dim] (the tokens' positions, computed once per forward pass and shared by every layer),
Y = X · COS + rotate_half(X) · SIN, rotate_half(X) = concat(-X[..., d/2:], X[..., :d/2]).

Form `subgraph`: Slice, Slice, Neg, Concat, Mul, Mul, Add, as exporters write it; the row's profile
says whether a runtime fused it. The tables are drawn at random like any activation: the graph is linear
in them, so any values verify it.
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
from dbench.gen.subgraph import constant, float_dtype

SUPPORTED_PRECISIONS = tuple(PRECISIONS)
ROW_SAMPLED = False
FORMS = ("subgraph",)


def build(kernel: RotaryKernel, precision: str, pass_name: str = "fwd", form: str = "subgraph") -> Graph:
    """The rotate-half rotary embedding in a floating-point precision."""
    if form not in FORMS:
        raise UsageError(f"unknown rotary form {form!r}; valid: {', '.join(FORMS)}")
    dt = float_dtype(precision)
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
    """float64 X · COS + rotate_half(X) · SIN."""
    check_whole_outputs("rotary", rows)
    x = np.asarray(feeds["X"], dtype=np.float64)
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    cos, sin = (np.asarray(feeds[name], dtype=np.float64) for name in ("COS", "SIN"))
    return {"Y": x * cos + rotated * sin}


tolerance = float_tolerance


def plan(kernel: RotaryKernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
    return [("fwd", FORMS[0], {})]
