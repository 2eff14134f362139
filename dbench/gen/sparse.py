"""Sparse GEMM graphs: DeepBench's C (m x n) = A (m x k, `sparsity` fraction of zeros) · B (k x n),
run as a dense MatMul whose weight feed has that fraction of zeros, plus the dense baseline.

The buffers keep gemm.py's column-major mapping: A is [k, m] (role weight), B is [n, k]
(activation), and Y[n, m] = MatMul(B, A) — no C, since cuSPARSE runs with beta = 0. Transposed
kernels (not in DeepBench's lists) use Gemm(B, A, transA=b_t, transB=a_t) without C.
Form `sparse` zeroes `sparsity` of A's feed (fixed seed); form `dense` is the same graph with a fully
dense A, so a runner can report DeepBench's speedup column: dense time / sparse time.
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from dbench.catalog.kernels import SparseKernel
from dbench.errors import UnsupportedError, UsageError
from dbench.gen.family import PlannedGraph, float_tolerance, make_spec
from dbench.gen.gemm import buffer_operands, cublas_reference
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, make_model
from dbench.gen.options import GenOptions
from dbench.gen.precision import PRECISIONS, dtype_name, float_precision

SUPPORTED_PRECISIONS = tuple(PRECISIONS)
ROW_SAMPLED = True
FORMS = ("sparse", "dense")


def build(kernel: SparseKernel, precision: str, pass_name: str = "fwd", form: str = "sparse") -> Graph:
    """The sparse GEMM (or its dense baseline) as a MatMul graph in a floating-point precision."""
    if form not in FORMS:
        raise UsageError(f"unknown sparse form {form!r}; valid: {', '.join(FORMS)}")
    if pass_name != "fwd":
        raise UnsupportedError(
            f"sparse GEMM kernels are inference only: pass {pass_name!r} is not built; use --passes fwd"
        )
    dt = dtype_name(float_precision(precision).dtype)
    m, n, k = kernel.m, kernel.n, kernel.k
    zeros = kernel.sparsity if form == "sparse" else 0.0
    a = TensorSpec("A", (m, k) if kernel.a_t else (k, m), dt, "weight", zeros=zeros)
    b = TensorSpec("B", (k, n) if kernel.b_t else (n, k), dt, "activation")
    y = TensorSpec("Y", (n, m), dt, "output")
    if kernel.a_t or kernel.b_t:
        node = helper.make_node("Gemm", ["B", "A"], ["Y"], name="gemm", transA=int(kernel.b_t), transB=int(kernel.a_t))
    else:
        node = helper.make_node("MatMul", ["B", "A"], ["Y"], name="matmul")
    spec = make_spec(
        kernel,
        precision,
        pass_name,
        form,
        inputs=(a, b),
        outputs=(y,),
        flops_executed=kernel.dense_flops(),
        attrs={"form": form, "sparsity": kernel.sparsity, "weight_zeros": zeros},
    )
    return Graph(
        spec, make_model(spec.id, [node], (a, b), (y,), doc=f"DeepBench sparse GEMM {kernel.id}, {form} weight")
    )


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray], rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """float64 A·B as cuBLAS/cuSPARSE read the buffers (gemm.py's reference with C = 0)."""
    c = np.zeros(spec.outputs[0].shape)
    return {"Y": cublas_reference(feeds["A"], feeds["B"], c, spec.params["a_t"], spec.params["b_t"], rows)}


def operands(spec: GraphSpec, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, None]:
    """(left [n, k], right [k, m], no bias): views of the feeds whose product is the output (gemm.py's mapping)."""
    return (*buffer_operands(feeds["A"], feeds["B"], spec.params["a_t"], spec.params["b_t"]), None)


tolerance = float_tolerance  # float precisions only: the precision's relative bound


def plan(kernel: SparseKernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
    """Both forms of the forward pass: the sparse weight and the dense baseline for the speedup."""
    return [("fwd", form, {}) for form in FORMS]
