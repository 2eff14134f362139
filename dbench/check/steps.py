"""Recurrent layers checked one step at a time from the runtime's own states: every step's hidden
state is recomputed in float64 from the state the runtime returned for the step before (the initial
state for the first), with the recurrent matmuls of many steps batched into one GEMM. No error
accumulates over the sequence, and no step is left out.

What it sees: every forward graph of dbench returns Y with every step (the `op` form's Y [T, 1, N, H],
the `recurrence` form's Y [T, N, H]). The LSTM cell state is not an output: it is rebuilt from the
gates the check computes (c_t = f·c_{t-1} + i·c~, elementwise), so a wrong cell state shows in the
hidden state it feeds. Each step is judged against exact arithmetic on the runtime's own previous
state, not against a trajectory from the initial state: a drift made of per-step errors each within
tolerance is accepted.

The first trajectory that passes is cached as an anchor (its pre-activations); a later trajectory of
the same graph is bounded from it without the recurrent matmuls (`anchored_steps`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dbench.cache.keys import entry_key
from dbench.cache.store import ReferenceCache
from dbench.catalog.kernels import RnnKernel
from dbench.check.verdict import Verdict, degenerate
from dbench.gen.graph import GraphSpec
from dbench.gen.rnn_math import step
from dbench.gen.tolerance import Tolerance


@dataclass(frozen=True)
class StepInputs:
    """What every step needs besides the previous state: the input side (op: X·W^T + Wb, computed a
    block of steps at a time; recurrence: the XW feed) and the recurrent weights."""

    cell: str
    activation: str
    x: np.ndarray
    """op: X [T, N, H]; recurrence: XW [T, N, G·H] (already projected)."""
    w: np.ndarray | None
    """op: W [G·H, H], else None."""
    wb: np.ndarray | None
    r: np.ndarray
    """R [G·H, H]."""
    rb: np.ndarray
    h0: np.ndarray
    c0: np.ndarray | None

    @property
    def steps(self) -> int:
        return self.x.shape[0]


def step_inputs(spec: GraphSpec, feeds: dict[str, np.ndarray]) -> StepInputs:
    """The step check's inputs of a forward recurrent graph (`op` or `recurrence` form)."""
    kernel = RnnKernel(**spec.params)
    gh = kernel.gates * kernel.hidden
    f64 = {name: np.asarray(feeds[name], dtype=np.float64) for name in ("initial_h", "initial_c") if name in feeds}
    c0 = f64["initial_c"][0] if kernel.cell == "lstm" else None
    activation = spec.attrs.get("gru_activation", "tanh")
    if spec.form.startswith("op"):
        b = np.asarray(feeds["B"][0], dtype=np.float64)
        return StepInputs(
            kernel.cell, activation, feeds["X"], feeds["W"][0], b[:gh], feeds["R"][0], b[gh:], f64["initial_h"][0], c0
        )
    rb = np.asarray(feeds["Rb"][0], dtype=np.float64)
    return StepInputs(kernel.cell, activation, feeds["XW"], None, None, feeds["R"][0], rb, f64["initial_h"][0], c0)


@dataclass(frozen=True)
class StepResult:
    """The largest |Y - step reference|, the largest |step reference|, the step where the first was."""

    worst: float
    scale: float
    worst_step: int


@dataclass(frozen=True)
class Anchor:
    """A trajectory with its steps' pre-activations, kept so that another runtime's trajectory close to
    it is checked without its recurrent matmuls: y [T, N, H] (a runtime's verified output), s = xw +
    h_{t-1}·R^T + Rb along it [T, N, G·H] and, for GRU, the candidate's recurrent term rh [T, N, H]
    (both float32: their rounding is part of the bounds), and R's row norms [G·H]."""

    y: np.ndarray
    s: np.ndarray
    rh: np.ndarray | None
    r_norms: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        return {"y": self.y, "s": self.s, "r_norms": self.r_norms, **({"rh": self.rh} if self.rh is not None else {})}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> Anchor:
        return cls(arrays["y"], arrays["s"], arrays.get("rh"), arrays["r_norms"])


