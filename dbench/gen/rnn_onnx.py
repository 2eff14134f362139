"""ONNX node lists for the recurrent graphs, each with the FLOPs it executes tallied as it is built.

  op:         ONNX RNN / LSTM / GRU over X [T, N, H] (includes the input projection W·x_t)
  recurrence: a Loop over pre-projected inputs XW [T, N, G·H]; each step is the recurrent
              Gemm h_{t-1}·R^T + Rb plus the gates (DeepBench's definition, no W·x_t)
  bptt:       a Loop from the last step to the first computing the gate gradients step by step
              (dh flows back through R: one MatMul per step), then dR as one Gemm over all steps
              and the bias gradients as sums
Loop, not Scan: OpenVINO's Scan import miscounts bodies that read outer-scope values (R), and
onnx.reference's Scan has no reverse direction; the Loop body Gathers step t of each sequence.
Shared inputs keep ONNX's op layout in every form: R [1, G·H, H], initial_h / initial_c [1, N, H].
FLOP rule: a MatMul/Gemm counts 2·M·K·N (+ M·N for Gemm's bias); every elementwise node counts one
FLOP per output element (Sigmoid, Tanh and Relu included); data movement (Split, Concat, Slice,
Reshape, Gather) and loop index arithmetic count none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper

from dbench.gen.precision import DTYPES

# Slice end that reaches index 0 when stepping backwards.
_INT64_MIN = -(2**63)


@dataclass
class Nodes:
    """Nodes under construction and the FLOPs they execute; `prefix` keeps names unique per graph."""

    elem_type: int
    prefix: str = ""
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    flops: int = 0

    def add(
        self, op: str, inputs: list[str], *, flops: int = 0, outputs: int | list[str] = 1, **attrs
    ) -> str | list[str]:
        """Append one node with `outputs` fresh output names (or the names given); returns the
        output name, or the list of names when there are several."""
        outs = (
            outputs
            if isinstance(outputs, list)
            else [f"{self.prefix}{op.lower()}{len(self.nodes)}_{i}" for i in range(outputs)]
        )
        self.nodes.append(helper.make_node(op, inputs, outs, **attrs))
        self.flops += flops
        return outs[0] if len(outs) == 1 else outs

    def ints(self, values: list[int]) -> str:
        """A 1-D int64 constant (shapes, slice bounds, axes)."""
        return self.add("Constant", [], value=helper.make_tensor("v", TensorProto.INT64, [len(values)], values))

    def scalar(self, value: float, elem_type: int | None = None) -> str:
        """A scalar constant in the graph's element type (or `elem_type`)."""
        return self.add("Constant", [], value=constant_tensor(elem_type or self.elem_type, [], value))


def constant_tensor(elem_type: int, dims: list[int], value: float) -> onnx.TensorProto:
    """A tensor filled with `value`. bfloat16 goes in raw_data: OpenVINO (2026.4) reads a bfloat16
    tensor's int32_data, where onnx's helper puts it, as integers (1.0 became 16256)."""
    if elem_type == TensorProto.BFLOAT16:
        data = np.full(dims, value, dtype=DTYPES["bfloat16"]).tobytes()
        return helper.make_tensor("v", elem_type, dims, data, raw=True)
    return helper.make_tensor("v", elem_type, dims, [value] * math.prod(dims))


@dataclass(frozen=True)
class Dims:
    """The sizes a recurrent graph is built for."""

    cell: str
    hidden: int
    batch: int
    steps: int
    gates: int
    activation: str = "tanh"

    @property
    def width(self) -> int:
        """N·H: elements in one state tensor."""
        return self.batch * self.hidden


def _value(name: str, elem_type: int, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, shape)


def _sigmoid_grad(b: Nodes, s: str, w: int) -> str:
    """s·(1 - s) for a sigmoid output s, as s - s·s."""
    return b.add("Sub", [s, b.add("Mul", [s, s], flops=w)], flops=w)


def _candidate(b: Nodes, a: str, d: Dims) -> str:
    return b.add("Tanh" if d.activation == "tanh" else "Relu", [a], flops=d.width)


def _candidate_backward(b: Nodes, grad: str, value: str, d: Dims) -> str:
    """grad · g'(pre-activation) from the activation's output value (tanh: 1 - v², relu: v > 0)."""
    w = d.width
    if d.activation == "tanh":
        return b.add(
            "Mul", [grad, b.add("Sub", [b.scalar(1.0), b.add("Mul", [value, value], flops=w)], flops=w)], flops=w
        )
    zero = b.scalar(0.0)
    return b.add("Where", [b.add("Greater", [value, zero], flops=w), grad, zero], flops=w)


