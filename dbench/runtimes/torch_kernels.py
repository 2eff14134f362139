"""Each catalog kernel as PyTorch computes it, built from its GraphSpec (family, params, pass, form,
precision), never from the ONNX file: the GEMM with its transposes as strided views (the BLAS reads
them, nothing is copied), convolutions forward and backward through ATen's convolution ops (oneDNN on
the CPU, cuDNN on the GPU), sparse GEMM through torch.sparse beside its dense baseline. Recurrent
layers are in torch_rnn, int8 in torch_int8.

Weights named in `constants` are loaded once (`TorchKernel.load`): whatever the library packs from a
weight (a sparse format, a quantised weight's packing) is packed there. With weights fed per call,
that packing happens inside the timed call, as it would for a weight that changes every call. Layout
views and permutations of the ONNX buffers are made once, at `bind`, outside timing."""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from dbench.catalog.kernels import ConvKernel
from dbench.errors import UnsupportedError
from dbench.gen.graph import GraphSpec
from dbench.gen.precision import DTYPES

TORCH_DTYPES = {
    "float32": "float32",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "int8": "int8",
    "uint8": "uint8",
    "int32": "int32",
    "int64": "int64",
}
"""Manifest dtype name -> torch dtype attribute name."""


def to_tensor(torch, array: np.ndarray, device: str):
    """A feed as a tensor on `device` (on the CPU it shares the array's memory); bfloat16 (which numpy
    lacks) crosses as its 16-bit words."""
    array = np.asarray(array, order="C")
    if array.dtype == DTYPES["bfloat16"]:
        tensor = torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    else:
        tensor = torch.from_numpy(array)
    return tensor if device == "cpu" else tensor.to(device)


def to_numpy(torch, tensor) -> np.ndarray:
    """A result as a host numpy array in the spec's dtype (bfloat16 as ml_dtypes' type)."""
    tensor = tensor.detach().to("cpu").contiguous()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(DTYPES["bfloat16"])
    return tensor.numpy()


class TorchKernel(ABC):
    """One graph's computation in PyTorch: `load` the constant weights once, `bind` the per-call inputs
    once, `run` (the timed library call), `outputs` in the spec's names and shapes; `describe` names
    the library entry point in the row's runtime options."""

    def __init__(self, torch, spec: GraphSpec, device: str) -> None:
        self.torch, self.spec, self.device = torch, spec, device
        self.constants: dict[str, Any] = {}
        self.inputs: dict[str, Any] = {}

    def load(self, constants: dict[str, Any]) -> None:
        """Keep the constant weights (tensors on the device); kernels that pack a weight do it here."""
        self.constants = constants

    def bind(self, feeds: dict[str, Any]) -> None:
        """Take the per-call inputs (tensors on the device) and set up the call's arguments."""
        self.inputs = {**self.constants, **feeds}
        self.arguments()

    @abstractmethod
    def arguments(self) -> None:
        """Views, placeholders and output buffers of the call, from `self.inputs` (outside timing)."""

    @abstractmethod
    def run(self) -> None:
        """The library call(s) of one execution."""

    @abstractmethod
    def outputs(self) -> dict[str, Any]:
        """The last run's output tensors by the spec's output names, in the spec's shapes."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What this kernel calls, for the row's runtime options."""


def _dtype(torch, name: str):
    return getattr(torch, TORCH_DTYPES[name])


class Gemm(TorchKernel):
    """Form `gemm`: Y = op(B)·op(A) + C, ONNX Gemm(B, A, C, transA=b_t, transB=a_t), as one
    torch.addmm into a preallocated Y, the transposes as strided views. Form `matmul`: Y = X·W
    (batched when X and W have a batch axis) as torch.matmul into Y."""

    def arguments(self) -> None:
        torch, i, p = self.torch, self.inputs, self.spec.params
        out = self.spec.outputs[0]
        self.y = torch.empty(out.shape, dtype=_dtype(torch, out.dtype), device=self.device)
        if self.spec.form == "gemm":
            op_b = i["B"].t() if p["b_t"] else i["B"]
            op_a = i["A"].t() if p["a_t"] else i["A"]
            self.function, self.args = torch.addmm, (i["C"], op_b, op_a)
        else:
            self.function, self.args = torch.matmul, (i["X"], i["W"])

    def run(self) -> None:
        self.function(*self.args, out=self.y)

    def outputs(self) -> dict[str, Any]:
        return {"Y": self.y}

    def describe(self) -> dict[str, Any]:
        return {
            "call": "torch.addmm(C, op(B), op(A), out=Y)" if self.spec.form == "gemm" else "torch.matmul(X, W, out=Y)"
        }


def conv_geometry(spec: GraphSpec) -> tuple[ConvKernel, dict[str, Any]]:
    """The convolution kernel of a spec (int8's padded dimensions applied) and ATen's arguments."""
    kernel = ConvKernel(**{**spec.params, **spec.attrs.get("padded", {})})
    return kernel, {
        "stride": [kernel.hstride, kernel.wstride],
        "padding": [kernel.pad_h, kernel.pad_w],
        "dilation": [kernel.dil_h, kernel.dil_w],
        "groups": kernel.groups,
    }


