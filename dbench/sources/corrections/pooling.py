"""Pooling: MaxPool (every version), AveragePool-1, LpPool-18/-22, GlobalMaxPool, GlobalLpPool."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dbench.sources.corrections.base import VersionedOpRun, text, wide


@dataclass(frozen=True)
class Windows:
    """Where a pooling op's windows lie along each spatial axis: the padding before each axis and
    the number of outputs, from the spec's rules for auto_pad, pads, strides, dilations, ceil_mode."""

    begin: tuple[int, ...]
    end: tuple[int, ...]
    out: tuple[int, ...]


def windows(sizes, kernel, strides, dilations, pads, auto_pad, ceil_mode) -> Windows:  # noqa: ANN001
    """SAME_UPPER/SAME_LOWER: ceil(in / stride) outputs, the padding that needs split evenly with the
    odd one at the end (UPPER) or the start (LOWER); VALID: no padding; NOTSET: `pads` (begin values,
    then end values), floor (or ceil with ceil_mode) of the windows that fit, a window that would
    start in the end padding dropped."""
    nd = len(kernel)
    begin, end, out = [], [], []
    for i in range(nd):
        extent = (kernel[i] - 1) * dilations[i] + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            n = -(-sizes[i] // strides[i])
            total = max(0, (n - 1) * strides[i] + extent - sizes[i])
            first = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            begin.append(first), end.append(total - first), out.append(n)
            continue
        low, high = (0, 0) if auto_pad == "VALID" else (pads[i], pads[i + nd]) if pads else (0, 0)
        span = sizes[i] + low + high - extent
        n = (-(-span // strides[i]) if ceil_mode else span // strides[i]) + 1
        if ceil_mode and (n - 1) * strides[i] >= sizes[i] + low:
            n -= 1
        begin.append(low), end.append(high), out.append(n)
    return Windows(tuple(begin), tuple(end), tuple(out))


def pool(
    x: np.ndarray,
    kind: str,
    kernel,
    strides,
    dilations,
    where: Windows,
    count_include_pad: int = 0,  # noqa: ANN001
    p: float = 2,
    storage_order: int = 0,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(Y, Indices) of `kind` (max, average or lp) pooling of `x` over the windows `where` says. A
    padded position is never a value (max skips it, lp adds nothing); it counts in an average's
    divisor only with count_include_pad, and only inside the declared padding."""
    nd = len(kernel)
    sizes = x.shape[2:]
    reach = [
        max(0, (where.out[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] - where.begin[i] - (sizes[i] - 1))
        for i in range(nd)
    ]
    widths = [(0, 0), (0, 0)] + [(where.begin[i], reach[i]) for i in range(nd)]
    values = np.pad(wide(x), widths)
    real = np.pad(np.ones(sizes, dtype=bool), widths[2:])
    declared = np.ones(real.shape, dtype=bool)
    for i in range(nd):
        inside = np.arange(real.shape[i]) < where.begin[i] + sizes[i] + where.end[i]
        declared &= inside.reshape([-1 if a == i else 1 for a in range(nd)])
    best = np.full((*x.shape[:2], *where.out), -np.inf)
    argbest = np.zeros((*x.shape[:2], *where.out), dtype=np.int64)
    total = np.zeros((*x.shape[:2], *where.out))
    count = np.zeros(where.out)
    grids = np.meshgrid(*[np.arange(n) for n in sizes], indexing="ij")
    if storage_order and nd == 2:
        flat_position = grids[0] + grids[1] * sizes[0]
    else:
        flat_position = np.ravel_multi_index(grids, sizes) if nd else np.zeros((), dtype=np.int64)
    position = np.pad(flat_position, widths[2:])
    for k in np.ndindex(*kernel):
        take = tuple(
            slice(k[i] * dilations[i], k[i] * dilations[i] + strides[i] * (where.out[i] - 1) + 1, strides[i])
            for i in range(nd)
        )
        tap, valid = values[(slice(None), slice(None), *take)], real[take]
        if kind == "max":
            better = valid & (tap > best)
            best = np.where(better, tap, best)
            argbest = np.where(better, position[take], argbest)
        elif kind == "lp":
            total += np.where(valid, np.abs(tap) ** p, 0.0)
        else:
            total += np.where(valid, tap, 0.0)
            count += declared[take] if count_include_pad else valid
    if kind == "max":
        base = (np.arange(x.shape[0])[:, None] * x.shape[1] + np.arange(x.shape[1])[None, :]) * math.prod(sizes)
        indices = argbest + base.reshape(*base.shape, *([1] * nd))
        return best.astype(x.dtype), indices
    if kind == "lp":
        return (total ** (1.0 / p)).astype(x.dtype), None
    return (total / count).astype(x.dtype), None


def _settings(x: np.ndarray, kernel_shape, strides, dilations):  # noqa: ANN001, ANN202
    nd = x.ndim - 2
    return list(kernel_shape), list(strides or [1] * nd), list(dilations or [1] * nd)


class MaxPoolSpec(VersionedOpRun):
    """MaxPool, every version: the maximum over each window (pads, auto_pad, strides, dilations and
    ceil_mode by the spec's rules), and Indices, the flat position of each maximum in X (row major,
    or column major over the spatial axes with storage_order=1). onnx.reference takes the end
    padding of an axis for its start (asymmetric pads give wrong shapes and values), sizes
    SAME_LOWER's output by floor instead of ceil, and fails on some dilated or 1-D windows."""

    def _run(
        self,
        x,
        auto_pad="NOTSET",
        ceil_mode=0,
        dilations=None,
        kernel_shape=None,
        pads=None,  # noqa: ANN001, ANN202
        storage_order=0,
        strides=None,
    ):
        kernel, step, dilation = _settings(x, kernel_shape, strides, dilations)
        where = windows(x.shape[2:], kernel, step, dilation, pads, text(auto_pad), ceil_mode)
        y, indices = pool(x, "max", kernel, step, dilation, where, storage_order=storage_order)
        return (y, indices)[: max(1, self.outputs_wanted())]


class AveragePoolExcludingPads(VersionedOpRun):
    """AveragePool-1: "The output of each pooling window is divided by the number of elements exclude
    pad." onnx.reference divides by the whole window, padding included."""

    def _run(self, x, auto_pad="NOTSET", kernel_shape=None, pads=None, strides=None):  # noqa: ANN001, ANN202
        kernel, step, dilation = _settings(x, kernel_shape, strides, None)
        where = windows(x.shape[2:], kernel, step, dilation, pads, text(auto_pad), 0)
        return (pool(x, "average", kernel, step, dilation, where)[0],)


class LpPoolSpec(VersionedOpRun):
    """LpPool-18 and -22: (sum of |x|^p over each window)^(1/p), with ceil_mode and dilations.
    onnx.reference's windows with ceil_mode differ from the spec's (the last window is lost)."""

    def _run(self, x, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, p=2, pads=None, strides=None):  # noqa: ANN001, ANN202
        kernel, step, dilation = _settings(x, kernel_shape, strides, dilations)
        where = windows(x.shape[2:], kernel, step, dilation, pads, text(auto_pad), ceil_mode)
        return (pool(x, "lp", kernel, step, dilation, where, p=float(p))[0],)


class GlobalPool(VersionedOpRun):
    """GlobalMaxPool and GlobalLpPool, every version: the maximum (or the p-norm, p default 2) over all
    spatial axes, which stay as size 1. onnx.reference's GlobalMaxPool drops the channel axis of a 3-D
    input, and it has no GlobalLpPool."""

    def _run(self, x, p=2):  # noqa: ANN001, ANN202
        axes = tuple(range(2, x.ndim))
        if self.onnx_node.op_type == "GlobalMaxPool":
            return (np.max(x, axis=axes, keepdims=True),)
        return (((np.abs(wide(x)) ** float(p)).sum(axis=axes, keepdims=True) ** (1.0 / float(p))).astype(x.dtype),)
