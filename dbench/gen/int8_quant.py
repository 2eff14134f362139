"""int8 quantisation choices as data: integer types, zero points, power-of-two scales, feed ranges,
DeepBench's padding rule, and the ONNX requantisation rule (round half to even, saturate).

Scales are powers of two so every runtime's float arithmetic on them is exact, which makes the
integer and QLinear outputs bit-exact against a numpy reference on any machine."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dbench.catalog.kernels import ConvKernel, GemmKernel
from dbench.errors import UsageError
from dbench.gen.options import INT8_FORMS

PAD_MULTIPLE = 4

# Weights are drawn from [-64, 63] (7 bits, ONNX Runtime's `reduce_range`): u8 x s8 kernels that sum
# pairs of products in 16 bits with saturation (x86 AVX2 without VNNI, vpmaddubsw) then stay exact.
WEIGHT_RANGE = (-64, 63)
X_SCALE = 2.0**-7  # activations represent [-1, 1)
W_SCALE = 2.0**-6  # weights represent [-1, 1)
# Spread of a centred activation ([-128, 127]) and weight ([-64, 63]) drawn uniformly, and the
# spread wanted for the requantised output, so that +-4 sigma fills the 8-bit range.
X_STD = 256 / math.sqrt(12)
W_STD = 128 / math.sqrt(12)
OUTPUT_STD = 32.0


@dataclass(frozen=True)
class FormTypes:
    """The integer types the kernel sees for activation x, weight w and output y, and their zero points."""

    x: str
    w: str
    y: str
    x_zero: int
    w_zero: int
    y_zero: int


FORM_TYPES = {
    # u8 activations (zero point 128), s8 weights, u8 output: MKL-DNN's u8s8u8, ONNX Runtime's fast CPU path.
    "qlinear": FormTypes("uint8", "int8", "uint8", 128, 0, 128),
    # symmetric s8 everywhere (zero points 0): the only int8 Q/DQ TensorRT accepts.
    "qdq": FormTypes("int8", "int8", "int8", 0, 0, 0),
    # u8 x s8 -> s32 without zero points: MKL's gemm_s8u8s32, DeepBench's 8-bit multiply, 32-bit accumulate.
    "integer": FormTypes("uint8", "int8", "int32", 0, 0, 0),
}

INT_LIMITS = {"int8": (-128, 127), "uint8": (0, 255)}


def check_form(form: str) -> FormTypes:
    """The types of an int8 form, or a clear error naming the valid forms."""
    if form not in FORM_TYPES:
        raise UsageError(f"unknown int8 form {form!r}; valid: {', '.join(INT8_FORMS)}")
    return FORM_TYPES[form]


def _round_up(value: int) -> int:
    return -(-value // PAD_MULTIPLE) * PAD_MULTIPLE


def padded_dims(kernel: GemmKernel | ConvKernel) -> dict[str, int]:
    """DeepBench's int8 padding (NVIDIA `PAD_KERNELS`): GEMM M up to a multiple of 4; convolution C, H
    and W all up to multiples of 4 when any of them is not. Empty when the kernel is already aligned."""
    if isinstance(kernel, GemmKernel):
        return {"m": _round_up(kernel.m)} if kernel.m % PAD_MULTIPLE else {}
    dims = {"c": kernel.c, "h": kernel.h, "w": kernel.w}
    if all(v % PAD_MULTIPLE == 0 for v in dims.values()):
        return {}
    if kernel.groups != 1:
        raise UsageError(
            "DeepBench's int8 padding rule is for ungrouped convolutions; build grouped ones with --no-pad"
        )
    return {d: _round_up(v) for d, v in dims.items()}


def reduction_length(kernel: GemmKernel | ConvKernel) -> int:
    """How many products each output sums: K for a GEMM, C·R·S for a convolution."""
    if isinstance(kernel, GemmKernel):
        return kernel.k
    return kernel.group_c * kernel.r * kernel.s


def scales(reduction: int) -> dict[str, float]:
    """Power-of-two scales for x, w and y; y's is chosen from the reduction length so that the
    requantised output spreads over the 8-bit range instead of saturating."""
    shift = max(0, round(math.log2(X_STD * W_STD * math.sqrt(reduction) / OUTPUT_STD)))
    return {"x": X_SCALE, "w": W_SCALE, "y": X_SCALE * W_SCALE * 2.0**shift}


def round_saturate(values: np.ndarray, zero: int, dtype: str) -> np.ndarray:
    """ONNX's QuantizeLinear rule, also used by the QLinear ops: round half to even, add the zero
    point, saturate to the type's range."""
    low, high = INT_LIMITS[dtype]
    return np.clip(np.rint(values) + zero, low, high).astype(dtype)


def requantize(acc: np.ndarray, scale: dict[str, float], y_zero: int, dtype: str) -> np.ndarray:
    """An integer accumulator to the 8-bit output: acc · sx·sw/sy (exact: powers of two), rounded,
    plus the zero point, saturated."""
    return round_saturate(acc.astype(np.float64) * (scale["x"] * scale["w"] / scale["y"]), y_zero, dtype)
