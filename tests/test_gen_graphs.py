"""GEMM and convolution graphs: shrunk kernels through the same generators as the full catalog,
fresh random inputs, checked against the numpy references on ONNX Runtime CPU and the ONNX
reference evaluator; plus checker, pinned versions and weight-free files for the whole catalog."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from dbench.catalog import ConvKernel, GemmKernel, Selection, load_catalog, select
from dbench.gen import conv, gemm
from dbench.gen.feeds import make_feeds
from dbench.gen.graph import IR_VERSION, OPSET
from dbench.gen.options import GenOptions
from dbench.gen.plan import build, plan
from dbench.gen.precision import PRECISIONS
from tests.helpers import normalized_error, ort_session, run_ort, run_reference_evaluator

TRANSPOSES = [(False, False), (True, False), (False, True), (True, True)]
CATALOG_CONVS = select(load_catalog(), Selection("all", ops=("conv",)))
# Every (r, s, pad_h, pad_w, hstride, wstride) in DeepBench's lists, shrunk to a few channels and pixels.
CONV_GEOMETRIES = sorted({(k.r, k.s, k.pad_h, k.pad_w, k.hstride, k.wstride) for k in CATALOG_CONVS})


def shrunk_conv(r, s, pad_h, pad_w, hstride, wstride, remainder: int) -> ConvKernel:
    """A small convolution with the catalog's filter, padding and strides; `remainder` extra input
    pixels that the stride does not reach (exercises output_padding and the backward-filter slice)."""
    h = max(r - 2 * pad_h, 1) + 2 * hstride + min(remainder, hstride - 1)
    w = max(s - 2 * pad_w, 1) + 2 * wstride + min(remainder, wstride - 1)
    return ConvKernel(w=w, h=h, c=3, n=2, k=4, s=s, r=r, pad_w=pad_w, pad_h=pad_h, wstride=wstride, hstride=hstride)


@pytest.mark.parametrize("a_t,b_t", TRANSPOSES)
@pytest.mark.parametrize("form", ["gemm", "matmul"])
def test_gemm_fp32_matches_reference(a_t, b_t, form, seed):
    kernel = GemmKernel(m=7, n=5, k=6, a_t=a_t, b_t=b_t)
    graph = gemm.build(kernel, "fp32", "fwd", form)
    feeds = make_feeds(graph.spec, seed)
    ref = gemm.reference(graph.spec, feeds)["Y"]
    assert ref.shape == (5, 7)
    for out in (run_ort(graph.model, feeds)[0], run_reference_evaluator(graph.model, feeds)[0]):
        assert normalized_error(out, ref) < PRECISIONS["fp32"].tolerance


def test_gemm_reference_is_cublas_column_major():
    """The buffers are read the way cuBLAS reads them: A (a_t=0) is column-major m x k."""
    m, n, k = 2, 3, 4
    a_buf = np.arange(m * k, dtype=np.float64).reshape(k, m)  # column-major m x k
    b_buf = np.arange(k * n, dtype=np.float64).reshape(n, k)  # column-major k x n
    c_buf = np.zeros((n, m))
    a = a_buf.reshape(-1).reshape((m, k), order="F")
    b = b_buf.reshape(-1).reshape((k, n), order="F")
    expected = (a @ b).reshape(-1, order="F").reshape(n, m)
    assert np.array_equal(gemm.cublas_reference(a_buf, b_buf, c_buf, False, False), expected)


@pytest.mark.parametrize("geometry", CONV_GEOMETRIES, ids=lambda g: "r{}s{}_p{}x{}_u{}x{}".format(*g))
@pytest.mark.parametrize("remainder", [0, 1])
@pytest.mark.parametrize("pass_name", ["fwd", "bwd_data", "bwd_filter"])
def test_conv_fp32_every_catalog_geometry(geometry, remainder, pass_name, seed):
    kernel = shrunk_conv(*geometry, remainder)
    graph = conv.build(kernel, "fp32", pass_name)
    feeds = make_feeds(graph.spec, seed)
    (ref,) = conv.reference(graph.spec, feeds).values()
    assert ref.shape == graph.spec.outputs[0].shape
    for out in (run_ort(graph.model, feeds)[0], run_reference_evaluator(graph.model, feeds)[0]):
        assert out.shape == ref.shape
        assert normalized_error(out, ref) < PRECISIONS["fp32"].tolerance


def _direct_conv(kernel: ConvKernel, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Y[n, k, q, p] = Σ_c,i,j Xpad[n, c, q·hstride + i, p·wstride + j] · W[k, c, i, j], one output at a time."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (kernel.pad_h, kernel.pad_h), (kernel.pad_w, kernel.pad_w)))
    y = np.zeros((kernel.n, kernel.k, kernel.out_h, kernel.out_w))
    for q in range(kernel.out_h):
        for p in range(kernel.out_w):
            window = xp[
                :,
                :,
                q * kernel.hstride : q * kernel.hstride + kernel.r,
                p * kernel.wstride : p * kernel.wstride + kernel.s,
            ]
            y[:, :, q, p] = np.einsum("ncij,kcij->nk", window, w.astype(np.float64))
    return y


def test_conv_reference_catches_swapped_filter_axes(seed):
    """A non-square filter, stride and padding (r != s, hstride != wstride, pad_h != pad_w): the
    reference of each pass agrees with a direct sum written independently here (forward) and with
    the adjoint identities <Y, dY> = <X, dX> = <W, dW> (backward), so swapping any height/width
    pair in the reference fails."""
    kernel = ConvKernel(w=11, h=9, c=2, n=2, k=3, s=5, r=2, pad_w=1, pad_h=0, wstride=2, hstride=1)
    graphs = {p: conv.build(kernel, "fp32", p) for p in ("fwd", "bwd_data", "bwd_filter")}
    assert [a.ints for a in graphs["fwd"].model.graph.node[0].attribute if a.name == "kernel_shape"] == [[2, 5]]
    feeds = make_feeds(graphs["fwd"].spec, seed) | make_feeds(graphs["bwd_data"].spec, seed + 1)
    x, w, dy = (feeds[name].astype(np.float64) for name in ("X", "W", "dY"))
    y = conv.reference(graphs["fwd"].spec, {"X": x, "W": w})["Y"]
    np.testing.assert_allclose(y, _direct_conv(kernel, x, w), rtol=1e-12, atol=1e-12)
    dx = conv.reference(graphs["bwd_data"].spec, {"dY": dy, "W": w})["dX"]
    dw = conv.reference(graphs["bwd_filter"].spec, {"X": x, "dY": dy})["dW"]
    assert (dx.shape, dw.shape) == (x.shape, w.shape)
    inner = float((y * dy).sum())
    assert float((x * dx).sum()) == pytest.approx(inner, rel=1e-12)
    assert float((w * dw).sum()) == pytest.approx(inner, rel=1e-12)


LOW_PRECISION_GRAPHS = [
    ("gemm", lambda p: gemm.build(GemmKernel(m=6, n=4, k=5, a_t=True, b_t=False), p, "fwd", "gemm")),
    ("matmul", lambda p: gemm.build(GemmKernel(m=6, n=4, k=5, a_t=False, b_t=False), p, "fwd", "matmul")),
    *[
        (pass_name, lambda p, pn=pass_name: conv.build(shrunk_conv(3, 3, 1, 1, 2, 2, 1), p, pn))
        for pass_name in ("fwd", "bwd_data", "bwd_filter")
    ],
]


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("name,make", LOW_PRECISION_GRAPHS, ids=[g[0] for g in LOW_PRECISION_GRAPHS])
def test_low_precision_graphs_on_reference_evaluator(precision, name, make, seed):
    graph = make(precision)
    feeds = make_feeds(graph.spec, seed)
    assert all(v.dtype == PRECISIONS[precision].dtype for v in feeds.values())
    (ref,) = graph_reference(graph, feeds)
    out = run_reference_evaluator(graph.model, feeds)[0]
    assert out.dtype == PRECISIONS[precision].dtype
    assert normalized_error(out, ref) < PRECISIONS[precision].tolerance


@pytest.mark.parametrize("name,make", LOW_PRECISION_GRAPHS, ids=[g[0] for g in LOW_PRECISION_GRAPHS])
def test_fp16_graphs_on_onnxruntime(name, make, seed):
    graph = make("fp16")
    feeds = make_feeds(graph.spec, seed)
    (ref,) = graph_reference(graph, feeds)
    assert normalized_error(run_ort(graph.model, feeds)[0], ref) < PRECISIONS["fp16"].tolerance


def test_onnxruntime_cpu_has_no_bf16_gemm():
    """Known gap that the runner reports as `unsupported`; if ORT gains it, this tells us."""
    graph = gemm.build(GemmKernel(m=4, n=4, k=4, a_t=False, b_t=False), "bf16", "fwd", "gemm")
    with pytest.raises(Exception, match="NOT_IMPLEMENTED"):
        ort_session(graph.model)


def graph_reference(graph, feeds):
    module = gemm if graph.spec.family == "gemm" else conv
    return list(module.reference(graph.spec, feeds).values())


@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16"])
def test_every_catalog_gemm_and_conv_graph_is_valid(precision):
    kernels = select(load_catalog(), Selection("all", ops=("gemm", "conv")))
    requests = plan(kernels, ("train", "inference_server", "inference_device"), GenOptions(precision=precision))
    # 243 distinct GEMMs; 90 training convolutions x 3 passes; 101 inference-only convolutions x fwd.
    assert len(requests) == 243 + 90 * 3 + 101
    total = 0
    for request in requests:
        graph = build(request)
        model = graph.model
        assert (model.ir_version, model.opset_import[0].version) == (IR_VERSION, OPSET)
        assert not model.graph.initializer, "graph files hold no weight data"
        onnx.checker.check_model(model, full_check=True)
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        assert [d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim] == list(
            graph.spec.outputs[0].shape
        )
        total += len(model.SerializeToString())
    assert total < 4_000_000


@pytest.mark.parametrize("a_t,b_t", TRANSPOSES)
@pytest.mark.parametrize("form", ["gemm", "matmul"])
def test_row_sampled_reference_equals_the_full_one(a_t, b_t, form, seed, monkeypatch):
    """Huge outputs are verified on a sample of rows; the sample must be exactly those rows, also
    when the reduction is accumulated in several chunks of k."""
    monkeypatch.setattr(gemm, "REFERENCE_CHUNK", 4)
    graph = gemm.build(GemmKernel(m=6, n=9, k=11, a_t=a_t, b_t=b_t), "fp32", "fwd", form)
    feeds = make_feeds(graph.spec, seed)
    rows = np.array([0, 3, 8])
    full = gemm.reference(graph.spec, feeds)["Y"]
    np.testing.assert_allclose(gemm.reference(graph.spec, feeds, rows)["Y"], full[rows], rtol=1e-12)