def _record(miss: float, worst: float) -> bool:
    """Whether `miss` is the new worst (a NaN always is)."""
    return not miss <= worst


STEP_BLOCK_ELEMENTS = 2**23
"""Pre-activations computed per block of steps (64 MB of float64): the recurrent matmuls of that many
steps are one GEMM, into buffers reused for every block."""


def check_steps(inputs: StepInputs, y: np.ndarray, record: bool = False) -> tuple[StepResult, Anchor | None]:
    """Recompute every step from the runtime's returned previous state and compare. y: [T, N, H].
    With `record`, also return the Anchor of this trajectory."""
    steps, batch, hidden = y.shape
    width = inputs.r.shape[0]
    gru = inputs.cell == "gru"
    block = max(1, min(steps, STEP_BLOCK_ELEMENTS // max(1, batch * width)))
    r_t = inputs.r.astype(np.float64).T  # [H, G·H], converted once
    w_t = inputs.w.astype(np.float64).T if inputs.w is not None else None
    previous = np.empty((block, batch, hidden))
    x = np.empty((block, batch, inputs.x.shape[-1]))
    rec = np.empty((block * batch, width))
    xw = np.empty((block * batch, width)) if w_t is not None else None
    s_all = np.empty((steps, batch, width), np.float32) if record else None
    rh_all = np.empty((steps, batch, hidden), np.float32) if record and gru else None
    worst, scale, worst_step = 0.0, 0.0, 0
    c = inputs.c0
    for start in range(0, steps, block):
        count = min(block, steps - start)
        rows = count * batch
        prev = previous[:count]
        if start:
            np.copyto(prev, y[start - 1 : start + count - 1])
        else:
            prev[0] = inputs.h0
            np.copyto(prev[1:], y[: count - 1])
        np.matmul(prev.reshape(rows, hidden), r_t, out=rec[:rows])
        rec[:rows] += inputs.rb
        np.copyto(x[:count], inputs.x[start : start + count])
        if w_t is not None:  # op form: the input projection of the block's steps, one GEMM
            np.matmul(x[:count].reshape(rows, -1), w_t, out=xw[:rows])
            xw[:rows] += inputs.wb
            projected = xw[:rows].reshape(count, batch, width)
        else:
            projected = x[:count]
        recurrent = rec[:rows].reshape(count, batch, width)
        if record:
            np.add(projected, recurrent, out=s_all[start : start + count])
            if gru:
                rh_all[start : start + count] = recurrent[..., 2 * hidden :]
        for offset in range(count):
            h_ref, c, _ = step(inputs.cell, projected[offset], recurrent[offset], prev[offset], c, inputs.activation)
            miss = float(np.abs(y[start + offset].astype(np.float64) - h_ref).max())
            if _record(miss, worst):
                worst, worst_step = (miss if np.isfinite(miss) else np.inf), start + offset
            scale = max(scale, float(np.abs(h_ref).max()))
    anchor = Anchor(np.array(y), s_all, rh_all, np.linalg.norm(inputs.r.astype(np.float64), axis=1)) if record else None
    return StepResult(worst, scale, worst_step), anchor


STORED_ROUNDING = 2.0**-24
"""Relative rounding of a float32-stored value (half a unit in the last place)."""
TINY = 2.0**-149


@dataclass(frozen=True)
class BoundedResult:
    """Bounds of the step check another trajectory would get from exact recurrent matmuls:
    `upper` >= its largest residual >= `lower`, `scale_low` <= its largest |reference| <= `scale_high`."""

    upper: float
    lower: float
    scale_low: float
    scale_high: float
    worst_step: int


def _stored(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A float32-stored array as float64 and the most its rounding moved each value."""
    exact = values.astype(np.float64)
    return exact, np.abs(exact) * STORED_ROUNDING + TINY


def anchored_steps(inputs: StepInputs, anchor: Anchor, y: np.ndarray) -> BoundedResult:
    """The step check of trajectory y [T, N, H] bounded from an anchor, without the recurrent matmuls:
    the pre-activations along y differ from the anchor's by (h_prev - anchor's h_prev)·R^T, at most
    ||Δh_prev||·||R_j|| for row j (Cauchy–Schwarz), so each step's exact reference lies in the interval
    that interval arithmetic through the cell gives (dbench.check.intervals)."""
    from dbench.check.intervals import step_bounds

    steps, batch, hidden = y.shape
    gru = inputs.cell == "gru"
    upper = lower = scale_low = scale_high = 0.0
    worst_step = 0
    c = (inputs.c0, inputs.c0) if inputs.c0 is not None else None
    previous_y = previous_anchor = inputs.h0
    for t in range(steps):
        h_prev = previous_y
        drift = np.linalg.norm(h_prev - previous_anchor, axis=1)  # [N]
        s, s_err = _stored(anchor.s[t])
        spread = s_err + drift[:, None] * anchor.r_norms[None, :]
        xh = rh = None
        if gru:
            rh_a, rh_err = _stored(anchor.rh[t])
            xh_mid = s[:, 2 * hidden :] - rh_a  # the input side: the same for every trajectory
            xh = (xh_mid - s_err[:, 2 * hidden :] - rh_err, xh_mid + s_err[:, 2 * hidden :] + rh_err)
            rh_spread = rh_err + drift[:, None] * anchor.r_norms[None, 2 * hidden :]
            rh = (rh_a - rh_spread, rh_a + rh_spread)
        (lo, hi), c = step_bounds(inputs.cell, inputs.activation, (s - spread, s + spread), h_prev, c, xh, rh)
        out = y[t].astype(np.float64)
        miss_high = float(np.maximum(np.abs(out - lo), np.abs(out - hi)).max())
        miss_low = float(np.maximum(np.maximum(lo - out, out - hi), 0.0).max())
        if _record(miss_high, upper):
            upper, worst_step = (miss_high if np.isfinite(miss_high) else np.inf), t
        lower = max(lower, miss_low) if np.isfinite(miss_low) else np.inf
        scale_low = max(scale_low, float(np.where((lo > 0) | (hi < 0), np.minimum(np.abs(lo), np.abs(hi)), 0.0).max()))
        scale_high = max(scale_high, float(np.maximum(np.abs(lo), np.abs(hi)).max()))
        previous_y, previous_anchor = out, anchor.y[t].astype(np.float64)
    return BoundedResult(upper, lower, scale_low, scale_high, worst_step)


def steps_check(
    spec: GraphSpec,
    model: bytes,
    feeds: dict[str, np.ndarray],
    outputs: dict[str, np.ndarray],
    rule: Tolerance,
    cache: ReferenceCache,
) -> Verdict:
    """Every step of a recurrent forward graph from the runtime's own previous state (check.steps).
    The first trajectory that passes is cached as an anchor; a later one (another runtime, a re-run)
    is bounded from it without the recurrent matmuls (`steps-anchored`), and checked exactly only
    when the bounds cannot decide."""
    y = np.asarray(outputs["Y"])
    y = y.reshape(y.shape[0], *y.shape[-2:])
    inputs = step_inputs(spec, feeds)
    key = entry_key("steps-anchor", model, spec)
    stored = cache.get(key)
    tau = rule.bound
    if stored is not None:
        bounded = anchored_steps(inputs, Anchor.from_arrays(stored), y)
        detail = f"Y step {bounded.worst_step}"
        if bounded.upper <= tau * bounded.scale_low:
            error = bounded.upper / bounded.scale_low if bounded.scale_low > 0 else 0.0
            return Verdict(True, error, rule.metric, tau, detail, degenerate(y), "steps-anchored", 0.0, "numpy")
        if bounded.lower > tau * bounded.scale_high:
            error = bounded.lower / bounded.scale_high if bounded.scale_high > 0 else math.inf
            return Verdict(False, error, rule.metric, tau, detail, degenerate(y), "steps-anchored", 0.0, "numpy")
    result, anchor = check_steps(inputs, y, record=stored is None)
    error = result.worst / result.scale if result.scale > 0 else result.worst
    verdict = Verdict(
        error <= tau, error, rule.metric, tau, f"Y step {result.worst_step}", degenerate(y), "steps", 0.0, "numpy"
    )
    if verdict.ok and anchor is not None:
        cache.put(key, anchor.arrays())
    return verdict
