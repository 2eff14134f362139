"""Ops whose early versions (before opset 7 or so) onnx.reference gets wrong or cannot run, and other
tensor ops: element-wise ops with `broadcast`/`axis`, Gemm-1/-6, Cast-1, Clip-1, Dropout-1/-6,
Reshape-1, Split-1, Concat-1, Tile-1, Mean with broadcasting, Pad with negative pads, Scatter."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from dbench.sources.corrections.base import VersionedOpRun, text, wide

LEGACY_BINARY = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": np.divide,
    "Pow": np.power,
    "And": np.logical_and,
    "Or": np.logical_or,
    "Xor": np.logical_xor,
    "Equal": np.equal,
    "Greater": np.greater,
    "Less": np.less,
}


def legacy_broadcast(a: np.ndarray, b: np.ndarray, broadcast: int, axis: int | None) -> np.ndarray:
    """`b` laid against `a` by the rule of the versions before 7: with broadcast=1, B's shape is a
    contiguous run of A's starting at `axis` (by default the trailing run: numpy's alignment)."""
    if not broadcast or axis is None or b.ndim == 0:
        return b
    axis = axis + a.ndim if axis < 0 else axis
    return b.reshape((1,) * axis + b.shape + (1,) * (a.ndim - axis - b.ndim))


class LegacyBinary(VersionedOpRun):
    """Add, Sub, Mul, Div (1, 6) and Pow, And, Or, Xor, Equal, Greater, Less (1): with broadcast=1,
    B's shape matches a contiguous run of A's dimensions starting at `axis` ("A = [2, 3, 4, 5],
    B = [3, 4], with axis=1"). onnx.reference cannot run these versions with their attributes."""

    def _run(self, a, b, axis=None, broadcast=0, consumed_inputs=None):  # noqa: ANN001, ANN202, ARG002
        formula = LEGACY_BINARY[self.onnx_node.op_type]
        with np.errstate(all="ignore"):
            result = formula(a, legacy_broadcast(a, b, broadcast, axis))
        return (np.asarray(result).astype(bool if result.dtype == bool else a.dtype),)


class GemmBroadcast(VersionedOpRun):
    """Gemm-1 and -6: Y = alpha * A' * B' + beta * C, C broadcast to [M, N] with broadcast=1.
    onnx.reference adds C without beta when broadcast is 0 (and has no Gemm-1)."""

    def _run(self, a, b, c, alpha=1.0, beta=1.0, broadcast=0, transA=0, transB=0):  # noqa: ANN001, ANN202, ARG002, N803
        a64, b64 = wide(a), wide(b)
        y = alpha * (a64.T if transA else a64) @ (b64.T if transB else b64) + beta * wide(c)
        return (y.astype(a.dtype),)


class CastByName(VersionedOpRun):
    """Cast-1: `to` is the TensorProto DataType's name ("FLOAT", "INT64"). onnx.reference reads it as
    a number."""

    def _run(self, x, to=None):  # noqa: ANN001, ANN202
        element = onnx.TensorProto.DataType.Value(text(to))
        return (x.astype(helper.tensor_dtype_to_np_dtype(element)),)


class ClipByAttributes(VersionedOpRun):
    """Clip-1: min and max are attributes; an absent one does not bound. onnx.reference has no Clip-1."""

    def _run(self, x, min=None, max=None, consumed_inputs=None):  # noqa: A002, ANN001, ANN202, ARG002
        low = -np.inf if min is None else min
        high = np.inf if max is None else max
        return (np.clip(x, low, high).astype(x.dtype),)


class DropoutTestMode(VersionedOpRun):
    """Dropout-1 and -6: with is_test set, "the output is simply Y = X" (and the mask all ones);
    without it (the default) training mode draws random numbers, which no reference reproduces.
    onnx.reference has neither version."""

    def _run(self, x, is_test=0, ratio=0.5, consumed_inputs=None):  # noqa: ANN001, ANN202, ARG002
        if not is_test:
            raise NotImplementedError(
                f"Dropout-{self.version} without is_test runs in training mode: it draws random numbers"
            )
        return (x.copy(), np.ones(x.shape, dtype=x.dtype))[: max(1, self.outputs_wanted())]


class ReshapeByAttribute(VersionedOpRun):
    """Reshape-1: the target shape is the `shape` attribute (0 copies the input's dimension, -1 is
    inferred). onnx.reference has no Reshape-1."""

    def _run(self, x, shape=None, consumed_inputs=None):  # noqa: ANN001, ANN202, ARG002
        target = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
        return (x.reshape(target),)


class SplitFirst(VersionedOpRun):
    """Split-1: the lengths come from the `split` attribute or the optional second input, else equal
    parts; `axis` defaults to 0. onnx.reference has no Split-1."""

    def _run(self, x, *given, axis=0, split=None):  # noqa: ANN001, ANN002, ANN202
        lengths = [int(n) for n in np.asarray(given[0]).ravel()] if given and given[0] is not None else split
        count = self.outputs_wanted()
        axis = 0 if axis is None else axis  # version 1 gives it no default; 0 as from version 2
        lengths = lengths or [x.shape[axis] // count] * count
        return tuple(np.split(x, np.cumsum(lengths)[:-1], axis=axis))


class ConcatDefaultAxis(VersionedOpRun):
    """Concat-1: `axis` may be left out and then is 1. onnx.reference requires it."""

    def _run(self, *inputs, axis=None):  # noqa: ANN002, ANN202
        return (np.concatenate(inputs, axis=1 if axis is None else axis),)


class TileAlongAxis(VersionedOpRun):
    """Tile-1: `tiles` copies of the input along `axis` (both inputs, of the input's type).
    onnx.reference runs Tile-6's repeats rule."""

    def _run(self, x, tiles, axis):  # noqa: ANN001, ANN202
        return (np.concatenate([x] * int(np.asarray(tiles).item()), axis=int(np.asarray(axis).item())),)


class MeanBroadcast(VersionedOpRun):
    """Mean-8 and -13: the element-wise mean of every input, broadcast together (numpy's rule).
    onnx.reference adds into the first input in place and fails when another one is larger."""

    def _run(self, *inputs):  # noqa: ANN002, ANN202
        total = sum(np.broadcast_arrays(*(wide(a) for a in inputs)))
        return ((total / len(inputs)).astype(inputs[0].dtype),)


class PadSpec(VersionedOpRun):
    """Pad-11 and later: pads from the input (begin values, then end values; on `axes` from 18), a
    negative pad removes elements, modes constant (constant_value, default 0), reflect, edge, wrap (19+).
    onnx.reference fails on negative pads."""

    def _run(self, x, pads, constant_value=None, axes=None, mode="constant"):  # noqa: ANN001, ANN202
        pads = [int(p) for p in np.asarray(pads).ravel()]
        axes = list(range(x.ndim)) if axes is None else [int(a) % x.ndim for a in np.asarray(axes).ravel()]
        begin, end = [0] * x.ndim, [0] * x.ndim
        for i, axis in enumerate(axes):
            begin[axis], end[axis] = pads[i], pads[i + len(axes)]
        crop = tuple(slice(max(0, -b), x.shape[i] - max(0, -e)) for i, (b, e) in enumerate(zip(begin, end)))
        widths = [(max(0, b), max(0, e)) for b, e in zip(begin, end)]
        kind = text(mode)
        if kind == "constant":
            value = 0 if constant_value is None or np.size(constant_value) == 0 else np.asarray(constant_value).item()
            return (np.pad(x[crop], widths, mode="constant", constant_values=value).astype(x.dtype),)
        return (np.pad(x[crop], widths, mode=kind).astype(x.dtype),)


class ScatterAsElements(VersionedOpRun):
    """Scatter-9 and -11: a copy of data with data[..., indices[i][j], ...] = updates[i][j] along
    `axis` (ScatterElements without reduction; negative indices count from the end in 11).
    onnx.reference has no Scatter."""

    def _run(self, data, indices, updates, axis=0):  # noqa: ANN001, ANN202
        result = data.copy()
        axis = axis % data.ndim
        where = list(np.indices(indices.shape))
        where[axis] = np.where(indices < 0, indices + data.shape[axis], indices).astype(np.int64)
        result[tuple(where)] = updates
        return (result,)