class Conv(TorchKernel):
    """fwd: torch.nn.functional.conv2d(X, W); bwd_data: dX and bwd_filter: dW through
    torch.ops.aten.convolution_backward with only that gradient asked for (what torch.nn.grad's
    conv2d_input / conv2d_weight call, the placeholder for the tensor known only by its shape made once
    at bind). All three reach oneDNN on the CPU and cuDNN on the GPU."""

    CALLS = {
        "fwd": "torch.nn.functional.conv2d",
        "bwd_data": "torch.ops.aten.convolution_backward (grad input only, as torch.nn.grad.conv2d_input)",
        "bwd_filter": "torch.ops.aten.convolution_backward (grad weight only, as torch.nn.grad.conv2d_weight)",
    }

    def arguments(self) -> None:
        i = self.inputs
        _, self.geometry = conv_geometry(self.spec)
        g = self.geometry
        self.result = None
        if self.spec.pass_name == "fwd":
            self.args = (i["X"], i["W"])
        elif self.spec.pass_name == "bwd_data":
            shape = self.spec.outputs[0].shape
            self.args = (i["dY"], i["dY"].new_empty(1).expand(shape), i["W"], (True, False, False))
        elif self.spec.pass_name == "bwd_filter":
            shape = self.spec.outputs[0].shape
            self.args = (i["dY"], i["X"], i["dY"].new_empty(1).expand(shape), (False, True, False))
        else:
            raise UnsupportedError(f"no PyTorch call for convolution pass {self.spec.pass_name!r}")
        self.backward = (g["stride"], g["padding"], g["dilation"], False, [0], g["groups"])

    def run(self) -> None:
        torch = self.torch
        if self.spec.pass_name == "fwd":
            g = self.geometry
            self.result = torch.nn.functional.conv2d(
                *self.args, None, g["stride"], g["padding"], g["dilation"], g["groups"]
            )
            return
        grad_output, data, weight, mask = self.args
        grads = torch.ops.aten.convolution_backward(grad_output, data, weight, None, *self.backward, mask)
        self.result = grads[0] if mask[0] else grads[1]

    def outputs(self) -> dict[str, Any]:
        return {self.spec.outputs[0].name: self.result}

    def describe(self) -> dict[str, Any]:
        return {"call": self.CALLS.get(self.spec.pass_name, "")}


class Sparse(TorchKernel):
    """Form `sparse`: Y^T = S·op(B)^T with S = op(A)^T in CSR (torch.sparse_csr_tensor through
    Tensor.to_sparse_csr; MKL's sparse BLAS on the CPU, cuSPARSE on the GPU), cuSPARSE's csrmm as
    DeepBench ran it; Y is its transpose. Form `dense`: the same product as one dense torch.matmul
    into Y, the baseline of DeepBench's speedup column."""

    def load(self, constants: dict[str, Any]) -> None:
        super().load(constants)
        self.packed = self._compress(constants["A"]) if "A" in constants and self.spec.form == "sparse" else None

    def _compress(self, a):
        """S = op(A)^T = A if a_t else A^T, as CSR."""
        matrix = a if self.spec.params["a_t"] else a.t()
        with warnings.catch_warnings():  # "Sparse CSR tensor support is in beta state", at every conversion
            warnings.simplefilter("ignore", UserWarning)
            return matrix.contiguous().to_sparse_csr()

    def arguments(self) -> None:
        torch, i, p = self.torch, self.inputs, self.spec.params
        out = self.spec.outputs[0]
        if self.spec.form == "sparse":
            self.right = i["B"] if p["b_t"] else i["B"].t()  # op(B)^T, a view
            self.result = None
        else:
            op_b = i["B"].t() if p["b_t"] else i["B"]
            op_a = i["A"].t() if p["a_t"] else i["A"]
            self.args = (op_b, op_a)
            self.y = torch.empty(out.shape, dtype=_dtype(torch, out.dtype), device=self.device)

    def run(self) -> None:
        if self.spec.form == "dense":
            self.torch.matmul(*self.args, out=self.y)
            return
        packed = self.packed if self.packed is not None else self._compress(self.inputs["A"])
        self.result = self.torch.mm(packed, self.right)

    def outputs(self) -> dict[str, Any]:
        return {"Y": self.y if self.spec.form == "dense" else self.result.t()}

    def describe(self) -> dict[str, Any]:
        if self.spec.form == "dense":
            return {"call": "torch.matmul(op(B), op(A), out=Y)"}
        return {
            "call": "torch.mm(CSR op(A)^T, op(B)^T)",
            "sparse_weight": "packed at load"
            if self.packed is not None
            else "compressed to CSR in every call (weights fed per call)",
        }
