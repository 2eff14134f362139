"""Sparse GEMM graphs: layout and reference on ONNX Runtime CPU and the ONNX reference evaluator,
the weight feed's realised fraction of zeros, the dense baseline, and every catalog kernel."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

from dbench.catalog import load_catalog
from dbench.catalog.kernels import SparseKernel
from dbench.errors import UnsupportedError, UsageError
from dbench.gen import feeds, sparse
from dbench.gen import plan as gen_plan
from dbench.gen.feeds import make_feeds
from dbench.gen.graph import TensorSpec
from dbench.gen.options import GenOptions
from dbench.gen.precision import PRECISIONS
from tests.helpers import normalized_error, run_ort


def _ort(model: onnx.ModelProto, feeds: dict) -> np.ndarray:
    return run_ort(model, feeds)[0]


@pytest.mark.parametrize("form", sparse.FORMS)
@pytest.mark.parametrize("a_t, b_t", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_graph_matches_reference(precision, a_t, b_t, form, seed):
    kernel = SparseKernel(m=24, n=5, k=40, a_t=a_t, b_t=b_t, sparsity=0.9)
    graph = sparse.build(kernel, precision, "fwd", form)
    onnx.checker.check_model(graph.model, full_check=True)
    feeds = make_feeds(graph.spec, seed)
    ref = sparse.reference(graph.spec, feeds)["Y"]
    bound = gen_plan.tolerance(graph.spec)
    assert bound.metric == "rel"
    runs = {"onnx reference": ReferenceEvaluator(graph.model).run(None, feeds)[0]}
    if precision == "bf16":
        # ONNX Runtime's CPU provider has no bfloat16 MatMul/Gemm kernel: it must refuse, not mis-run.
        with pytest.raises(Exception, match="NOT_IMPLEMENTED"):
            _ort(graph.model, feeds)
    else:
        runs["onnxruntime"] = _ort(graph.model, feeds)
    for runtime, out in runs.items():
        assert out.shape == ref.shape == graph.spec.outputs[0].shape
        assert normalized_error(out, ref) <= bound.bound, f"{graph.id} on {runtime} (seed {seed})"


def test_buffers_follow_the_column_major_mapping():
    graph = sparse.build(SparseKernel(m=6, n=2, k=3, a_t=False, b_t=False, sparsity=0.9), "fp32", "fwd", "sparse")
    a, b = graph.spec.inputs
    assert (a.name, a.shape, a.role, b.name, b.shape, b.role) == ("A", (3, 6), "weight", "B", (2, 3), "activation")
    assert graph.spec.outputs[0].shape == (2, 6)
    assert [n.op_type for n in graph.model.graph.node] == ["MatMul"]
    assert list(graph.model.graph.node[0].input) == ["B", "A"]


@pytest.mark.parametrize("sparsity", [0.9, 0.95])
def test_weight_feed_has_the_kernel_fraction_of_zeros_and_dense_baseline_none(sparsity, seed):
    kernel = SparseKernel(m=400, n=2, k=500, a_t=False, b_t=False, sparsity=sparsity)
    sparse_spec = sparse.build(kernel, "fp32", "fwd", "sparse").spec
    zeros = np.mean(make_feeds(sparse_spec, seed)["A"] == 0)
    assert abs(zeros - sparsity) < 0.01, zeros  # 200k draws: binomial sd ~ 0.0007
    dense_spec = sparse.build(kernel, "fp32", "fwd", "dense").spec
    assert np.mean(make_feeds(dense_spec)["A"] == 0) < 1e-4
    assert sparse_spec.attrs == {"form": "sparse", "sparsity": sparsity, "weight_zeros": sparsity}
    assert dense_spec.attrs == {"form": "dense", "sparsity": sparsity, "weight_zeros": 0.0}
    for spec in (sparse_spec, dense_spec):
        assert spec.flops == kernel.flops() and spec.flops_executed == 2 * 400 * 2 * 500
    assert [t.shape for t in sparse_spec.inputs] == [t.shape for t in dense_spec.inputs]
    assert sparse_spec.id != dense_spec.id


def test_the_zero_mask_drawn_in_chunks_is_the_whole_array_draw(monkeypatch):
    """Chunked masks keep every feed as it was (the same on every machine and version, so cached
    references stay right): the elements zeroed are those one whole-array draw would zero."""
    monkeypatch.setattr(feeds, "ZERO_MASK_CHUNK", 1000)  # 12 chunks, the last one short
    spec = TensorSpec("A", (111, 101), "float32", "weight", low=-1.0, high=1.0, zeros=0.7)
    rng = np.random.default_rng(7)
    expected = rng.random(spec.shape, dtype=np.float32) * 2.0 - 1.0
    expected[rng.random(spec.shape, dtype=np.float32) < 0.7] = 0
    assert np.array_equal(feeds.make_tensor(spec, np.random.default_rng(7)), expected)
    flags = np.ones(2500, dtype=bool)
    feeds.zero_fraction(flags, 0.5, np.random.default_rng(1))  # booleans and integers are zeroed alike
    assert np.array_equal(flags, ~(np.random.default_rng(1).random(2500, dtype=np.float32) < 0.5))


def test_every_catalog_sparse_kernel_plans_builds_and_checks():
    kernels = [k for k in load_catalog() if k.family == "sparse"]
    rows = {suite: sum(k.copies(suite) for k in kernels) for suite in ("inference_server", "inference_device")}
    assert rows == {"inference_server": 24, "inference_device": 8} and len(kernels) == 24
    requests = gen_plan.plan(kernels, ["inference_server", "inference_device"], GenOptions())
    assert len(requests) == 2 * len(kernels)
    assert {(r.pass_name, r.form) for r in requests} == {("fwd", "sparse"), ("fwd", "dense")}
    for request in requests:
        graph = gen_plan.build(request)
        onnx.checker.check_model(graph.model)
        assert graph.spec.flops == request.kernel.flops() < graph.spec.flops_executed


def test_bad_requests_raise_clear_errors():
    kernel = SparseKernel(m=4, n=4, k=4, a_t=False, b_t=False, sparsity=0.9)
    with pytest.raises(UsageError, match="valid: sparse, dense"):
        sparse.build(kernel, "fp32", "fwd", "csr")
    with pytest.raises(UnsupportedError, match="inference only"):
        sparse.build(kernel, "fp32", "bwd_data", "sparse")
    (request,) = gen_plan.plan([kernel], ["inference_server"], GenOptions(precision="int8"))
    with pytest.raises(UnsupportedError, match="no int8 form"):
        gen_plan.build(request)
