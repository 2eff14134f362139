"""float64 numpy convolution passes (NCHW) by direct summation over filter taps, independent of
ONNX's ops: the reference for the float graphs and the exact accumulator for the int8 ones.
Groups and dilations (beyond DeepBench's columns) are applied here too; W is [k, c/groups, r, s]."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dbench.catalog.kernels import ConvKernel


def _taps(kernel: ConvKernel) -> Iterator[tuple[int, int, slice, slice]]:
    """(i, j, row slice, column slice) of the padded input that filter tap (i, j) touches."""
    q, p = kernel.out_h, kernel.out_w
    for i in range(kernel.r):
        for j in range(kernel.s):
            top, left = i * kernel.dil_h, j * kernel.dil_w
            yield (
                i,
                j,
                slice(top, top + kernel.hstride * (q - 1) + 1, kernel.hstride),
                slice(left, left + kernel.wstride * (p - 1) + 1, kernel.wstride),
            )


def grouping(kernel: ConvKernel) -> dict:
    """Conv/ConvTranspose `group` and `dilations` attributes, present only when not 1 (DeepBench's
    graphs are unchanged)."""
    attrs = {"group": kernel.groups} if kernel.groups != 1 else {}
    if (kernel.dil_h, kernel.dil_w) != (1, 1):
        attrs["dilations"] = [kernel.dil_h, kernel.dil_w]
    return attrs


def _by_group(kernel: ConvKernel, tensor: np.ndarray) -> np.ndarray:
    """[n, channels, ...] -> [n, groups, channels / groups, ...]."""
    return tensor.reshape(tensor.shape[0], kernel.groups, tensor.shape[1] // kernel.groups, *tensor.shape[2:])


def _tap_weights(kernel: ConvKernel, w: np.ndarray, i: int, j: int) -> np.ndarray:
    """Tap (i, j) of W [k, c/g, r, s] as [g, k/g, c/g]."""
    return w[:, :, i, j].reshape(kernel.groups, kernel.k // kernel.groups, kernel.group_c)


def _pad(x: np.ndarray, kernel: ConvKernel) -> np.ndarray:
    return np.pad(x, ((0, 0), (0, 0), (kernel.pad_h, kernel.pad_h), (kernel.pad_w, kernel.pad_w)))


def forward(kernel: ConvKernel, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Y[n, k, Q, P] from X[n, c, h, w] and W[k, c/groups, r, s]."""
    xp = _pad(x, kernel)
    y = np.zeros((kernel.n, kernel.k, kernel.out_h, kernel.out_w))
    for i, j, rows, cols in _taps(kernel):
        part = np.einsum(
            "ngchw,gkc->ngkhw", _by_group(kernel, xp[:, :, rows, cols]), _tap_weights(kernel, w, i, j), optimize=True
        )
        y += part.reshape(y.shape)
    return y


def backward_data(kernel: ConvKernel, dy: np.ndarray, w: np.ndarray) -> np.ndarray:
    """dX[n, c, h, w] from dY[n, k, Q, P] and W."""
    dxp = _pad(np.zeros((kernel.n, kernel.c, kernel.h, kernel.w)), kernel)
    for i, j, rows, cols in _taps(kernel):
        part = np.einsum("ngkhw,gkc->ngchw", _by_group(kernel, dy), _tap_weights(kernel, w, i, j), optimize=True)
        dxp[:, :, rows, cols] += part.reshape(kernel.n, kernel.c, *part.shape[3:])
    return dxp[:, :, kernel.pad_h : kernel.pad_h + kernel.h, kernel.pad_w : kernel.pad_w + kernel.w]


def backward_filter(kernel: ConvKernel, x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """dW[k, c, r, s] from X and dY."""
    xp = _pad(x, kernel)
    dw = np.zeros((kernel.k, kernel.c, kernel.r, kernel.s))
    for i, j, rows, cols in _taps(kernel):
        dw[:, :, i, j] = np.einsum("nkhw,nchw->kc", dy, xp[:, :, rows, cols], optimize=True)
    return dw
