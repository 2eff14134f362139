"""Recurrent layers checked one step at a time from the runtime's own states: every step's hidden
state is recomputed in float64 from the state the runtime returned for the step before (the initial
state for the first), with the recurrent matmuls of many steps batched into one GEMM. No error
accumulates over the sequence, and no step is left out.

What it sees: every forward graph of dbench returns Y with every step (the `op` form's Y [T, 1, N, H],
the `recurrence` form's Y [T, N, H]). The LSTM cell state is not an output: it is rebuilt from the
gates the check computes (c_t = f·c_{t-1} + i·c~, elementwise), so a wrong cell state shows in the
hidden state it feeds. Each step is judged against exact arithmetic on the runtime's own previous
state, not against a trajectory from the initial state: a drift made of per-step errors each within
tolerance is accepted."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dbench.catalog.kernels import RnnKernel
from dbench.check.linear import CHUNK_ELEMENTS
from dbench.gen.graph import GraphSpec
from dbench.gen.rnn_math import step


@dataclass(frozen=True)
class StepInputs:
    """What every step needs besides the previous state: the input side (op: X·W^T + Wb, computed
    here a block of steps at a time; recurrence: the XW feed) and the recurrent weights."""

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

    def projected(self, start: int, stop: int) -> np.ndarray:
        """xw for steps [start, stop) in float64 [B, N, G·H]."""
        x = self.x[start:stop].astype(np.float64)
        if self.w is None:
            return x
        flat = x.reshape(-1, x.shape[-1]) @ self.w.astype(np.float64).T + self.wb  # one GEMM, not one per step
        return flat.reshape(*x.shape[:-1], -1)


def step_inputs(spec: GraphSpec, feeds: dict[str, np.ndarray]) -> StepInputs:
    """The step check's inputs of a forward recurrent graph (`op` or `recurrence` form)."""
    kernel = RnnKernel(**spec.params)
    gh = kernel.gates * kernel.hidden
    f64 = {name: np.asarray(feeds[name], dtype=np.float64) for name in ("initial_h", "initial_c") if name in feeds}
    c0 = f64["initial_c"][0] if kernel.cell == "lstm" else None
    activation = spec.attrs.get("gru_activation", "tanh")
    if spec.form.startswith("op"):
        b = np.asarray(feeds["B"][0], dtype=np.float64)
        return StepInputs(kernel.cell, activation, feeds["X"], feeds["W"][0], b[:gh], feeds["R"][0], b[gh:], f64["initial_h"][0], c0)
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
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "Anchor":
        return cls(arrays["y"], arrays["s"], arrays.get("rh"), arrays["r_norms"])


def _record(miss: float, worst: float) -> bool:
    """Whether `miss` is the new worst (a NaN always is)."""
    return not miss <= worst


def check_steps(inputs: StepInputs, y: np.ndarray, record: bool = False) -> tuple[StepResult, Anchor | None]:
    """Recompute every step from the runtime's returned previous state and compare. y: [T, N, H].
    With `record`, also return the Anchor of this trajectory."""
    steps, batch, hidden = y.shape
    width = inputs.r.shape[0]
    gru = inputs.cell == "gru"
    block = max(1, CHUNK_ELEMENTS // max(1, batch * width))
    r_t = inputs.r.astype(np.float64).T  # [H, G·H], converted once
    worst, scale, worst_step = 0.0, 0.0, 0
    s_all = np.empty((steps, batch, width), np.float32) if record else None
    rh_all = np.empty((steps, batch, hidden), np.float32) if record and gru else None
    c = inputs.c0
    for start in range(0, steps, block):
        stop = min(steps, start + block)
        previous = y[start - 1:stop - 1] if start else np.concatenate([inputs.h0[None], y[:stop - 1]])
        previous = previous.astype(np.float64)
        rec = (previous.reshape(-1, hidden) @ r_t + inputs.rb).reshape(stop - start, batch, width)
        xw = inputs.projected(start, stop)
        if record:
            s_all[start:stop] = xw + rec
            if gru:
                rh_all[start:stop] = rec[..., 2 * hidden:]
        for offset in range(stop - start):
            h_ref, c, _ = step(inputs.cell, xw[offset], rec[offset], previous[offset], c, inputs.activation)
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
            xh_mid = s[:, 2 * hidden:] - rh_a  # the input side: the same for every trajectory
            xh = (xh_mid - s_err[:, 2 * hidden:] - rh_err, xh_mid + s_err[:, 2 * hidden:] + rh_err)
            rh_spread = rh_err + drift[:, None] * anchor.r_norms[None, 2 * hidden:]
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