def forward_step(
    b: Nodes, d: Dims, h_prev: str, c_prev: str | None, xw: str, r2: str, rb: str
) -> tuple[str, str | None]:
    """One time step from h_{t-1} (and c_{t-1}) and the projected input xw_t: returns h_t (and c_t)."""
    n, h, g, w = d.batch, d.hidden, d.gates, d.width
    rec = b.add("Gemm", [h_prev, r2, rb], transB=1, flops=2 * n * g * h * h + n * g * h)
    if d.cell == "vanilla":
        return b.add("Relu", [b.add("Add", [xw, rec], flops=w)], flops=w), None
    if d.cell == "lstm":
        i, o, f, cand = b.add("Split", [b.add("Add", [xw, rec], flops=g * w)], outputs=4, axis=1, num_outputs=4)
        i, o, f = (b.add("Sigmoid", [x], flops=w) for x in (i, o, f))
        cand = b.add("Tanh", [cand], flops=w)
        c = b.add("Add", [b.add("Mul", [f, c_prev], flops=w), b.add("Mul", [i, cand], flops=w)], flops=w)
        return b.add("Mul", [o, b.add("Tanh", [c], flops=w)], flops=w), c
    xz, xr, xh = b.add("Split", [xw], outputs=3, axis=1, num_outputs=3)
    rz, rr, rh = b.add("Split", [rec], outputs=3, axis=1, num_outputs=3)
    z = b.add("Sigmoid", [b.add("Add", [xz, rz], flops=w)], flops=w)
    r = b.add("Sigmoid", [b.add("Add", [xr, rr], flops=w)], flops=w)
    cand = _candidate(b, b.add("Add", [xh, b.add("Mul", [r, rh], flops=w)], flops=w), d)
    # h_t = (1 - z)·h~ + z·h_{t-1} = h~ + z·(h_{t-1} - h~)
    return b.add("Add", [cand, b.add("Mul", [z, b.add("Sub", [h_prev, cand], flops=w)], flops=w)], flops=w), None


def backward_step(b: Nodes, d: Dims, dh_rec: str, dc_next: str | None, seq: dict[str, str], r2: str) -> dict[str, str]:
    """One reversed step of back-propagation through time. `seq` holds this step's slices (dy, and
    y / c, c_prev, gates / h_prev, gates by cell). Returns the next states (dh_rec, dc_next), the
    recurrent gate gradient d_rec [N, G·H] and, for GRU, the input-side candidate gradient dah."""
    n, h, g, w = d.batch, d.hidden, d.gates, d.width
    dh = b.add("Add", [seq["dy"], dh_rec], flops=w)
    out: dict[str, str] = {}
    if d.cell == "vanilla":
        zero = b.scalar(0.0)
        d_rec = b.add("Where", [b.add("Greater", [seq["y"], zero], flops=w), dh, zero], flops=w)
        out["dh_rec"] = b.add("MatMul", [d_rec, r2], flops=2 * n * g * h * h)
    elif d.cell == "lstm":
        i, o, f, cand = b.add("Split", [seq["gates"]], outputs=4, axis=1, num_outputs=4)
        tc = b.add("Tanh", [seq["c"]], flops=w)
        one = b.scalar(1.0)
        dtc = b.add(
            "Mul",
            [b.add("Mul", [dh, o], flops=w), b.add("Sub", [one, b.add("Mul", [tc, tc], flops=w)], flops=w)],
            flops=w,
        )
        dc = b.add("Add", [dc_next, dtc], flops=w)
        out["dc_next"] = b.add("Mul", [dc, f], flops=w)
        dai = b.add("Mul", [b.add("Mul", [dc, cand], flops=w), _sigmoid_grad(b, i, w)], flops=w)
        dao = b.add("Mul", [b.add("Mul", [dh, tc], flops=w), _sigmoid_grad(b, o, w)], flops=w)
        daf = b.add("Mul", [b.add("Mul", [dc, seq["c_prev"]], flops=w), _sigmoid_grad(b, f, w)], flops=w)
        dac = b.add(
            "Mul",
            [b.add("Mul", [dc, i], flops=w), b.add("Sub", [one, b.add("Mul", [cand, cand], flops=w)], flops=w)],
            flops=w,
        )
        d_rec = b.add("Concat", [dai, dao, daf, dac], axis=1)
        out["dh_rec"] = b.add("MatMul", [d_rec, r2], flops=2 * n * g * h * h)
    else:
        z, r, cand, rh = b.add("Split", [seq["gates"]], outputs=4, axis=1, num_outputs=4)
        dhz = b.add("Mul", [dh, z], flops=w)
        dah = _candidate_backward(b, b.add("Sub", [dh, dhz], flops=w), cand, d)
        daz = b.add(
            "Mul",
            [b.add("Mul", [dh, b.add("Sub", [seq["h_prev"], cand], flops=w)], flops=w), _sigmoid_grad(b, z, w)],
            flops=w,
        )
        dar = b.add("Mul", [b.add("Mul", [dah, rh], flops=w), _sigmoid_grad(b, r, w)], flops=w)
        d_rec = b.add("Concat", [daz, dar, b.add("Mul", [dah, r], flops=w)], axis=1)
        out["dh_rec"] = b.add("Add", [b.add("MatMul", [d_rec, r2], flops=2 * n * g * h * h), dhz], flops=w)
        out["dah"] = dah
    out["d_rec"] = d_rec
    return out


