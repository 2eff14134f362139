"""int8 GEMM and convolution in PyTorch, on the graph's exact integer arithmetic (dbench/gen/int8.py).

CPU, the quantized engine (torch.backends.quantized.engine: x86 = fbgemm/oneDNN): quantized::linear
and quantized::conv2d take u8 activations with a zero point and s8 weights (zero point 0), sum in
32 bits and requantise (round half to even, saturate) to a u8 output: the `qlinear` form's
QLinearMatMul / QLinearConv exactly. The `qdq` form's symmetric int8 activations and output (zero
point 0) are the same values as u8 with zero point 128 (the engine's activation type), so it runs as
quantize_per_tensor -> quantized op -> dequantize. Scales are powers of two: the results are bit-exact.
The `integer` form (u8 x s8 -> s32, no requantisation) has no PyTorch call on the CPU.

CUDA: torch._int_mm (cuBLASLt, s8 x s8 -> s32) for GEMMs: `qdq` quantises X to s8, multiplies and
requantises with PyTorch's elementwise ops; `qlinear`'s u8 activations (zero point 128) are the same
values as s8 minus 128, and its output gets its zero point back. _int_mm's documented limits (rows >
16, K and M multiples of 8) make other shapes unsupported. PyTorch binds no int8 convolution on CUDA.

A constant weight is quantised and packed once (load); a weight fed per call is packed in every call."""

from __future__ import annotations

import warnings
from typing import Any

from dbench.errors import UnsupportedError
from dbench.runtimes.torch_kernels import TorchKernel, conv_geometry

INT_MM_MIN_ROWS = 17
INT_MM_MULTIPLE = 8
"""torch._int_mm on CUDA: self.size(0) > 16, self.size(1) and mat2.size(1) multiples of 8 (ATen's checks)."""
ENGINE_ZERO_POINT = 128
"""The quantized engine's activation type is u8: symmetric s8 values sit at zero point 128."""


def _quiet(call, *args):
    """A quantised-tensor call without PyTorch's deprecation warning for quantised dtypes (repeated per call)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return call(*args)


def check_int8(spec, device: str) -> None:
    """UnsupportedError, with the reason, for an int8 graph PyTorch has no call for on `device`."""
    batched = spec.family == "gemm" and spec.params.get("batch", 1) != 1
    if spec.form == "integer":
        raise UnsupportedError(
            "PyTorch has no u8 x s8 -> s32 call (torch._int_mm is s8 x s8; the quantized engine "
            "requantises to 8 bits): use --int8-form qlinear or qdq"
        )
    if batched:
        raise UnsupportedError(
            "PyTorch's int8 GEMMs (quantized::linear, torch._int_mm) take one 2-D weight: "
            "a batched int8 GEMM has no call"
        )
    if device == "cpu":
        return
    if spec.family == "conv":
        raise UnsupportedError("PyTorch binds no int8 convolution on CUDA (quantized::conv2d is the CPU engine's)")
    rows, depth = spec.inputs[0].shape
    columns = spec.inputs[1].shape[1]
    if rows < INT_MM_MIN_ROWS or depth % INT_MM_MULTIPLE or columns % INT_MM_MULTIPLE:
        raise UnsupportedError(
            f"torch._int_mm needs more than 16 rows and K, M multiples of 8; this GEMM is "
            f"[{rows}, {depth}] x [{depth}, {columns}]"
        )


class QuantizedEngine(TorchKernel):
    """CPU: quantized::linear / quantized::conv2d on prepacked weights."""

    def load(self, constants: dict[str, Any]) -> None:
        super().load(constants)
        self.packed = self._pack(constants["W"]) if "W" in constants else None

    def _pack(self, w):
        """The s8 weight as the engine's packed parameters (GEMM: [m, k] for linear; conv: NCHW)."""
        torch, scale = self.torch, self.spec.attrs["scales"]["w"]
        quantized = _quiet(torch.quantize_per_tensor, w.float() * scale, scale, 0, torch.qint8)
        if self.spec.family == "gemm":
            return torch.ops.quantized.linear_prepack(quantized.t().contiguous(), None)
        _, g = conv_geometry(self.spec)
        return torch.ops.quantized.conv2d_prepack(
            quantized, None, g["stride"], g["padding"], g["dilation"], g["groups"]
        )

    def arguments(self) -> None:
        torch, scales = self.torch, self.spec.attrs["scales"]
        x = self.inputs["X"]
        if self.spec.form == "qlinear":  # already u8 with zero point 128: the quantised tensor over the same bytes
            self.x = _quiet(
                torch.quantize_per_tensor,
                (x.float() - ENGINE_ZERO_POINT) * scales["x"],
                scales["x"],
                ENGINE_ZERO_POINT,
                torch.quint8,
            )
        else:
            self.x = x
        self.operator = torch.ops.quantized.linear if self.spec.family == "gemm" else torch.ops.quantized.conv2d
        self.result = None

    def run(self) -> None:
        torch, scales = self.torch, self.spec.attrs["scales"]
        packed = self.packed if self.packed is not None else self._pack(self.inputs["W"])
        x = self.x
        if self.spec.form == "qdq":
            x = _quiet(torch.quantize_per_tensor, x, scales["x"], ENGINE_ZERO_POINT, torch.quint8)
        y = self.operator(x, packed, scales["y"], ENGINE_ZERO_POINT)
        self.result = y.dequantize() if self.spec.form == "qdq" else y

    def outputs(self) -> dict[str, Any]:
        return {"Y": self.result if self.spec.form == "qdq" else self.result.int_repr()}

    def describe(self) -> dict[str, Any]:
        op = "quantized::linear" if self.spec.family == "gemm" else "quantized::conv2d"
        return {
            "call": op + (" between quantize_per_tensor and dequantize" if self.spec.form == "qdq" else ""),
            "quantized_engine": self.torch.backends.quantized.engine,
            "activation_zero_point": ENGINE_ZERO_POINT,
            "weight_packing": "at load" if self.packed is not None else "in every call (weights fed per call)",
        }


class IntMatmul(TorchKernel):
    """CUDA: torch._int_mm (s8 x s8 -> s32) with the form's quantisation around it."""

    def arguments(self) -> None:
        self.result = None

    def run(self) -> None:
        torch, scales, x = self.torch, self.spec.attrs["scales"], self.inputs["X"]
        if self.spec.form == "qdq":
            xq = torch.clamp(torch.round(x / scales["x"]), -128, 127).to(torch.int8)
        else:
            xq = (x.to(torch.int16) - ENGINE_ZERO_POINT).to(torch.int8)
        acc = torch._int_mm(xq, self.inputs["W"])
        steps = torch.clamp(torch.round(acc.float() * (scales["x"] * scales["w"] / scales["y"])), -128, 127)
        self.result = steps * scales["y"] if self.spec.form == "qdq" else (steps + ENGINE_ZERO_POINT).to(torch.uint8)

    def outputs(self) -> dict[str, Any]:
        return {"Y": self.result}

    def describe(self) -> dict[str, Any]:
        return {"call": "torch._int_mm with elementwise quantisation and requantisation"}


def int8_kernel(torch, spec, device: str) -> TorchKernel:
    """The PyTorch computation of an int8 graph on `device`, or UnsupportedError with the reason."""
    check_int8(spec, device)
    return QuantizedEngine(torch, spec, device) if device == "cpu" else IntMatmul(torch, spec, device)
