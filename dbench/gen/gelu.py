"""GELU graphs over [batch, seq, width] activations (the MLP's intermediate width).

Forms: `op`, ONNX's Gelu (opset 20, approximate="none"); `erf`, the subgraph exporters write,
x · 0.5 · (1 + erf(x / √2)) (Div, Erf, Add, Mul, Mul), which ONNX Runtime and OpenVINO may fuse back
(the row's profile says what ran).
"""

from __future__ import annotations

import math

import numpy as np
from onnx import helper

from dbench.catalog.kernels import GeluKernel
from dbench.errors import UsageError
from dbench.gen.family import PlannedGraph, check_whole_outputs, float_tolerance, make_spec
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, make_model
from dbench.gen.options import GenOptions
from dbench.gen.precision import PRECISIONS
from dbench.gen.subgraph import constant, float_dtype

SUPPORTED_PRECISIONS = tuple(PRECISIONS)
ROW_SAMPLED = False
FORMS = ("op", "erf")
INPUT_RANGE = 3.0
"""Inputs uniform in [-3, 3]: GELU's curved part, where an approximation would show."""


def build(kernel: GeluKernel, precision: str, pass_name: str = "fwd", form: str = "op") -> Graph:
    """GELU in `form` (`op` or `erf`) and a floating-point precision."""
    if form not in FORMS:
        raise UsageError(f"unknown gelu form {form!r}; valid: {', '.join(FORMS)}")
    dt = float_dtype(precision)
    shape = (kernel.batch, kernel.seq, kernel.width)
    x = TensorSpec("X", shape, dt, "activation", low=-INPUT_RANGE, high=INPUT_RANGE)
    y = TensorSpec("Y", shape, dt, "output")
    if form == "op":
        nodes = [helper.make_node("Gelu", ["X"], ["Y"], approximate="none")]
    else:
        nodes = [
            constant("sqrt2", math.sqrt(2.0), dt),
            constant("one", 1.0, dt),
            constant("half", 0.5, dt),
            helper.make_node("Div", ["X", "sqrt2"], ["scaled"]),
            helper.make_node("Erf", ["scaled"], ["erf"]),
            helper.make_node("Add", ["erf", "one"], ["cdf2"]),
            helper.make_node("Mul", ["X", "cdf2"], ["x_cdf2"]),
            helper.make_node("Mul", ["x_cdf2", "half"], ["Y"]),
        ]
    spec = make_spec(kernel, precision, pass_name, form, inputs=(x,), outputs=(y,), flops_executed=kernel.flops())
    return Graph(spec, make_model(spec.id, nodes, (x,), (y,), doc=f"GELU {kernel.id}, {form} form"))


ERF_CHUNK = 2**18
"""Elements per call of the elementwise erf: its Python objects stay a few MB for a 100 MB input."""


def erf(x: np.ndarray) -> np.ndarray:
    """float64 erf of every element (math.erf, chunk by chunk: numpy has no erf)."""
    flat = np.asarray(x, dtype=np.float64).reshape(-1)
    out = np.empty_like(flat)
    elementwise = np.frompyfunc(math.erf, 1, 1)
    for start in range(0, flat.size, ERF_CHUNK):
        out[start : start + ERF_CHUNK] = elementwise(flat[start : start + ERF_CHUNK])
    return out.reshape(np.shape(x))


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray], rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """float64 x · Φ(x) = x · (1 + erf(x / √2)) / 2."""
    check_whole_outputs("gelu", rows)
    x = np.asarray(feeds["X"], dtype=np.float64)
    return {"Y": x * 0.5 * (1.0 + erf(x / math.sqrt(2.0)))}


tolerance = float_tolerance


def plan(kernel: GeluKernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
    """The operator and the erf subgraph, side by side."""
    return [("fwd", form, {}) for form in FORMS]
