"""Upsample (7, 9, 10) and Resize-10: the resampling ops before Resize-11's coordinate modes."""

from __future__ import annotations

import math

import numpy as np

from dbench.sources.corrections.base import VersionedOpRun, text, wide


def _nearest(x: np.ndarray, axis: int, scale: np.float32, size: int) -> np.ndarray:
    original = np.arange(size, dtype=np.float32) / scale
    picks = np.floor(original) if scale >= 1 else np.ceil(original)
    return np.take(x, np.clip(picks.astype(np.int64), 0, x.shape[axis] - 1), axis=axis)


def _linear(x: np.ndarray, axis: int, scale: np.float32, size: int) -> np.ndarray:
    original = np.minimum(np.arange(size, dtype=np.float32) / scale, np.float32(x.shape[axis] - 1)).astype(np.float64)
    low = np.floor(original).astype(np.int64)
    high = np.minimum(low + 1, x.shape[axis] - 1)
    weight = (original - low).reshape([-1 if a == axis else 1 for a in range(x.ndim)])
    return np.take(x, low, axis=axis) * (1 - weight) + np.take(x, high, axis=axis) * weight


def resample(x: np.ndarray, scales: np.ndarray, mode: str) -> np.ndarray:
    """`x` resized by `scales` to floor(size * scale) per axis: output coordinate i reads the input
    at i / scale (computed in float32); nearest takes floor of it when enlarging, ceil when shrinking;
    linear interpolates between the two neighbours, clamped at the last element."""
    y = wide(x)
    for axis, scale in enumerate(np.asarray(scales, dtype=np.float32).ravel()):
        size = math.floor(x.shape[axis] * float(scale))
        if size == x.shape[axis] and scale == 1:
            continue
        y = (_linear if mode == "linear" else _nearest)(y, axis, scale, size)
    return y.astype(x.dtype)


class ResampleAsymmetric(VersionedOpRun):
    """Upsample-7 (`scales` attribute), -9 and -10, and Resize-10 (`scales` input): output size
    floor(input size * scale); the spec does not say how an output coordinate maps to the input one,
    and dbench takes what ONNX Runtime and OpenVINO both do for these versions (see `resample`).
    onnx.reference cannot run Upsample-7 or Resize-10 and has no linear Upsample."""

    def _run(self, x, scales=None, mode="nearest"):  # noqa: ANN001, ANN202
        return (resample(x, np.asarray(scales), text(mode)),)
