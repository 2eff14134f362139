"""RNN, GRU and LSTM, every version."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dbench.sources.corrections.base import VersionedOpRun, text, wide

Activation = Callable[[np.ndarray], np.ndarray]
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTIVATIONS = {"RNN": ("Tanh",), "GRU": ("Sigmoid", "Tanh"), "LSTM": ("Sigmoid", "Tanh", "Tanh")}
FUNCTIONS: dict[str, tuple[tuple[float | None, float | None], Callable[[np.ndarray, float, float], np.ndarray]]] = {
    "relu": ((None, None), lambda x, a, b: np.maximum(x, 0)),
    "tanh": ((None, None), lambda x, a, b: np.tanh(x)),
    "sigmoid": ((None, None), lambda x, a, b: 1 / (1 + np.exp(-x))),
    "affine": ((1.0, 0.0), lambda x, a, b: a * x + b),
    "leakyrelu": ((0.01, None), lambda x, a, b: np.where(x >= 0, x, a * x)),
    "thresholdedrelu": ((1.0, None), lambda x, a, b: np.where(x > a, x, 0.0)),
    "scaledtanh": ((1.0, 1.0), lambda x, a, b: a * np.tanh(b * x)),
    "hardsigmoid": ((0.2, 0.5), lambda x, a, b: np.clip(a * x + b, 0, 1)),
    "elu": ((1.0, None), lambda x, a, b: np.where(x >= 0, x, a * (np.exp(x) - 1))),
    "softsign": ((None, None), lambda x, a, b: x / (1 + np.abs(x))),
    "softplus": ((None, None), lambda x, a, b: np.log1p(np.exp(x))),
}
"""The spec's activation functions: (default alpha, default beta; None where it takes none), formula."""


def activations(
    op: str, names: list[Any] | None, alphas: list[float] | None, betas: list[float] | None, directions: int
) -> list[list[Activation]]:
    """Each direction's activation functions. activation_alpha and activation_beta are consumed in
    order by the functions that take them; a function without its value takes the default of its op."""
    wanted = [text(n).lower() for n in names] if names else [n.lower() for n in DEFAULT_ACTIVATIONS[op]] * directions
    if len(wanted) == len(DEFAULT_ACTIVATIONS[op]) and directions == 2:
        wanted = wanted * 2
    alpha, beta = list(alphas or []), list(betas or [])
    made = []
    for name in wanted:
        (a, b), formula = FUNCTIONS[name]
        a = alpha.pop(0) if a is not None and alpha else a
        b = beta.pop(0) if b is not None and beta else b
        made.append(lambda x, f=formula, a=a, b=b: f(x, a, b))
    per = len(DEFAULT_ACTIVATIONS[op])
    return [made[d * per : (d + 1) * per] for d in range(directions)]


