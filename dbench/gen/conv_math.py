"""float64 numpy convolution passes (NCHW) by direct summation over filter taps, independent of
ONNX's ops: the reference for the float graphs and the exact accumulator for the int8 ones."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from dbench.catalog.kernels import ConvKernel


def _taps(kernel: ConvKernel) -> Iterator[tuple[int, int, slice, slice]]:
    """(i, j, row slice, column slice) of the padded input that filter tap (i, j) touches."""
    q, p = kernel.out_h, kernel.out_w
    for i in range(kernel.r):
        for j in range(kernel.s):
            yield i, j, slice(i, i + kernel.hstride * (q - 1) + 1, kernel.hstride), slice(j, j + kernel.wstride * (p - 1) + 1, kernel.wstride)


def _pad(x: np.ndarray, kernel: ConvKernel) -> np.ndarray:
    return np.pad(x, ((0, 0), (0, 0), (kernel.pad_h, kernel.pad_h), (kernel.pad_w, kernel.pad_w)))


def forward(kernel: ConvKernel, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Y[n, k, Q, P] from X[n, c, h, w] and W[k, c, r, s]."""
    xp = _pad(x, kernel)
    y = np.zeros((kernel.n, kernel.k, kernel.out_h, kernel.out_w))
    for i, j, rows, cols in _taps(kernel):
        y += np.einsum("nchw,kc->nkhw", xp[:, :, rows, cols], w[:, :, i, j], optimize=True)
    return y


def backward_data(kernel: ConvKernel, dy: np.ndarray, w: np.ndarray) -> np.ndarray:
    """dX[n, c, h, w] from dY[n, k, Q, P] and W."""
    dxp = _pad(np.zeros((kernel.n, kernel.c, kernel.h, kernel.w)), kernel)
    for i, j, rows, cols in _taps(kernel):
        dxp[:, :, rows, cols] += np.einsum("nkhw,kc->nchw", dy, w[:, :, i, j], optimize=True)
    return dxp[:, :, kernel.pad_h:kernel.pad_h + kernel.h, kernel.pad_w:kernel.pad_w + kernel.w]


def backward_filter(kernel: ConvKernel, x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """dW[k, c, r, s] from X and dY."""
    xp = _pad(x, kernel)
    dw = np.zeros((kernel.k, kernel.c, kernel.r, kernel.s))
    for i, j, rows, cols in _taps(kernel):
        dw[:, :, i, j] = np.einsum("nkhw,nchw->kc", dy, xp[:, :, rows, cols], optimize=True)
    return dw
