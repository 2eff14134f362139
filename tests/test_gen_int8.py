"""int8 GEMM/convolution graphs: DeepBench's padding rule, the three forms on ONNX Runtime CPU,
OpenVINO CPU and the ONNX reference evaluator against the exact numpy reference, rounding at ties."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

from dbench.catalog import load_catalog
from dbench.catalog.kernels import ConvKernel, GemmKernel, SparseKernel
from dbench.errors import UnsupportedError, UsageError
from dbench.gen import int8
from dbench.gen import plan as gen_plan
from dbench.gen.feeds import make_feeds
from dbench.gen.graph import GraphSpec
from dbench.gen.int8_quant import INT_LIMITS, reduction_length
from dbench.gen.options import INT8_FORMS, GenOptions
from dbench.gen.tolerance import Tolerance
from dbench.gen.weights import embed_weights, split_feeds
from tests.helpers import max_abs_error, run_ort

# Shrunk kernels with the catalog's filter sizes, strides and pads; unaligned M / C / H / W so padding runs.
SHRUNK = {
    "gemm_m_unaligned": GemmKernel(m=7, n=5, k=37, a_t=False, b_t=False),
    "gemm_aligned": GemmKernel(m=8, n=1, k=64, a_t=False, b_t=False),
    "conv_3x3_s1_p1": ConvKernel(w=10, h=9, c=3, n=2, k=5, s=3, r=3, pad_w=1, pad_h=1, wstride=1, hstride=1),
    "conv_3x3_s2_p1": ConvKernel(w=13, h=10, c=6, n=1, k=4, s=3, r=3, pad_w=1, pad_h=1, wstride=2, hstride=2),
    "conv_7x7_s2_p3_c1": ConvKernel(w=17, h=15, c=1, n=1, k=4, s=7, r=7, pad_w=3, pad_h=3, wstride=2, hstride=2),
    "conv_1x1_s2_p0": ConvKernel(w=9, h=7, c=5, n=2, k=6, s=1, r=1, pad_w=0, pad_h=0, wstride=2, hstride=2),
    "conv_5x20_s2_speech": ConvKernel(w=41, h=13, c=1, n=1, k=3, s=20, r=5, pad_w=0, pad_h=0, wstride=2, hstride=2),
    "conv_5x5_s1_p2_aligned": ConvKernel(w=8, h=8, c=4, n=1, k=3, s=5, r=5, pad_w=2, pad_h=2, wstride=1, hstride=1),
}


def _ort(model: onnx.ModelProto, feeds: dict) -> np.ndarray:
    return run_ort(model, feeds)[0]


def _openvino(model: onnx.ModelProto, feeds: dict, tmp_path) -> np.ndarray:
    import openvino as ov

    path = tmp_path / "graph.onnx"
    onnx.save(model, path)
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return compiled(feeds)[0]


def _check(graph, feeds: dict, out: np.ndarray, runtime: str, seed: int) -> None:
    ref = int8.reference(graph.spec, feeds)["Y"]
    tol = int8.tolerance(graph.spec)
    assert tol.metric == "abs"
    assert out.shape == ref.shape and out.dtype == np.dtype(graph.spec.outputs[0].dtype), (runtime, out.dtype)
    err = max_abs_error(out, ref)
    assert err <= tol.bound, f"{graph.id} on {runtime}: max error {err} > {tol.bound} (seed {seed})"


@pytest.mark.parametrize("form", INT8_FORMS)
@pytest.mark.parametrize("name", list(SHRUNK))
def test_forms_match_reference_on_every_runtime(name, form, tmp_path, seed):
    graph = int8.build(SHRUNK[name], "int8", "fwd", form)
    onnx.checker.check_model(graph.model, full_check=True)
    feeds = make_feeds(graph.spec, seed)
    _check(graph, feeds, _ort(graph.model, feeds), "onnxruntime", seed)
    constants, per_call = split_feeds(graph.spec, feeds, "const")
    assert list(per_call) == ["X"]
    _check(graph, feeds, _ort(embed_weights(graph.model, constants), per_call), "onnxruntime const", seed)
    _check(graph, feeds, _openvino(graph.model, feeds, tmp_path), "openvino", seed)
    _check(graph, feeds, _openvino(embed_weights(graph.model, constants), per_call, tmp_path), "openvino const", seed)
    _check(graph, feeds, ReferenceEvaluator(graph.model).run(None, feeds)[0], "onnx reference", seed)


def test_exact_forms_have_zero_tolerance_and_qdq_one_output_step():
    kernel = SHRUNK["gemm_m_unaligned"]
    assert int8.tolerance(int8.build(kernel, form="integer").spec) == Tolerance("abs", 0.0)
    assert int8.tolerance(int8.build(kernel, form="qlinear").spec) == Tolerance("abs", 0.0)
    qdq = int8.build(kernel, form="qdq").spec
    assert int8.tolerance(qdq).bound == qdq.attrs["scales"]["y"] > 0


@pytest.mark.parametrize("form", ["qlinear", "qdq"])
def test_requantisation_rounds_half_to_even_everywhere(form, tmp_path):
    """Feeds chosen so acc·sx·sw/sy lands exactly on .5: every runtime must round to even as ONNX says."""
    graph = int8.build(GemmKernel(m=4, n=5, k=1, a_t=False, b_t=False), "int8", "fwd", form)
    scale = graph.spec.attrs["scales"]
    step = scale["y"] / (scale["x"] * scale["w"])  # accumulator units per output step
    half = np.array([0.5, 1.5, -0.5, -1.5, 2.5]) * step  # products x·w that are ties
    x = half / 2  # with w = 2
    assert np.all(x == np.round(x)) and np.all(np.abs(x) <= 127)
    if form == "qlinear":
        feeds = {"X": (x + graph.spec.attrs["zero_points"]["x"]).astype(np.uint8).reshape(5, 1)}
    else:
        feeds = {"X": (x * scale["x"]).astype(np.float32).reshape(5, 1)}
    feeds["W"] = np.full((1, 4), 2, dtype=np.int8)
    expected_steps = np.array([0, 2, 0, -2, 2])  # half to even
    ref = int8.reference(graph.spec, feeds)["Y"][:, 0].astype(np.float64)
    zero_y = graph.spec.attrs["zero_points"]["y"]
    ref_steps = ref - zero_y if form == "qlinear" else ref / scale["y"]
    np.testing.assert_array_equal(ref_steps, expected_steps)
    for runtime, out in [
        ("onnxruntime", _ort(graph.model, feeds)),
        ("openvino", _openvino(graph.model, feeds, tmp_path)),
        ("onnx reference", ReferenceEvaluator(graph.model).run(None, feeds)[0]),
    ]:
        np.testing.assert_array_equal(out[:, 0].astype(np.float64), ref, err_msg=runtime)


def _inference(family: str) -> list:
    return [k for k in load_catalog() if k.family == family and "inference_server" in k.suites]


@pytest.mark.parametrize("family, padded_rows, rows", [("gemm", 4, 75), ("conv", 67, 107)])
def test_padding_rule_reproduces_deepbench_padded_kernel_counts(family, padded_rows, rows):
    """DeepBench's NV 1080Ti inference sheet flags 4 of 75 GEMM and 67 of 107 convolution rows as padded."""
    kernels = _inference(family)
    specs = {k: int8.build(k, "int8", "fwd", "qdq").spec for k in kernels}
    assert sum(k.copies("inference_server") for k in kernels) == rows
    assert sum(k.copies("inference_server") for k, s in specs.items() if s.attrs["padded"]) == padded_rows


