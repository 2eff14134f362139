"""Softmax, LogSoftmax and Hardmax before version 13, BatchNormalization 6 to 13, LRN."""

from __future__ import annotations

import math

import numpy as np

from dbench.sources.corrections.base import VersionedOpRun, wide


def _rows(x: np.ndarray, axis: int) -> np.ndarray:
    """`x` coerced to 2-D at `axis` ([a0 * ... * a(k-1), ak * ... * a(n-1)]), in float64."""
    axis = axis + x.ndim if axis < 0 else axis
    return wide(x).reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


class SoftmaxCoerced(VersionedOpRun):
    """Softmax-1 and -11: "the input ... will be coerced into a 2-dimensional tensor with dimensions
    [a_0 * ... * a_{k-1}, a_k * ... * a_{n-1}]" at `axis` (default 1), and the softmax is taken over
    each row of that. onnx.reference computes Softmax-13's per-axis softmax for every version and
    defaults `axis` to -1: a [1, 1000, 1, 1] input gives all ones."""

    def _run(self, x, axis=1):  # noqa: ANN001, ANN202 (onnx.reference's calling convention)
        rows = _rows(x, axis)
        e = np.exp(rows - rows.max(axis=1, keepdims=True))
        return ((e / e.sum(axis=1, keepdims=True)).reshape(x.shape).astype(x.dtype),)


class LogSoftmaxCoerced(VersionedOpRun):
    """LogSoftmax-1 and -11: the log of the softmax over the rows of the input coerced to 2-D at `axis`
    (default 1), as Softmax-1/-11. onnx.reference takes LogSoftmax-13's per-axis rule, default -1."""

    def _run(self, x, axis=1):  # noqa: ANN001, ANN202
        rows = _rows(x, axis)
        shifted = rows - rows.max(axis=1, keepdims=True)
        return ((shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))).reshape(x.shape).astype(x.dtype),)


class HardmaxCoerced(VersionedOpRun):
    """Hardmax-1 and -11: 1 at the first maximum of each row of the input coerced to 2-D at `axis`
    (default 1), 0 elsewhere. onnx.reference takes Hardmax-13's per-axis rule, default -1."""

    def _run(self, x, axis=1):  # noqa: ANN001, ANN202
        rows = _rows(x, axis)
        y = np.zeros_like(rows)
        if rows.size:
            y[np.arange(rows.shape[0]), rows.argmax(axis=1)] = 1
        return (y.reshape(x.shape).astype(x.dtype),)


def _normalise(x, scale, bias, mean, var, epsilon, shape):  # noqa: ANN001, ANN202
    s, b, m, v = (a.reshape(shape) for a in (scale, bias, mean, var))
    return s * (x - m) / np.sqrt(v + epsilon) + b


class BatchNormalizationByMode(VersionedOpRun):
    """BatchNormalization-6, -7 and -9 (to -13). Test mode: Y = scale * (X - mean) / sqrt(var + epsilon)
    + B with the given statistics; training mode: the batch's own statistics, the outputs mean and
    var their running averages by `momentum`. The mode is `is_test` in version 6 (default 0: training)
    and the number of outputs from version 7 (`Output case #2: Y (test mode)`); `spatial`=0 (6, 7)
    keeps one statistic per activation ([C, D1, ...]). onnx.reference's BatchNormalization_9 moves
    Y's statistics by `momentum` (default 0.9) even on a one-output inference node, and it runs
    version 7 as version 6 with is_test=0, training on every node."""

    def _run(self, x, scale, bias, mean, var, epsilon=1e-5, momentum=0.9, spatial=1, is_test=None):  # noqa: ANN001, ANN202
        training = not is_test if self.version < 7 else self.outputs_wanted() > 1
        x64, scale64, bias64, mean64, var64 = (wide(a) for a in (x, scale, bias, mean, var))
        shape = (-1, *([1] * (x.ndim - 2))) if spatial else scale64.shape
        if not training:
            return (_normalise(x64, scale64, bias64, mean64, var64, epsilon, shape).astype(x.dtype),)
        axes = tuple(a for a in range(x.ndim) if a != 1) if spatial else (0,)
        batch_mean, batch_var = x64.mean(axis=axes), x64.var(axis=axes)
        y = _normalise(x64, scale64, bias64, batch_mean, batch_var, epsilon, shape)
        running_mean = mean64 * momentum + batch_mean * (1 - momentum)
        running_var = var64 * momentum + batch_var * (1 - momentum)
        results = (y, running_mean, running_var, batch_mean, batch_var)
        return tuple(r.astype(x.dtype) for r in results[: self.outputs_wanted()])


class LocalResponseNormalization(VersionedOpRun):
    """LRN-1 and -13: square_sum[n, c, ...] = sum of X[n, i, ...]^2 over the channels i from
    c - floor((size - 1) / 2) to c + ceil((size - 1) / 2), Y = X / (bias + alpha / size * square_sum)^beta,
    for every channel. onnx.reference's loop runs over the batch instead of the channels: only the
    first N channels are normalised (one channel at batch 1), the rest are divided by bias^beta."""

    def _run(self, x, alpha=1e-4, beta=0.75, bias=1.0, size=1):  # noqa: ANN001, ANN202
        square = wide(x) ** 2
        low, high = (size - 1) // 2, math.ceil((size - 1) / 2)
        padded = np.pad(square, [(0, 0), (low, high)] + [(0, 0)] * (x.ndim - 2))
        total = sum(padded[:, k : k + x.shape[1]] for k in range(size))
        return ((wide(x) / (bias + alpha / size * total) ** beta).astype(x.dtype),)
