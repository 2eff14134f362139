"""Outputs that are linear in one input (GEMM, sparse GEMM, the three convolution passes, int8
`integer` forms) seen along one axis: the output projected on probe vectors over that axis, and the
same projection of the reference computed without the reference itself (Freivalds: Y·z against
A·(B·z)), in float64, for a fraction of the reference's multiply-adds.

Each view also bounds what float64 rounding can add to one projected element (`rounding`), so a
comparison can keep that apart from the runtime's error."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from dbench.catalog.kernels import ConvKernel
from dbench.gen import conv_math

CHUNK_ELEMENTS = 2**20
"""Float64 copies of operands are made this many elements at a time (8 MB, one buffer reused): memory
stays bounded, and little fresh memory is touched (slow on a VM: 5 to 7 s per GiB on this one under load)."""
UNIT_ROUNDOFF = 2.0**-53


def gamma(n: int) -> float:
    """Higham's γ_n = n·u / (1 - n·u): bounds the relative rounding error of a float64 sum of n terms
    in any order, relative to the sum of their magnitudes."""
    return n * UNIT_ROUNDOFF / (1 - n * UNIT_ROUNDOFF)


def abs_max(array: np.ndarray) -> float:
    """max|array| without a temporary the size of the array (a multi-GB weight)."""
    if array.size == 0:
        return 0.0
    return float(max(abs(np.max(array).astype(np.float64)), abs(np.min(array).astype(np.float64))))


def times(a: np.ndarray, z: np.ndarray) -> np.ndarray:
    """a [..., r, c] (any numeric dtype) · z [c, p] in float64, a block of rows at a time through one
    reused float64 buffer (fresh memory is slow to touch on a VM, and a multi-GB weight would be)."""
    rows, batch = a.shape[-2], a.shape[:-2]
    step = max(1, min(rows, CHUNK_ELEMENTS // max(1, a.shape[-1] * int(np.prod(batch, dtype=np.int64)))))
    out = np.empty((*batch, rows, z.shape[1]))
    buffer = np.empty((*batch, step, a.shape[-1]))
    for start in range(0, rows, step):
        block = buffer[..., : min(step, rows - start), :]
        np.copyto(block, a[..., start : start + step, :])
        out[..., start : start + step, :] = block @ z
    return out


def left_times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a [..., n, k] (any numeric dtype) · b [..., k, p] (float64), accumulated over blocks of k through
    one reused float64 buffer."""
    k = a.shape[-1]
    step = max(1, min(k, CHUNK_ELEMENTS // max(1, int(np.prod(a.shape[:-1], dtype=np.int64)))))
    out = np.zeros((*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1]))
    buffer = np.empty((*a.shape[:-1], step))
    for start in range(0, k, step):
        block = buffer[..., : min(step, k - start)]
        np.copyto(block, a[..., start : start + step])
        out += block @ b[..., start : start + step, :]
    return out


class LinearOutput(ABC):
    """An output that is a sum of products of two inputs, projected along one of its axes (`width`
    long). Projections put the probes on the last axis: `[...discrepancy axes..., probes]`."""

    output: str
    width: int

    @abstractmethod
    def project_output(self, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        """The runtime's output y projected on the probes z [width, probes]."""

    @abstractmethod
    def project_reference(self, z: np.ndarray) -> np.ndarray:
        """The exact result projected on z, computed from the inputs without forming the result."""

    @property
    @abstractmethod
    def full_cost(self) -> float:
        """Multiply-adds of the whole reference."""

    @property
    @abstractmethod
    def probe_cost(self) -> float:
        """Multiply-adds of one probe's reference projection."""

    @abstractmethod
    def reference_magnitude(self) -> tuple[int, float]:
        """(additions along the longest path, sum of the magnitudes of the terms) bounding one
        projected reference element: its float64 rounding error is at most γ(path) times that sum."""

    def rounding(self, y_abs_max: float) -> float:
        """The most float64 rounding can move one projected element apart, both sides together."""
        path, magnitude = self.reference_magnitude()
        return gamma(path) * magnitude + gamma(self.width) * self.width * y_abs_max


@dataclass
class GemmOutput(LinearOutput):
    """output [..., n, m] = left [..., n, k] · right [..., k, m] (+ bias [..., n, m]), projected over m:
    one discrepancy per output row."""

    left: np.ndarray
    right: np.ndarray
    bias: np.ndarray | None = None
    output: str = "Y"

    @property
    def width(self) -> int:
        return self.right.shape[-1]

    @property
    def _batch(self) -> int:
        return int(np.prod(np.broadcast_shapes(self.left.shape[:-2], self.right.shape[:-2]), dtype=np.int64))

    def project_output(self, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        return times(y, z)

    def project_reference(self, z: np.ndarray) -> np.ndarray:
        out = left_times(self.left, times(self.right, z))
        if self.bias is not None:
            out += times(self.bias, z)
        return out

    @property
    def full_cost(self) -> float:
        return float(self._batch) * self.left.shape[-2] * self.left.shape[-1] * self.width

    @property
    def probe_cost(self) -> float:
        n, k, m = self.left.shape[-2], self.left.shape[-1], self.width
        return float(self._batch) * (k * m + n * k + n * m * (2 if self.bias is not None else 1))

    def reference_magnitude(self) -> tuple[int, float]:
        k, m = self.left.shape[-1], self.width
        magnitude = k * m * abs_max(self.left) * abs_max(self.right)
        if self.bias is not None:
            magnitude += m * abs_max(self.bias)
        return k + m + 1, magnitude


def _over_channels(images: np.ndarray, z: np.ndarray) -> np.ndarray:
    """An NCHW tensor projected over its channels, image by image (one float64 image at a time): [N, H, W, probes]."""
    return np.stack([np.einsum("chw,cz->hwz", image.astype(np.float64), z) for image in images])


def _multiply_adds(kernel: ConvKernel) -> float:
    """Multiply-adds of one convolution pass (forward and backward-data alike)."""
    return float(kernel.n) * kernel.k * kernel.group_c * kernel.r * kernel.s * kernel.out_h * kernel.out_w


def _grouped(kernel: ConvKernel, channels: np.ndarray) -> np.ndarray:
    """[groups·per_group, ...] -> [groups, per_group, ...]."""
    return channels.reshape(kernel.groups, channels.shape[0] // kernel.groups, *channels.shape[1:])


@dataclass
class ConvForward(LinearOutput):
    """Y [n, k, Q, P] = Conv(X, W), projected over the output channels k: one discrepancy per output
    pixel. The reference projection is a convolution with one output channel per group and probe."""

    kernel: ConvKernel
    x: np.ndarray
    w: np.ndarray
    output: str = "Y"

    @property
    def width(self) -> int:
        return self.kernel.k

    def project_output(self, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        return _over_channels(y, z)

    def project_reference(self, z: np.ndarray) -> np.ndarray:
        g, probes = self.kernel.groups, z.shape[1]
        # W'[g, z] = Σ over the group's output channels of z·W: a filter bank of g·probes channels.
        merged = np.einsum(
            "gkcrs,gkz->gzcrs", _grouped(self.kernel, self.w.astype(np.float64)), _grouped(self.kernel, z)
        )
        thin = dataclasses.replace(self.kernel, k=g * probes)
        y = conv_math.forward(thin, self.x.astype(np.float64), merged.reshape(g * probes, *merged.shape[2:]))
        return y.reshape(y.shape[0], g, probes, *y.shape[2:]).sum(axis=1).transpose(0, 2, 3, 1)

    @property
    def full_cost(self) -> float:
        return _multiply_adds(self.kernel)

    @property
    def probe_cost(self) -> float:
        kn = self.kernel
        return (
            float(kn.groups) * (kn.n * kn.group_c * kn.r * kn.s * kn.out_h * kn.out_w) + kn.k * kn.group_c * kn.r * kn.s
        )

    def reference_magnitude(self) -> tuple[int, float]:
        kn = self.kernel
        taps = kn.group_c * kn.r * kn.s
        return kn.k + taps + 1, kn.k * taps * abs_max(self.x) * abs_max(self.w)


@dataclass
class ConvBackwardData(LinearOutput):
    """dX [n, c, h, w] = ConvTranspose(dY, W), projected over the input channels c: one discrepancy per
    input pixel. The reference projection is a transposed convolution onto one channel per group and probe."""

    kernel: ConvKernel
    dy: np.ndarray
    w: np.ndarray
    output: str = "dX"

    @property
    def width(self) -> int:
        return self.kernel.c

    def project_output(self, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        return _over_channels(y, z)

    def project_reference(self, z: np.ndarray) -> np.ndarray:
        kn, probes = self.kernel, z.shape[1]
        # W'[k, z] = Σ over k's group's input channels of z·W[k]: k filters onto `probes` channels.
        w = _grouped(kn, self.w.astype(np.float64))  # [g, k/g, c/g, r, s]
        merged = np.einsum("gkcrs,gcz->gkzrs", w, _grouped(kn, z)).reshape(kn.k, probes, kn.r, kn.s)
        thin = dataclasses.replace(kn, c=kn.groups * probes)
        dx = conv_math.backward_data(thin, self.dy.astype(np.float64), merged)
        return dx.reshape(dx.shape[0], kn.groups, probes, *dx.shape[2:]).sum(axis=1).transpose(0, 2, 3, 1)

    @property
    def full_cost(self) -> float:
        return _multiply_adds(self.kernel)

    @property
    def probe_cost(self) -> float:
        kn = self.kernel
        return float(kn.n) * kn.k * kn.r * kn.s * kn.out_h * kn.out_w + kn.k * kn.group_c * kn.r * kn.s

    def reference_magnitude(self) -> tuple[int, float]:
        kn = self.kernel
        taps = (kn.k // kn.groups) * kn.r * kn.s
        return kn.c + taps + 1, kn.c * taps * abs_max(self.dy) * abs_max(self.w)


@dataclass
class ConvBackwardFilter(LinearOutput):
    """dW [k, c, r, s] from X and dY (groups = 1), projected over the output channels k: one discrepancy
    per filter tap and input channel. The reference projection first projects dY over k."""

    kernel: ConvKernel
    x: np.ndarray
    dy: np.ndarray
    output: str = "dW"

    @property
    def width(self) -> int:
        return self.kernel.k

    def project_output(self, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        return np.einsum("kcrs,kz->crsz", y.astype(np.float64), z)

    def project_reference(self, z: np.ndarray) -> np.ndarray:
        dy = np.einsum("nkqp,kz->nzqp", self.dy.astype(np.float64), z)
        thin = dataclasses.replace(self.kernel, k=z.shape[1])
        return conv_math.backward_filter(thin, self.x.astype(np.float64), dy).transpose(1, 2, 3, 0)

    @property
    def full_cost(self) -> float:
        kn = self.kernel
        return float(kn.n) * kn.k * kn.c * kn.r * kn.s * kn.out_h * kn.out_w

    @property
    def probe_cost(self) -> float:
        kn = self.kernel
        return float(kn.n) * kn.out_h * kn.out_w * (kn.k + kn.c * kn.r * kn.s)

    def reference_magnitude(self) -> tuple[int, float]:
        kn = self.kernel
        pixels = kn.n * kn.out_h * kn.out_w
        return kn.k + pixels + 1, kn.k * pixels * abs_max(self.x) * abs_max(self.dy)
