"""The SiLU-gated MLP's elementwise gate (SwiGLU): Y = SiLU(G) ⊙ U = G · sigmoid(G) · U over
[batch, seq, width] (the MLP's intermediate width), where G and U are the gate and up projections'
outputs. The projections around it are GEMM rows of their own (gate_proj, up_proj or Phi-3's fused
gate_up_proj, down_proj), so a model's MLP is those GEMMs plus this row; the gate is built as an exporter
writes SiLU, Sigmoid and Mul (form `subgraph`), and the row's profile says whether a runtime fused it.
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from dbench.catalog.kernels import GatedKernel
from dbench.errors import UsageError
from dbench.gen.family import PlannedGraph, check_whole_outputs, float_tolerance, make_spec
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, make_model
from dbench.gen.options import GenOptions
from dbench.gen.precision import PRECISIONS
from dbench.gen.subgraph import float_dtype

SUPPORTED_PRECISIONS = tuple(PRECISIONS)
ROW_SAMPLED = False
FORMS = ("subgraph",)
INPUT_RANGE = 4.0
"""Gate inputs uniform in [-4, 4]: the sigmoid's curved part."""


def build(kernel: GatedKernel, precision: str, pass_name: str = "fwd", form: str = "subgraph") -> Graph:
    """SiLU(G) · U as Sigmoid, Mul, Mul in a floating-point precision."""
    if form not in FORMS:
        raise UsageError(f"unknown swiglu form {form!r}; valid: {', '.join(FORMS)}")
    dt = float_dtype(precision)
    shape = (kernel.batch, kernel.seq, kernel.width)
    inputs = (
        TensorSpec("G", shape, dt, "activation", low=-INPUT_RANGE, high=INPUT_RANGE),
        TensorSpec("U", shape, dt, "activation"),
    )
    outputs = (TensorSpec("Y", shape, dt, "output"),)
    nodes = [
        helper.make_node("Sigmoid", ["G"], ["sig"]),
        helper.make_node("Mul", ["G", "sig"], ["silu"]),
        helper.make_node("Mul", ["silu", "U"], ["Y"]),
    ]
    spec = make_spec(kernel, precision, pass_name, form, inputs=inputs, outputs=outputs, flops_executed=kernel.flops())
    return Graph(spec, make_model(spec.id, nodes, inputs, outputs, doc=f"SwiGLU gate {kernel.id}"))


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray], rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """float64 G / (1 + exp(-G)) · U."""
    check_whole_outputs("swiglu", rows)
    g = np.asarray(feeds["G"], dtype=np.float64)
    return {"Y": g / (1.0 + np.exp(-g)) * np.asarray(feeds["U"], dtype=np.float64)}


tolerance = float_tolerance


def plan(kernel: GatedKernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
    return [("fwd", FORMS[0], {})]
