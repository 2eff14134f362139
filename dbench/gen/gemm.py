"""GEMM graphs: DeepBench's C = op(A)·op(B) + C (alpha = beta = 1), column-major (m, n, k, a_t, b_t).

Mapping to row-major ONNX, keeping each buffer's memory layout exactly as cuBLAS sees it:
a column-major m x n matrix is the same memory as a row-major n x m one, so C^T = op(B)^T·op(A)^T.
  buffer A: [k, m] if a_t = 0 else [m, k]      (role: weight)
  buffer B: [n, k] if b_t = 0 else [k, n]      (role: activation)
  buffer C: [n, m]                              (role: activation; beta = 1 so it is read)
  node:     Y[n, m] = Gemm(B, A, C, transA=b_t, transB=a_t)
A model's Gemm (`--from-model`) keeps its own C: `c_shape` None for no C, or the shape of a bias that
broadcasts over Y (a [m] row of a linear layer: role weight); its graph id spells it (`gemm-noc`, `gemm-c1000`).
The `matmul` form is Y[n, m] = MatMul(X[n, k], W[k, m]): operands in MatMul's natural layout
(a_t, b_t do not apply) and no C, for runtimes that treat Gemm and MatMul differently.
A batched kernel (batch > 1, e.g. attention's Q·K^T) exists only in the `matmul` form, with a leading
batch axis on X, W and Y; both operands are then activations (neither is a layer's weight).
Precision int8 is built by int8.py, int4 (weight-only) by int4.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from dbench.catalog.kernels import GemmKernel
from dbench.errors import UnsupportedError
from dbench.gen import int4, int8
from dbench.gen.family import PlannedGraph, check_whole_outputs, float_tolerance, make_spec
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, make_model
from dbench.gen.options import GEMM_FORMS, GenOptions
from dbench.gen.precision import PRECISIONS, dtype_name, float_precision
from dbench.gen.tolerance import Tolerance

SUPPORTED_PRECISIONS = (*PRECISIONS, "int8", "int4")
ROW_SAMPLED = True
REFERENCE_CHUNK = 2**20
"""Elements of one float64 block of an operand (8 MB): the reference's memory stays bounded for k = 500000."""


FULL_C = "full"
"""`c_shape` of DeepBench's GEMM: C is a full [n, m] activation, read and accumulated into."""


def c_form(c_shape: tuple[int, ...] | None) -> str:
    """How a graph id spells a C other than DeepBench's full one."""
    if c_shape is None:
        return "gemm-noc"
    return "gemm-c" + ("x".join(str(d) for d in c_shape) if c_shape else "scalar")


def build(kernel: GemmKernel, precision: str, pass_name: str = "fwd", form: str = "gemm", **attrs: Any) -> Graph:
    """The GEMM as an ONNX `Gemm` (default) or `MatMul` graph (int8: in the int8 form `form`, see int8);
    attribute `c_shape` gives a Gemm the C of a model's node instead of DeepBench's full one."""
    if precision == "int8":
        return int8.build(kernel, precision, pass_name, form, **attrs)
    if precision == "int4":
        return int4.build(kernel, precision, pass_name, form, **attrs)
    prec = float_precision(precision)
    dt = dtype_name(prec.dtype)
    m, n, k = kernel.m, kernel.n, kernel.k
    batch = (kernel.batch,) if kernel.batch != 1 else ()
    if batch and form == "gemm":
        raise UnsupportedError(
            "ONNX Gemm has no batch axis; a batched GEMM is built in the matmul form (--gemm-form matmul)"
        )
    c_shape = attrs.get("c_shape", FULL_C)
    id_form = None
    if form == "gemm":
        a = TensorSpec("A", (m, k) if kernel.a_t else (k, m), dt, "weight")
        b = TensorSpec("B", (k, n) if kernel.b_t else (n, k), dt, "activation")
        if c_shape == FULL_C:
            inputs = (a, b, TensorSpec("C", (n, m), dt, "activation"))
        else:
            id_form = c_form(c_shape)
            inputs = (a, b) if c_shape is None else (a, b, TensorSpec("C", tuple(c_shape), dt, "weight"))
        node = helper.make_node(
            "Gemm",
            ["B", "A", *(["C"] if len(inputs) == 3 else [])],
            ["Y"],
            transA=int(kernel.b_t),
            transB=int(kernel.a_t),
            alpha=1.0,
            beta=1.0,
        )
    elif form == "matmul":
        inputs = (
            TensorSpec("X", (*batch, n, k), dt, "activation"),
            TensorSpec("W", (*batch, k, m), dt, "activation" if batch else "weight"),
        )
        node = helper.make_node("MatMul", ["X", "W"], ["Y"])
    else:
        raise ValueError(f"unknown gemm form {form!r}; valid: {', '.join(GEMM_FORMS)}")
    outputs = (TensorSpec("Y", (*batch, n, m), dt, "output"),)
    spec = make_spec(
        kernel,
        precision,
        pass_name,
        form,
        inputs=inputs,
        outputs=outputs,
        flops_executed=kernel.flops(),
        id_form=id_form,
        attrs=None if id_form is None else {"c_shape": None if c_shape is None else list(c_shape)},
    )
    return Graph(spec, make_model(spec.id, [node], inputs, outputs, doc=f"DeepBench GEMM {kernel.id}, {form} form"))


