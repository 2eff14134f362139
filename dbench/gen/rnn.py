"""Recurrent-layer graphs (DeepBench's vanilla ReLU RNN, LSTM, GRU): one unidirectional layer,
input width = hidden, sequence length = timesteps, ONNX gate order (LSTM iofc, GRU zrh).

Forms of the forward pass (`--rnn-form`):
  op          ONNX RNN / LSTM / GRU over X [T, N, H] with W, R, B: includes the input projection
              W·x_t, so it executes about twice DeepBench's FLOPs (`flops_executed`)
  recurrence  DeepBench's definition: a Loop over pre-projected inputs XW = X·W^T + Wb [T, N, G·H]
              doing only h_{t-1}·R^T + Rb and the gates each step
Training pass `bwd_weights`, form `bptt`: the weight gradients dR and dB by back-propagation through
time over the recorded forward (see rnn_onnx). GRU with a ReLU candidate (`--gru-activation relu`,
DeepBench's README) gets the form suffix `_relu` and attrs {"gru_activation": ...}; tanh (what
DeepBench's cuDNN code ran) is the default and has no suffix.
"""

from __future__ import annotations

import math

import numpy as np

from dbench.catalog.kernels import RnnKernel
from dbench.errors import UnsupportedError
from dbench.gen.family import PlannedGraph, check_whole_outputs, float_tolerance, make_spec
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, make_model
from dbench.gen.options import RNN_FORMS, GenOptions
from dbench.gen.precision import PRECISIONS, dtype_name, float_precision
from dbench.gen.rnn_math import RECORDED_GATES, Trace, backward, forward
from dbench.gen.rnn_onnx import Dims, bptt_nodes, op_nodes, recurrence_nodes

SUPPORTED_PRECISIONS = tuple(PRECISIONS)
ROW_SAMPLED = False
BWD_FORM = "bptt"
PASS_FORMS = {"fwd": RNN_FORMS, "bwd_weights": (BWD_FORM,)}
RELU_SUFFIX = "_relu"


def form_name(base: str, cell: str, gru_activation: str = "tanh") -> str:
    """The recorded form: `base`, plus `_relu` for a GRU with a ReLU candidate."""
    return base + RELU_SUFFIX if cell == "gru" and gru_activation == "relu" else base


def _parse_form(kernel: RnnKernel, pass_name: str, form: str, gru_activation: str | None) -> tuple[str, str]:
    """(base form, GRU activation) of a form name, checked against the pass, cell and attrs."""
    if pass_name not in PASS_FORMS:
        raise ValueError(f"unknown rnn pass {pass_name!r}; valid: {', '.join(PASS_FORMS)}")
    relu = kernel.cell == "gru" and form.endswith(RELU_SUFFIX)
    base, activation = (form[: -len(RELU_SUFFIX)], "relu") if relu else (form, "tanh")
    if base not in PASS_FORMS[pass_name]:
        valid = [form_name(f, kernel.cell, a) for f in PASS_FORMS[pass_name] for a in ("tanh", "relu")]
        raise ValueError(f"unknown {kernel.cell} {pass_name} form {form!r}; valid: {', '.join(dict.fromkeys(valid))}")
    if gru_activation is not None and gru_activation != activation:
        raise ValueError(f"form {form!r} does not match gru_activation {gru_activation!r}")
    return base, activation


def _inputs(kernel: RnnKernel, base: str, dt: str) -> tuple[TensorSpec, ...]:
    """Graph inputs; weights uniform in ±1/sqrt(H) (keeps the recurrence bounded over long sequences)."""
    t, n, h, g = kernel.timesteps, kernel.batch, kernel.hidden, kernel.gates
    s = 1.0 / math.sqrt(h)
    lstm = kernel.cell == "lstm"
    r = TensorSpec("R", (1, g * h, h), dt, "weight", -s, s)
    states = [TensorSpec("initial_h", (1, n, h), dt, "activation")]
    if lstm:
        states.append(TensorSpec("initial_c", (1, n, h), dt, "activation"))
    if base == "op":
        return (
            TensorSpec("X", (t, n, h), dt, "activation"),
            TensorSpec("W", (1, g * h, h), dt, "weight", -s, s),
            r,
            TensorSpec("B", (1, 2 * g * h), dt, "weight", -s, s),
            *states,
        )
    if base == "recurrence":
        return (
            TensorSpec("XW", (t, n, g * h), dt, "activation"),
            r,
            TensorSpec("Rb", (1, g * h), dt, "weight", -s, s),
            *states,
        )
    recorded = [TensorSpec("dY", (t, n, h), dt, "activation")]
    if kernel.cell == "vanilla" or t > 1:  # at T = 1 the LSTM and GRU backward read only initial_h, never Y
        recorded.append(TensorSpec("Y", (t, n, h), dt, "activation", 0.0 if kernel.cell == "vanilla" else -1.0))
    recorded.append(states[0])
    if lstm:
        recorded += [TensorSpec("C", (t, n, h), dt, "activation"), states[1]]
    if RECORDED_GATES[kernel.cell]:
        recorded.append(TensorSpec("gates", (t, n, RECORDED_GATES[kernel.cell] * h), dt, "activation", 0.0, 1.0))
    return (*recorded, r)


