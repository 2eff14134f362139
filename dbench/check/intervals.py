"""Interval arithmetic for one recurrent step: given bounds on every gate's pre-activation (and the
exact previous hidden state), the bounds of the step's hidden state (and LSTM cell state). Every
activation is monotone, and every product is bounded by its corners, so the true value of a step
whose pre-activations lie in the given intervals lies in the returned one."""

from __future__ import annotations

import numpy as np

Interval = tuple[np.ndarray, np.ndarray]


def product(a: Interval, b: Interval) -> Interval:
    """Bounds of a·b for a in [a_lo, a_hi], b in [b_lo, b_hi] (the extremes are at the corners)."""
    corners = np.stack([a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]])
    return corners.min(axis=0), corners.max(axis=0)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def monotone(function, x: Interval) -> Interval:
    """Bounds of an increasing function over an interval."""
    return function(x[0]), function(x[1])


def candidate(activation: str):
    return np.tanh if activation == "tanh" else (lambda a: np.maximum(a, 0.0))


def step_bounds(
    cell: str,
    activation: str,
    s: Interval,
    h_prev: np.ndarray,
    c_prev: Interval | None = None,
    xh: Interval | None = None,
    rh: Interval | None = None,
) -> tuple[Interval, Interval | None]:
    """(h_t bounds, c_t bounds or None) from bounds on s = xw + h·R^T + Rb [N, G·H] and, for GRU, on the
    candidate's input term xh and recurrent term rh [N, H] (whose sum with r is not s's last block)."""
    hidden = h_prev.shape[-1]
    if cell == "vanilla":
        return (np.maximum(s[0], 0.0), np.maximum(s[1], 0.0)), None
    if cell == "lstm":

        def gate(index: int, function) -> Interval:
            block = slice(index * hidden, (index + 1) * hidden)
            return monotone(function, (s[0][:, block], s[1][:, block]))

        i, o, f, cand = gate(0, _sigmoid), gate(1, _sigmoid), gate(2, _sigmoid), gate(3, np.tanh)
        kept, added = product(f, c_prev), product(i, cand)
        c = (kept[0] + added[0], kept[1] + added[1])
        return product(o, monotone(np.tanh, c)), c
    if cell == "gru":
        z = monotone(_sigmoid, (s[0][:, :hidden], s[1][:, :hidden]))
        r = monotone(_sigmoid, (s[0][:, hidden : 2 * hidden], s[1][:, hidden : 2 * hidden]))
        gated = product(r, rh)
        cand = monotone(candidate(activation), (xh[0] + gated[0], xh[1] + gated[1]))
        # h = (1 - z)·cand + z·h_prev is bilinear in (z, cand): its extremes are at the corners.
        corners = np.stack([(1 - zz) * cc + zz * h_prev for zz in z for cc in cand])
        return (corners.min(axis=0), corners.max(axis=0)), None
    raise ValueError(f"unknown cell {cell!r}")