def test_padded_gemm_rounds_m_up_and_counts_unpadded_flops():
    kernel = GemmKernel(m=35, n=3, k=8, a_t=False, b_t=False)
    spec = int8.build(kernel, "int8", "fwd", "integer").spec
    assert spec.attrs["padded"] == {"m": 36}
    assert [t.shape for t in spec.inputs + spec.outputs] == [(3, 8), (8, 36), (3, 36)]
    assert spec.flops == kernel.flops() and spec.flops_executed == replace(kernel, m=36).flops()
    unpadded = int8.build(kernel, "int8", "fwd", "integer", pad=False).spec
    assert unpadded.attrs["padded"] == {} and unpadded.attrs["pad"] is False
    assert unpadded.inputs[1].shape == (8, 35) and unpadded.flops_executed == unpadded.flops == kernel.flops()
    assert unpadded.id != spec.id


def test_padded_conv_rounds_c_h_w_together():
    kernel = ConvKernel(w=700, h=161, c=1, n=1, k=2, s=5, r=20, pad_w=0, pad_h=0, wstride=2, hstride=2)
    spec = int8.build(kernel, "int8", "fwd", "qlinear").spec
    assert spec.attrs["padded"] == {"c": 4, "h": 164, "w": 700}
    executed = replace(kernel, c=4, h=164)
    assert spec.inputs[0].shape == (1, 4, 164, 700) and spec.inputs[1].shape == (2, 4, 20, 5)
    assert spec.outputs[0].shape == (1, 2, executed.out_h, executed.out_w)
    assert spec.flops == kernel.flops() < spec.flops_executed == executed.flops()
    aligned = ConvKernel(w=8, h=8, c=16, n=1, k=2, s=3, r=3, pad_w=1, pad_h=1, wstride=1, hstride=1)
    assert int8.build(aligned, "int8", "fwd", "qlinear").spec.attrs["padded"] == {}