def op_nodes(d: Dims) -> tuple[list[onnx.NodeProto], int]:
    """The standard ONNX op over X; its FLOPs are the input projection X·W^T + Wb plus T recurrent steps."""
    inputs = ["X", "W", "R", "B", "", "initial_h"] + (["initial_c"] if d.cell == "lstm" else [])
    attrs: dict = {"hidden_size": d.hidden}
    if d.cell == "vanilla":
        attrs["activations"] = ["Relu"]
    elif d.cell == "gru":
        attrs.update(activations=["Sigmoid", "Tanh" if d.activation == "tanh" else "Relu"], linear_before_reset=1)
    op = {"vanilla": "RNN", "lstm": "LSTM", "gru": "GRU"}[d.cell]
    node = helper.make_node(op, inputs, ["Y"], **attrs)
    projection = 2 * d.steps * d.gates * d.width * d.hidden + d.steps * d.gates * d.width
    return [node], projection + d.steps * _step_flops(d)


def _step_flops(d: Dims) -> int:
    """FLOPs of one forward step, counted from the nodes the recurrence form emits for it."""
    b = Nodes(TensorProto.FLOAT)
    forward_step(b, d, "h", "c", "xw", "r", "rb")
    return b.flops


def _add_loop(
    outer: Nodes,
    body: Nodes,
    name: str,
    steps: int,
    states: list[tuple[str, str, str, list[int]]],
    per_step: list[tuple[str, list[int], str]],
) -> None:
    """Append a Loop of `steps` iterations whose body is `body` (inputs `<prefix>i`, `<prefix>cond`).
    states: (initial value outside, body input, next value in the body, shape); per_step: (body value,
    shape, name of the stacked [steps, *shape] result outside). Per-step values leave the body
    flattened and are reshaped outside: onnx.reference stacks Loop outputs with vstack, which agrees
    with ONNX's stacking only for 1-D values."""
    et, prefix = outer.elem_type, body.prefix
    inputs = [_value(f"{prefix}i", TensorProto.INT64, []), _value(f"{prefix}cond", TensorProto.BOOL, [])]
    outputs = [_value(body.add("Identity", [f"{prefix}cond"]), TensorProto.BOOL, [])]
    for _, inner, following, shape in states:
        inputs.append(_value(inner, et, shape))
        outputs.append(_value(body.add("Identity", [following]), et, shape))
    flat = body.ints([-1])
    for value, shape, _ in per_step:
        outputs.append(_value(body.add("Reshape", [value, flat]), et, [math.prod(shape)]))
    graph = helper.make_graph(body.nodes, name, inputs, outputs)
    trips = outer.scalar(steps, TensorProto.INT64)
    cond = outer.add("Constant", [], value=helper.make_tensor("v", TensorProto.BOOL, [], [True]))
    results = outer.add("Loop", [trips, cond] + [s[0] for s in states], outputs=len(states) + len(per_step), body=graph)
    for stacked, (_, shape, out_name) in zip(results[len(states) :], per_step):
        outer.add("Reshape", [stacked, outer.ints([steps, *shape])], outputs=[out_name])