def buffer_operands(a: np.ndarray, b: np.ndarray, a_t: bool, b_t: bool) -> tuple[np.ndarray, np.ndarray]:
    """(left [n, k], right [k, m]): views of B's and A's buffers such that C's buffer [n, m] is
    C + left · right, the column-major C = op(A)·op(B) as cuBLAS reads the row-major buffers.

    A row-major buffer of shape [p, q] is the column-major q x p matrix buffer.T."""
    op_a = a if a_t else a.T  # op(A), m x k: the column-major view of A's buffer is buffer.T
    op_b = b if b_t else b.T  # op(B), k x n
    return op_b.T, op_a.T  # C^T = op(B)^T · op(A)^T: [n, k] · [k, m]


def operands(spec: GraphSpec, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(left, right, bias) of a float GEMM graph, views of its feeds: output = left · right (+ bias),
    left [..., n, k], right [..., k, m] (a batch axis in front for a batched MatMul); a C smaller than
    the output is broadcast over it (a view), as ONNX Gemm does; no C, no bias."""
    if spec.form == "matmul":
        return feeds["X"], feeds["W"], None
    left, right = buffer_operands(feeds["A"], feeds["B"], spec.params["a_t"], spec.params["b_t"])
    c = feeds.get("C")
    return left, right, None if c is None else np.broadcast_to(c, (left.shape[0], right.shape[1]))


def cublas_reference(
    a: np.ndarray, b: np.ndarray, c: np.ndarray | None, a_t: bool, b_t: bool, rows: np.ndarray | None = None
) -> np.ndarray:
    """C + op(A)·op(B) computed the way cuBLAS reads the buffers (column-major), returned as C's buffer
    (see `buffer_operands`; C None: no C; a C smaller than the result: broadcast over it, as ONNX Gemm
    does). Accumulates in float64 over chunks of k (memory stays bounded for k = 500000); `rows`
    restricts the result to those rows of C's buffer (columns of the column-major C), to verify huge
    outputs on a sample."""
    left, right = buffer_operands(a, b, a_t, b_t)
    shape = (left.shape[0], right.shape[1])
    if rows is not None:
        left = left[rows]
    out = np.zeros((left.shape[0], shape[1]), dtype=np.float64)
    if c is not None:
        full = np.broadcast_to(c, shape)
        out += full if rows is None else full[rows]
    k, m = right.shape
    step = max(1, min(k, REFERENCE_CHUNK // max(1, m, left.shape[0])))
    # One pair of float64 buffers reused for every block: fresh memory is slow to touch (a VM), and
    # a fresh copy per block of a 2 GB weight touched 4 GB.
    left_block, right_block = np.empty((left.shape[0], step)), np.empty((step, m))
    for start in range(0, k, step):
        width = min(step, k - start)
        np.copyto(left_block[:, :width], left[:, start : start + width])
        np.copyto(right_block[:width], right[start : start + width])
        out += left_block[:, :width] @ right_block[:width]
    return out


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray], rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """float64 numpy result for a GEMM graph (only output `rows` when given: of a batched graph,
    batches); the exact integer result for int8 (whole outputs only)."""
    if spec.precision == "int8":
        check_whole_outputs("int8 gemm", rows)
        return int8.reference(spec, feeds)
    if spec.precision == "int4":
        check_whole_outputs("int4 gemm", rows)
        return int4.reference(spec, feeds)
    if spec.form == "matmul":
        x, w = feeds["X"], feeds["W"]
        if rows is not None:
            x, w = x[rows], (w[rows] if w.ndim == 3 else w)
        return {"Y": np.asarray(x, dtype=np.float64) @ np.asarray(w, dtype=np.float64)}
    return {"Y": cublas_reference(feeds["A"], feeds["B"], feeds.get("C"), spec.params["a_t"], spec.params["b_t"], rows)}


def tolerance(spec: GraphSpec) -> Tolerance:
    """int8's exactness rule, int4's bound, else the precision's relative bound."""
    if spec.precision == "int4":
        return int4.tolerance(spec)
    return int8.tolerance(spec) if spec.precision == "int8" else float_tolerance(spec)


def plan(kernel: GemmKernel, options: GenOptions, train: bool) -> list[PlannedGraph]:
    """A GEMM has one pass; the form is the user's choice (`--gemm-form`, or `--int8-form` for int8),
    except that a batched float GEMM exists only as a MatMul."""
    if options.precision == "int8":
        return int8.plan(kernel, options, train)
    if options.precision == "int4":
        return int4.plan(kernel, options, train)
    return [("fwd", options.gemm_form if kernel.batch == 1 else "matmul", {})]
