"""GEMM graphs: DeepBench's C = op(A)·op(B) + C (alpha = beta = 1), column-major (m, n, k, a_t, b_t).

Mapping to row-major ONNX, keeping each buffer's memory layout exactly as cuBLAS sees it:
a column-major m x n matrix is the same memory as a row-major n x m one, so C^T = op(B)^T·op(A)^T.
  buffer A: [k, m] if a_t = 0 else [m, k]      (role: weight)
  buffer B: [n, k] if b_t = 0 else [k, n]      (role: activation)
  buffer C: [n, m]                              (role: activation; beta = 1 so it is read)
  node:     Y[n, m] = Gemm(B, A, C, transA=b_t, transB=a_t)
The `matmul` form is Y[n, m] = MatMul(X[n, k], W[k, m]): operands in MatMul's natural layout
(a_t, b_t do not apply) and no C, for runtimes that treat Gemm and MatMul differently.
A batched kernel (batch > 1, e.g. attention's Q·K^T) exists only in the `matmul` form, with a leading
batch axis on X, W and Y; both operands are then activations (neither is a layer's weight).
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from dbench.catalog.kernels import GemmKernel
from dbench.errors import UnsupportedError
from dbench.gen.graph import Graph, GraphSpec, TensorSpec, graph_id, make_model
from dbench.gen.feeds import default_seed
from dbench.gen.precision import float_precision, dtype_name

FORMS = ("gemm", "matmul")
REFERENCE_CHUNK = 8192


def build(kernel: GemmKernel, precision: str, pass_name: str = "fwd", form: str = "gemm") -> Graph:
    """The GEMM as an ONNX `Gemm` (default) or `MatMul` graph in a floating-point precision."""
    prec = float_precision(precision)
    dt = dtype_name(prec.dtype)
    m, n, k = kernel.m, kernel.n, kernel.k
    batch = (kernel.batch,) if kernel.batch != 1 else ()
    if batch and form == "gemm":
        raise UnsupportedError("ONNX Gemm has no batch axis; a batched GEMM is built in the matmul form (--gemm-form matmul)")
    if form == "gemm":
        a = TensorSpec("A", (m, k) if kernel.a_t else (k, m), dt, "weight")
        b = TensorSpec("B", (k, n) if kernel.b_t else (n, k), dt, "activation")
        c = TensorSpec("C", (n, m), dt, "activation")
        inputs = (a, b, c)
        node = helper.make_node("Gemm", ["B", "A", "C"], ["Y"], transA=int(kernel.b_t), transB=int(kernel.a_t), alpha=1.0, beta=1.0)
    elif form == "matmul":
        inputs = (TensorSpec("X", (*batch, n, k), dt, "activation"),
                  TensorSpec("W", (*batch, k, m), dt, "activation" if batch else "weight"))
        node = helper.make_node("MatMul", ["X", "W"], ["Y"])
    else:
        raise ValueError(f"unknown gemm form {form!r}; valid: {', '.join(FORMS)}")
    outputs = (TensorSpec("Y", (*batch, n, m), dt, "output"),)
    gid = graph_id(kernel.id, pass_name, form, precision)
    spec = GraphSpec(
        id=gid, kernel_id=kernel.id, family=kernel.family, op=kernel.op, params=kernel.params(),
        suites=kernel.suites, apps=kernel.apps, pass_name=pass_name, form=form, precision=precision,
        flops=kernel.flops(), flops_executed=kernel.flops(), inputs=inputs, outputs=outputs,
        seed=default_seed(gid),
    )
    return Graph(spec, make_model(gid, [node], inputs, outputs, doc=f"DeepBench GEMM {kernel.id}, {form} form"))


def cublas_reference(a: np.ndarray, b: np.ndarray, c: np.ndarray, a_t: bool, b_t: bool,
                     rows: np.ndarray | None = None) -> np.ndarray:
    """C + op(A)·op(B) computed the way cuBLAS reads the buffers (column-major), returned as C's buffer.

    A row-major buffer of shape [p, q] is the column-major q x p matrix buffer.T. Accumulates in
    float64 over chunks of k (memory stays bounded for k = 500000); `rows` restricts the result to
    those rows of C's buffer (columns of the column-major C), to verify huge outputs on a sample."""
    op_a = a if a_t else a.T  # op(A), m x k: the column-major view of A's buffer is buffer.T
    op_b = b if b_t else b.T  # op(B), k x n
    left, right = op_b.T, op_a.T  # C^T = op(B)^T · op(A)^T: [n, k] · [k, m]
    out = np.array(c if rows is None else c[rows], dtype=np.float64)
    if rows is not None:
        left = left[rows]
    k = left.shape[1]
    for start in range(0, k, REFERENCE_CHUNK):
        stop = min(start + REFERENCE_CHUNK, k)
        out += left[:, start:stop].astype(np.float64) @ right[start:stop].astype(np.float64)
    return out


def reference(spec: GraphSpec, feeds: dict[str, np.ndarray], rows: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """float64 numpy result for a GEMM graph (only output `rows` when given: of a batched graph, batches)."""
    if spec.form == "matmul":
        x, w = feeds["X"], feeds["W"]
        if rows is not None:
            x, w = x[rows], (w[rows] if w.ndim == 3 else w)
        return {"Y": np.asarray(x, dtype=np.float64) @ np.asarray(w, dtype=np.float64)}
    return {"Y": cublas_reference(feeds["A"], feeds["B"], feeds["C"], spec.params["a_t"], spec.params["b_t"], rows)}

def plan(kernel: GemmKernel, options, train: bool) -> list[tuple[str, str, dict]]:
    """A GEMM has one pass; the form is the user's choice (`--gemm-form`), except that a batched GEMM
    exists only as a MatMul."""
    if options.gemm_form not in FORMS:
        raise ValueError(f"unknown gemm form {options.gemm_form!r}; valid: {', '.join(FORMS)}")
    return [("fwd", options.gemm_form if kernel.batch == 1 else "matmul", {})]