def _outputs(kernel: RnnKernel, base: str, dt: str) -> tuple[TensorSpec, ...]:
    t, n, h, g = kernel.timesteps, kernel.batch, kernel.hidden, kernel.gates
    if base == "op":
        return (TensorSpec("Y", (t, 1, n, h), dt, "output"),)
    if base == "recurrence":
        return (TensorSpec("Y", (t, n, h), dt, "output"),)
    return (TensorSpec("dR", (1, g * h, h), dt, "output"), TensorSpec("dB", (1, 2 * g * h), dt, "output"))


def build(
    kernel: RnnKernel, precision: str, pass_name: str = "fwd", form: str = "op", gru_activation: str | None = None
) -> Graph:
    """One pass of the recurrent layer as an ONNX graph in a floating-point precision."""
    prec = float_precision(precision)
    base, activation = _parse_form(kernel, pass_name, form, gru_activation)
    if base == "op" and precision == "bf16":
        raise UnsupportedError(
            f"ONNX's {kernel.cell} op has no bfloat16 type (float16/float/double only); "
            "use --rnn-form recurrence for bf16"
        )
    dt = dtype_name(prec.dtype)
    dims = Dims(kernel.cell, kernel.hidden, kernel.batch, kernel.timesteps, kernel.gates, activation)
    if base == "op":
        nodes, executed = op_nodes(dims)
    elif base == "recurrence":
        nodes, executed = recurrence_nodes(dims, prec.onnx_type)
    else:
        nodes, executed = bptt_nodes(dims, prec.onnx_type)
    inputs, outputs = _inputs(kernel, base, dt), _outputs(kernel, base, dt)
    spec = make_spec(
        kernel,
        precision,
        pass_name,
        form,
        inputs=inputs,
        outputs=outputs,
        flops_executed=executed,
        attrs={"gru_activation": activation} if kernel.cell == "gru" else {},
    )
    doc = f"DeepBench {kernel.cell} layer {kernel.id}, {pass_name}, {form} form"
    return Graph(spec, make_model(spec.id, nodes, inputs, outputs, doc=doc))


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray], rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """float64 result from the cell equations (rnn_math), independent of ONNX's ops."""
    check_whole_outputs("rnn", rows)
    kernel = RnnKernel(**spec.params)
    activation = spec.attrs.get("gru_activation", "tanh")
    f = {name: np.asarray(v, dtype=np.float64) for name, v in feeds.items()}
    gh = kernel.gates * kernel.hidden
    r, h0 = f["R"][0], f["initial_h"][0]
    c0 = f["initial_c"][0] if kernel.cell == "lstm" else None
    base, _ = _parse_form(kernel, spec.pass_name, spec.form, activation)
    if base == "op":
        b = f["B"][0]
        trace = forward(kernel.cell, f["X"] @ f["W"][0].T + b[:gh], r, b[gh:], h0, c0, activation)
        return {"Y": trace.y[:, None]}
    if base == "recurrence":
        return {"Y": forward(kernel.cell, f["XW"], r, f["Rb"][0], h0, c0, activation).y}
    trace = Trace(y=f.get("Y"), c=f.get("C"), gates=f.get("gates"))
    dr, db = backward(kernel.cell, f["dY"], r, h0, trace, c0, activation)
    return {"dR": dr[None], "dB": db[None]}


tolerance = float_tolerance  # float precisions only: the precision's relative bound


def plan(kernel: RnnKernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
    """The forward pass in the chosen form (`--rnn-form`), and the weight-gradient pass when the
    kernel is selected for training; GRU graphs carry the candidate activation in their attrs."""
    attrs = {"gru_activation": options.gru_activation} if kernel.cell == "gru" else {}
    activation = attrs.get("gru_activation", "tanh")
    passes = [("fwd", form_name(options.rnn_form, kernel.cell, activation), attrs)]
    if train:
        passes.append(("bwd_weights", form_name(BWD_FORM, kernel.cell, activation), dict(attrs)))
    return passes