def test_weights_are_int8_graph_inputs_and_only_scalars_are_embedded():
    for kernel in (SHRUNK["gemm_m_unaligned"], SHRUNK["conv_3x3_s2_p1"]):
        for form in INT8_FORMS:
            graph = int8.build(kernel, "int8", "fwd", form)
            (weight,) = graph.spec.weights
            assert weight.name == "W" and weight.dtype == "int8"
            assert all(int(np.prod(i.dims)) == 1 for i in graph.model.graph.initializer)
            assert [i.name for i in graph.model.graph.input] == ["X", "W"]
            types = graph.spec.attrs["int_types"]
            assert (types["x"], types["w"]) == (("int8", "int8") if form == "qdq" else ("uint8", "int8"))


@pytest.mark.parametrize("form", ["qlinear", "qdq"])
@pytest.mark.slow
def test_output_scale_keeps_catalog_extremes_off_saturation(form, seed):
    """The output scale follows the reduction length: the smallest and largest inference reductions
    in the catalog requantise to values that mostly stay inside the 8-bit range."""
    lengths = [reduction_length(k) for k in _inference("gemm") + _inference("conv")]
    for length in (min(lengths), max(lengths)):
        graph = int8.build(GemmKernel(m=16, n=16, k=length, a_t=False, b_t=False), "int8", "fwd", form)
        feeds = make_feeds(graph.spec, seed)
        y = int8.reference(graph.spec, feeds)["Y"]
        if form == "qdq":
            y = np.rint(y / graph.spec.attrs["scales"]["y"])
        low, high = INT_LIMITS[graph.spec.attrs["int_types"]["y"]]
        saturated = np.mean((y <= low) | (y >= high))
        assert saturated < 0.05 and np.std(y) > 8, (length, saturated, np.std(y))


def test_every_inference_kernel_builds_a_valid_graph_in_every_form():
    for kernel in _inference("gemm") + _inference("conv"):
        for form in INT8_FORMS:
            onnx.checker.check_model(int8.build(kernel, "int8", "fwd", form).model)


def test_dispatch_plans_builds_and_checks_through_gen_plan():
    kernel = SHRUNK["conv_3x3_s1_p1"]
    options = GenOptions(precision="int8", int8_form="qlinear", int8_pad=False)
    (request,) = gen_plan.plan([kernel], ["inference_server"], options)
    assert (request.pass_name, request.form, request.attrs) == ("fwd", "qlinear", {"pad": False})
    graph = gen_plan.build(request)
    assert graph.spec.form == "qlinear" and graph.spec.precision == "int8" and graph.spec.attrs["padded"] == {}
    assert gen_plan.tolerance(graph.spec) == Tolerance("abs", 0.0)
    feeds = make_feeds(graph.spec)
    np.testing.assert_array_equal(gen_plan.reference(graph.spec, feeds)["Y"], _ort(graph.model, feeds))


@pytest.mark.parametrize("form", INT8_FORMS)
def test_reference_needs_only_the_manifest_spec(form):
    """A spec written to JSON and read back (another machine, no catalog) verifies the padded graph."""
    graph = int8.build(SHRUNK["conv_3x3_s2_p1"], "int8", "fwd", form)
    spec = GraphSpec.from_dict(json.loads(json.dumps(graph.spec.to_dict())))
    feeds = make_feeds(spec)
    assert spec.attrs["padded"] == {"c": 8, "h": 12, "w": 16}
    np.testing.assert_array_equal(int8.reference(spec, feeds)["Y"], int8.reference(graph.spec, feeds)["Y"])
    assert int8.tolerance(spec) == int8.tolerance(graph.spec)
    assert max_abs_error(_ort(graph.model, feeds), int8.reference(spec, feeds)["Y"]) <= int8.tolerance(spec).bound


def test_transposed_gemm_uses_the_matmul_layout():
    graph = int8.build(GemmKernel(m=8, n=3, k=5, a_t=True, b_t=True), "int8", "fwd", "integer")
    assert graph.spec.attrs["layout"] == "matmul"
    assert [t.shape for t in graph.spec.inputs] == [(3, 5), (5, 8)]


def test_bad_requests_raise_clear_errors():
    kernel = SHRUNK["gemm_m_unaligned"]
    with pytest.raises(UnsupportedError, match="inference only"):
        int8.build(kernel, "int8", "bwd_data", "qdq")
    with pytest.raises(UsageError, match="int8 only"):
        int8.build(kernel, "fp32", "fwd", "qdq")
    with pytest.raises(UsageError, match="valid: qlinear, qdq, integer"):
        int8.build(kernel, "int8", "fwd", "fake")
    with pytest.raises(UnsupportedError, match="no int8 form"):
        int8.build(SparseKernel(m=4, n=4, k=4, a_t=False, b_t=False, sparsity=0.9), "int8", "fwd", "qdq")
