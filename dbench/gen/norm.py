"""LayerNorm and RMSNorm graphs over the last axis of [batch, seq, hidden] activations.

Forms: `op`, the ONNX operator (LayerNormalization, opset 17; RMSNormalization, opset 23, so its graph
imports opset 23); `subgraph`, the nodes an exporter writes without them (LayerNorm: ReduceMean, Sub, Pow,
ReduceMean, Add, Sqrt, Div, Mul, Add; RMSNorm as Llama's modelling code: Pow, ReduceMean, Add, Sqrt,
Reciprocal, Mul, Mul), which runtimes may fuse back into one kernel (the row's profile says). Epsilon is
EPS in every graph: the models' own (1e-12 to 1e-6) change no cost.
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from dbench.catalog.kernels import NormKernel
from dbench.errors import UsageError
from dbench.gen.family import PlannedGraph, check_whole_outputs, float_tolerance, make_spec
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, make_model
from dbench.gen.options import GenOptions
from dbench.gen.precision import PRECISIONS
from dbench.gen.subgraph import at_opset, constant, float_dtype

SUPPORTED_PRECISIONS = tuple(PRECISIONS)
ROW_SAMPLED = False
FORMS = ("op", "subgraph")
EPS = 1e-5
RMS_OPSET = 23
"""RMSNormalization's opset."""


def _op_nodes(kind: str) -> list:
    if kind == "layer":
        return [helper.make_node("LayerNormalization", ["X", "gamma", "beta"], ["Y"], axis=-1, epsilon=EPS)]
    return [helper.make_node("RMSNormalization", ["X", "gamma"], ["Y"], axis=-1, epsilon=EPS)]


def _subgraph_nodes(kind: str, dt: str) -> list:
    nodes = [constant("axes", [-1], dt), constant("two", 2.0, dt), constant("eps", EPS, dt)]
    if kind == "layer":
        nodes += [
            helper.make_node("ReduceMean", ["X", "axes"], ["mean"], keepdims=1),
            helper.make_node("Sub", ["X", "mean"], ["centred"]),
            helper.make_node("Pow", ["centred", "two"], ["squares"]),
            helper.make_node("ReduceMean", ["squares", "axes"], ["var"], keepdims=1),
            helper.make_node("Add", ["var", "eps"], ["var_eps"]),
            helper.make_node("Sqrt", ["var_eps"], ["std"]),
            helper.make_node("Div", ["centred", "std"], ["normed"]),
            helper.make_node("Mul", ["normed", "gamma"], ["scaled"]),
            helper.make_node("Add", ["scaled", "beta"], ["Y"]),
        ]
    else:
        nodes += [
            helper.make_node("Pow", ["X", "two"], ["squares"]),
            helper.make_node("ReduceMean", ["squares", "axes"], ["mean_sq"], keepdims=1),
            helper.make_node("Add", ["mean_sq", "eps"], ["mean_sq_eps"]),
            helper.make_node("Sqrt", ["mean_sq_eps"], ["rms"]),
            helper.make_node("Reciprocal", ["rms"], ["inv_rms"]),
            helper.make_node("Mul", ["X", "inv_rms"], ["normed"]),
            helper.make_node("Mul", ["normed", "gamma"], ["Y"]),
        ]
    return nodes


def build(kernel: NormKernel, precision: str, pass_name: str = "fwd", form: str = "op") -> Graph:
    """The normalization in `form` (`op` or `subgraph`) and a floating-point precision."""
    if form not in FORMS:
        raise UsageError(f"unknown norm form {form!r}; valid: {', '.join(FORMS)}")
    dt = float_dtype(precision)
    shape = (kernel.batch, kernel.seq, kernel.hidden)
    inputs = [TensorSpec("X", shape, dt, "activation"), TensorSpec("gamma", (kernel.hidden,), dt, "weight")]
    if kernel.kind == "layer":
        inputs.append(TensorSpec("beta", (kernel.hidden,), dt, "weight"))
    outputs = (TensorSpec("Y", shape, dt, "output"),)
    nodes = _op_nodes(kernel.kind) if form == "op" else _subgraph_nodes(kernel.kind, dt)
    spec = make_spec(
        kernel,
        precision,
        pass_name,
        form,
        inputs=tuple(inputs),
        outputs=outputs,
        flops_executed=kernel.flops(),
        attrs={"epsilon": EPS},
    )
    model = make_model(spec.id, nodes, inputs, outputs, doc=f"{kernel.op} {kernel.id}, {form} form")
    if form == "op" and kernel.kind == "rms":
        model = at_opset(model, RMS_OPSET)
    return Graph(spec, model)


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray], rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """float64 LayerNorm or RMSNorm over the last axis."""
    check_whole_outputs("norm", rows)
    x = np.asarray(feeds["X"], dtype=np.float64)
    gamma = np.asarray(feeds["gamma"], dtype=np.float64)
    eps = spec.attrs["epsilon"]
    if spec.params["kind"] == "layer":
        centred = x - x.mean(axis=-1, keepdims=True)
        normed = centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + eps)
        return {"Y": normed * gamma + np.asarray(feeds["beta"], dtype=np.float64)}
    return {"Y": x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps) * gamma}


tolerance = float_tolerance


def plan(kernel: NormKernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
    """The operator and the exported subgraph, side by side (inference only)."""
    return [("fwd", form, {}) for form in FORMS]