def recurrence_nodes(d: Dims, elem_type: int) -> tuple[list[onnx.NodeProto], int]:
    """Loop over the T steps: states h (and c), per-step output Y [T, N, H]; the body Gathers step t
    of XW and reads R and Rb from the outer graph."""
    lstm = d.cell == "lstm"
    nh = [d.batch, d.hidden]
    outer = Nodes(elem_type)
    r2 = outer.add("Reshape", ["R", outer.ints([d.gates * d.hidden, d.hidden])])
    h0 = outer.add("Reshape", ["initial_h", outer.ints(nh)])
    c0 = outer.add("Reshape", ["initial_c", outer.ints(nh)]) if lstm else None

    body = Nodes(elem_type, prefix="f_")
    xw = body.add("Gather", ["XW", "f_i"], axis=0)
    h_new, c_new = forward_step(body, d, "f_h", "f_c" if lstm else None, xw, r2, "Rb")
    states = [(h0, "f_h", h_new, nh)] + ([(c0, "f_c", c_new, nh)] if lstm else [])
    _add_loop(outer, body, "step", d.steps, states, [(h_new, nh, "Y")])
    return outer.nodes, d.steps * body.flops


def _previous_reversed(b: Nodes, seq: str, initial: str, steps: int) -> str:
    """The states before each step, last step first: [s_{T-2}, ..., s_0, initial] (shape of seq)."""
    if steps == 1:
        return initial
    earlier = b.add("Slice", [seq, b.ints([-2]), b.ints([_INT64_MIN]), b.ints([0]), b.ints([-1])])
    return b.add("Concat", [earlier, initial], axis=0)


def bptt_nodes(d: Dims, elem_type: int) -> tuple[list[onnx.NodeProto], int]:
    """Weight gradients dR [1, G·H, H] and dB [1, 2·G·H] (ONNX's B layout: Wb then Rb) from the
    recorded forward (Y, initial_h; LSTM C, initial_c; gates) and the upstream gradient dY.
    Iteration i handles step t = T-1-i, so per-step outputs come out last step first."""
    n, h, g, t = d.batch, d.hidden, d.gates, d.steps
    lstm, gru = d.cell == "lstm", d.cell == "gru"
    outer = Nodes(elem_type)
    r2 = outer.add("Reshape", ["R", outer.ints([g * h, h])])
    h_prev = _previous_reversed(outer, "Y", "initial_h", t)
    c_prev = _previous_reversed(outer, "C", "initial_c", t) if lstm else None
    zeros = outer.add("ConstantOfShape", [outer.ints([n, h])], value=constant_tensor(elem_type, [1], 0.0))

    body = Nodes(elem_type, prefix="b_")
    step_t = body.add("Sub", [outer.scalar(t - 1, TensorProto.INT64), "b_i"])
    seq = {"dy": body.add("Gather", ["dY", step_t], axis=0)}
    if d.cell == "vanilla":
        seq["y"] = body.add("Gather", ["Y", step_t], axis=0)
    else:
        seq["gates"] = body.add("Gather", ["gates", step_t], axis=0)
    if lstm:
        seq["c"] = body.add("Gather", ["C", step_t], axis=0)
        seq["c_prev"] = body.add("Gather", [c_prev, "b_i"], axis=0)
    if gru:
        seq["h_prev"] = body.add("Gather", [h_prev, "b_i"], axis=0)
    step = backward_step(body, d, "b_dh", "b_dc" if lstm else None, seq, r2)
    states = [(zeros, "b_dh", step["dh_rec"], [n, h])] + ([(zeros, "b_dc", step["dc_next"], [n, h])] if lstm else [])
    per_step = [(step["d_rec"], [n, g * h], "d_rec_rev")] + ([(step["dah"], [n, h], "dah_rev")] if gru else [])
    _add_loop(outer, body, "step_back", t, states, per_step)

    d_rec = outer.add("Reshape", ["d_rec_rev", outer.ints([t * n, g * h])])
    prev2 = outer.add("Reshape", [h_prev, outer.ints([t * n, h])])
    dr2 = outer.add("Gemm", [d_rec, prev2], transA=1, flops=2 * g * h * t * n * h)
    outer.add("Reshape", [dr2, outer.ints([1, g * h, h])], outputs=["dR"])
    axis0 = outer.ints([0])
    drb = outer.add("ReduceSum", [d_rec, axis0], keepdims=1, flops=t * n * g * h)
    if gru:
        dah = outer.add("Reshape", ["dah_rev", outer.ints([t * n, h])])
        dwb_h = outer.add("ReduceSum", [dah, axis0], keepdims=1, flops=t * n * h)
        dwb_zr = outer.add("Slice", [drb, outer.ints([0]), outer.ints([2 * h]), outer.ints([1])])
        outer.add("Concat", [dwb_zr, dwb_h, drb], axis=1, outputs=["dB"])
    else:
        outer.add("Concat", [drb, drb], axis=1, outputs=["dB"])
    return outer.nodes, t * body.flops + outer.flops