class RecurrentSpec(VersionedOpRun):
    """RNN, GRU and LSTM, every version, from the spec's equations: `activations` (with
    activation_alpha/beta), `clip` on the input of every activation, `sequence_lens` (a sequence's
    steps beyond its length leave Y at 0 and do not move Y_h/Y_c), `direction`, `layout` (14+),
    GRU's `linear_before_reset`, LSTM's peepholes P and `input_forget`. onnx.reference ignores
    sequence_lens, clip, activations and input_forget, and has no RNN-1, GRU-1 or LSTM-1."""

    def _run(self, x, w, r, b=None, sequence_lens=None, initial_h=None, initial_c=None, p=None, **attributes):  # noqa: ANN001, ANN003, ANN202
        op = self.onnx_node.op_type
        layout = attributes.get("layout") or 0
        if layout:
            x = np.swapaxes(x, 0, 1)
            initial_h = None if initial_h is None else np.swapaxes(initial_h, 0, 1)
            initial_c = None if initial_c is None else np.swapaxes(initial_c, 0, 1)
        seq, batch = x.shape[:2]
        directions, hidden = w.shape[0], r.shape[-1]
        gates = GATES[op]
        direction = text(attributes.get("direction") or "forward")
        lengths = np.full(batch, seq) if sequence_lens is None else np.asarray(sequence_lens).astype(np.int64)
        functions = activations(
            op,
            attributes.get("activations"),
            attributes.get("activation_alpha"),
            attributes.get("activation_beta"),
            directions,
        )
        clip = attributes.get("clip")
        y = np.zeros((seq, directions, batch, hidden))
        y_h, y_c = np.zeros((directions, batch, hidden)), np.zeros((directions, batch, hidden))
        for d in range(directions):
            bias = wide(b[d]) if b is not None else np.zeros(2 * gates * hidden)
            state = _State(
                wide(initial_h[d]) if initial_h is not None else np.zeros((batch, hidden)),
                wide(initial_c[d]) if initial_c is not None else np.zeros((batch, hidden)),
            )
            step = _STEPS[op]
            backwards = direction == "reverse" or d == 1
            for t in range(seq - 1, -1, -1) if backwards else range(seq):
                active = (t < lengths)[:, None]
                new = step(
                    wide(x[t]),
                    wide(w[d]),
                    wide(r[d]),
                    bias,
                    None if p is None else wide(p[d]),
                    state,
                    functions[d],
                    clip,
                    attributes,
                )
                state = _State(np.where(active, new.h, state.h), np.where(active, new.c, state.c))
                y[t, d] = np.where(active, new.h, 0.0)
            y_h[d], y_c[d] = state.h, state.c
        if layout:
            y, y_h, y_c = y.transpose(2, 0, 1, 3), y_h.transpose(1, 0, 2), y_c.transpose(1, 0, 2)
        results = (y, y_h, y_c) if op == "LSTM" else (y, y_h)
        return tuple(a.astype(x.dtype) for a in results[: max(1, self.outputs_wanted())])


class _State:
    def __init__(self, h: np.ndarray, c: np.ndarray) -> None:
        self.h, self.c = h, c


def _clipped(value: np.ndarray, clip: float | None) -> np.ndarray:
    return value if clip is None else np.clip(value, -clip, clip)


def _rnn_step(x, w, r, bias, p, state, f, clip, attributes):  # noqa: ANN001, ANN202, ARG001
    wb, rb = np.split(bias, 2)
    return _State(f[0](_clipped(x @ w.T + state.h @ r.T + wb + rb, clip)), state.c)


def _gru_step(x, w, r, bias, p, state, f, clip, attributes):  # noqa: ANN001, ANN202, ARG001
    wz, wr, wh = np.split(w, 3)
    rz, rr, rh = np.split(r, 3)
    wbz, wbr, wbh, rbz, rbr, rbh = np.split(bias, 6)
    z = f[0](_clipped(x @ wz.T + state.h @ rz.T + wbz + rbz, clip))
    reset = f[0](_clipped(x @ wr.T + state.h @ rr.T + wbr + rbr, clip))
    if attributes.get("linear_before_reset"):
        candidate = f[1](_clipped(x @ wh.T + reset * (state.h @ rh.T + rbh) + wbh, clip))
    else:
        candidate = f[1](_clipped(x @ wh.T + (reset * state.h) @ rh.T + rbh + wbh, clip))
    return _State((1 - z) * candidate + z * state.h, state.c)


def _lstm_step(x, w, r, bias, p, state, f, clip, attributes):  # noqa: ANN001, ANN202, ARG001
    gates = x @ w.T + state.h @ r.T + np.add(*np.split(bias, 2))
    i, o, forget, c = np.split(gates, 4, axis=-1)
    pi, po, pf = np.split(p, 3) if p is not None else (0.0, 0.0, 0.0)
    i = f[0](_clipped(i + pi * state.c, clip))
    forget = 1 - i if attributes.get("input_forget") else f[0](_clipped(forget + pf * state.c, clip))
    cell = forget * state.c + i * f[1](_clipped(c, clip))
    o = f[0](_clipped(o + po * cell, clip))
    return _State(o * f[2](cell), cell)


_STEPS = {"RNN": _rnn_step, "GRU": _gru_step, "LSTM": _lstm_step}
