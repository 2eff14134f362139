"""float64 numpy recurrent cells (vanilla ReLU, LSTM, GRU), written from the cell equations and
independent of ONNX: the forward over a sequence, with the activations it records, and back-propagation
through time for the recurrent weight and bias gradients.

Shapes (one layer, one direction, no leading direction axis): projected inputs xw [T, N, G·H]
(x_t·W^T + Wb), recurrent weights r [G·H, H], recurrent bias rb [G·H], states [N, H].
Gate order is ONNX's: LSTM i, o, f, c (candidate); GRU z, r, h (candidate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GATES = {"vanilla": 1, "lstm": 4, "gru": 3}
# Recorded per-step gate values (the backward's "reserve space"): LSTM i, o, f, c~ after their
# activations; GRU z, r, h~ and the recurrent candidate term h_{t-1}·Rh^T + Rbh; vanilla none.
RECORDED_GATES = {"vanilla": 0, "lstm": 4, "gru": 4}


@dataclass(frozen=True)
class Trace:
    """What a forward pass records: hidden states y [T, N, H], LSTM cell states c [T, N, H],
    and per-step gate values gates [T, N, RECORDED_GATES·H] (None where the cell has none, and y
    None where the backward does not read it: LSTM and GRU at T = 1)."""

    y: np.ndarray | None
    c: np.ndarray | None
    gates: np.ndarray | None


def _sigmoid(a: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-a))


def _candidate(a: np.ndarray, activation: str) -> np.ndarray:
    return np.tanh(a) if activation == "tanh" else np.maximum(a, 0.0)


def _candidate_grad(value: np.ndarray, activation: str) -> np.ndarray:
    """Derivative of the GRU candidate activation, from its output value."""
    return 1.0 - value * value if activation == "tanh" else (value > 0).astype(value.dtype)


def step(
    cell: str, xw_t: np.ndarray, rec: np.ndarray, h: np.ndarray, c: np.ndarray | None = None, activation: str = "tanh"
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """One step from state h (and c) [N, H], given its projected input xw_t and recurrent term
    rec = h·R^T + Rb [N, G·H]: (h_t, c_t or None, the recorded gate values or None)."""
    if cell == "vanilla":
        return np.maximum(xw_t + rec, 0.0), None, None
    if cell == "lstm":
        a = xw_t + rec
        i, o, f = (_sigmoid(p) for p in np.split(a[:, : 3 * h.shape[1]], 3, axis=1))
        cand = np.tanh(a[:, 3 * h.shape[1] :])
        c = f * c + i * cand
        return o * np.tanh(c), c, np.concatenate([i, o, f, cand], axis=1)
    if cell == "gru":
        xz, xr, xh = np.split(xw_t, 3, axis=1)
        rz, rr, rh = np.split(rec, 3, axis=1)
        z, rg = _sigmoid(xz + rz), _sigmoid(xr + rr)
        cand = _candidate(xh + rg * rh, activation)
        return (1.0 - z) * cand + z * h, None, np.concatenate([z, rg, cand, rh], axis=1)
    raise ValueError(f"unknown cell {cell!r}; valid: {', '.join(GATES)}")


def forward(
    cell: str,
    xw: np.ndarray,
    r: np.ndarray,
    rb: np.ndarray,
    h0: np.ndarray,
    c0: np.ndarray | None = None,
    activation: str = "tanh",
) -> Trace:
    """Run the cell over the sequence from state h0 (and c0), recording what the backward needs."""
    h, c = h0, c0
    ys, cs, recorded = [], [], []
    for xw_t in xw:
        h, c, gates = step(cell, xw_t, h @ r.T + rb, h, c, activation)
        ys.append(h)
        if c is not None:
            cs.append(c)
        if gates is not None:
            recorded.append(gates)
    return Trace(
        y=np.stack(ys),
        c=np.stack(cs) if cs else None,
        gates=np.stack(recorded) if recorded else None,
    )


def backward(
    cell: str,
    dy: np.ndarray,
    r: np.ndarray,
    h0: np.ndarray,
    trace: Trace,
    c0: np.ndarray | None = None,
    activation: str = "tanh",
) -> tuple[np.ndarray, np.ndarray]:
    """Gradients of sum(Y·dY) with respect to the recurrent weights r [G·H, H] and the biases
    [Wb, Rb] [2·G·H] (ONNX's B layout), by back-propagation through time over the trace."""
    steps = dy.shape[0]
    dh_rec = np.zeros_like(h0)
    dc_next = np.zeros_like(h0)
    dr = np.zeros_like(r)
    dwb = np.zeros(r.shape[0])
    drb = np.zeros(r.shape[0])
    for t in reversed(range(steps)):
        dh = dy[t] + dh_rec
        h_prev = h0 if t == 0 else trace.y[t - 1]
        direct = 0.0
        if cell == "vanilla":
            d_x = d_rec = dh * (trace.y[t] > 0)
        elif cell == "lstm":
            i, o, f, cand = np.split(trace.gates[t], 4, axis=1)
            c_prev = c0 if t == 0 else trace.c[t - 1]
            tc = np.tanh(trace.c[t])
            dc = dc_next + dh * o * (1.0 - tc * tc)
            dc_next = dc * f
            d_x = d_rec = np.concatenate(
                [
                    dc * cand * i * (1.0 - i),
                    dh * tc * o * (1.0 - o),
                    dc * c_prev * f * (1.0 - f),
                    dc * i * (1.0 - cand * cand),
                ],
                axis=1,
            )
        elif cell == "gru":
            z, rg, cand, rh = np.split(trace.gates[t], 4, axis=1)
            dah = dh * (1.0 - z) * _candidate_grad(cand, activation)
            daz = dh * (h_prev - cand) * z * (1.0 - z)
            dar = dah * rh * rg * (1.0 - rg)
            d_x = np.concatenate([daz, dar, dah], axis=1)
            d_rec = np.concatenate([daz, dar, dah * rg], axis=1)
            direct = dh * z
        else:
            raise ValueError(f"unknown cell {cell!r}; valid: {', '.join(GATES)}")
        dr += d_rec.T @ h_prev
        dwb += d_x.sum(axis=0)
        drb += d_rec.sum(axis=0)
        dh_rec = d_rec @ r + direct
    return dr, np.concatenate([dwb, drb])
