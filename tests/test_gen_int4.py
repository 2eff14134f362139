"""int4 weight-only GEMM graphs: both forms (MatMulNBits, DequantizeLinear-21 then MatMul), every block
size, int4 and uint4 with zero points, on ONNX Runtime CPU and OpenVINO CPU through dbench's adapters
against the float64 numpy reference; what each runtime executed, stated; a wrong scale is a mismatch."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dbench.catalog.kernels import GemmKernel
from dbench.errors import UsageError
from dbench.gen import int4
from dbench.gen.feeds import make_feeds
from dbench.gen.options import INT4_BLOCKS, INT4_FORMS, INT4_TYPES, GenOptions
from dbench.gen.precision import pack_4bit
from dbench.gen.weights import split_feeds
from dbench.runtimes.base import RuntimeOptions
from dbench.store.schema import executed_precision, executed_statement, executed_weights, precision_fallback
from tests.helpers import normalized_error, write_csv

GEMV = GemmKernel(m=48, n=1, k=256, a_t=False, b_t=False)
"""A decode-shaped GEMV (n = 1), shrunk."""
SMALL = GemmKernel(m=40, n=3, k=256, a_t=False, b_t=False)


def _runtime(name: str, **options):
    from dbench.runtimes.onnxruntime import OrtCpu
    from dbench.runtimes.openvino import OpenVino

    return {"ort-cpu": OrtCpu, "openvino": OpenVino}[name](RuntimeOptions(**options))


def _execute(runtime, graph, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, list[dict]]:
    """The graph run once as dbench runs it (weights constant): its output and its profile's nodes."""
    constants, per_call = split_feeds(graph.spec, feeds, "const")
    session = runtime.prepare(graph.model, graph.spec, constants)
    try:
        session.bind(per_call)
        session.run()
        out = session.outputs()["Y"]
        nodes = [vars(n) for n in session.profile(2).nodes]
    finally:
        session.close()
    return out, nodes


def _rel_error(out: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(out - ref)) / np.max(np.abs(ref)))


@pytest.mark.parametrize("runtime", ["ort-cpu", "openvino"])
@pytest.mark.parametrize("weight_type", INT4_TYPES)
@pytest.mark.parametrize("block", INT4_BLOCKS)
@pytest.mark.parametrize("form", INT4_FORMS)
def test_each_form_block_and_type_runs_4bit_weights_in_fp32_and_matches_the_reference(
    form, block, weight_type, runtime, seed
):
    kernel = GEMV if block != 64 else SMALL
    graph = int4.build(kernel, "int4", "fwd", form, block=block, weight_type=weight_type)
    feeds = make_feeds(graph.spec, seed)
    out, nodes = _execute(_runtime(runtime), graph, feeds)
    ref = int4.reference(graph.spec, feeds)["Y"]
    rule = int4.tolerance(graph.spec)
    assert out.shape == ref.shape == (kernel.n, kernel.m)
    assert _rel_error(out, ref) <= rule.bound, f"{graph.id} on {runtime} (seed {seed})"
    assert executed_weights(nodes) == "int4" and executed_precision(nodes) == "fp32", nodes


def test_the_reference_unpacks_the_lower_nibble_first_and_drops_a_partial_blocks_padding(seed):
    """MatMulNBits' layout by hand: k = 40 in blocks of 32 (the second block is 8 codes and 24 padding)."""
    rng = np.random.default_rng(seed)
    k, n_out, block = 40, 3, 32
    weight_codes = rng.integers(0, 16, size=(n_out, 2 * block))
    packed = pack_4bit(weight_codes).reshape(n_out, 2, block // 2)
    scales = rng.uniform(0.5, 1.0, size=n_out * 2).astype(np.float32)
    weight = int4.nbits_weight(packed, scales, None, k, n_out, block)
    expected = (weight_codes[:, :k] - 8) * np.repeat(scales.reshape(n_out, 2), block, axis=1)[:, :k]
    np.testing.assert_array_equal(weight, expected.T)
    assert packed[0, 0, 0] == weight_codes[0, 0] | (weight_codes[0, 1] << 4)


def test_a_partial_last_block_runs_on_ort(seed):
    graph = int4.build(GemmKernel(m=16, n=2, k=200, a_t=False, b_t=False), form="nbits", block=64, weight_type="uint4")
    feeds = make_feeds(graph.spec, seed)
    out, _ = _execute(_runtime("ort-cpu"), graph, feeds)
    assert _rel_error(out, int4.reference(graph.spec, feeds)["Y"]) <= int4.tolerance(graph.spec).bound


@pytest.mark.parametrize("form", INT4_FORMS)
def test_a_scale_off_or_a_swapped_nibble_order_is_a_mismatch(form, seed):
    """The runtime computes from weights that differ from the reference's in one block's scale (x1.25),
    or in the order of the nibbles in every byte: beyond the bound either way."""
    graph = int4.build(SMALL, "int4", "fwd", form, block=32, weight_type="uint4")
    feeds = make_feeds(graph.spec, seed)
    ref = int4.reference(graph.spec, feeds)["Y"]
    bound = int4.tolerance(graph.spec).bound
    scaled = dict(feeds, scales=feeds["scales"].copy())
    scaled["scales"].reshape(-1)[0] *= 1.25
    out, _ = _execute(_runtime("ort-cpu"), graph, scaled)
    assert _rel_error(out, ref) > bound
    if form == "nbits":
        swapped = dict(feeds, W=((feeds["W"] >> 4) | (feeds["W"] << 4)).astype(np.uint8))
        out, _ = _execute(_runtime("ort-cpu"), graph, swapped)
        assert _rel_error(out, ref) > bound


def test_ort_int8_compute_is_stated_and_is_not_the_fp32_kernel(seed):
    """ONNX Runtime's own default for a fused DequantizeLinear(int4) -> MatMul quantises the activations to
    int8 (accuracy level 4): asked for, the profile says int8 compute, and the row is a fallback."""
    graph = int4.build(GEMV, "int4", "fwd", "dq", block=32)
    feeds = make_feeds(graph.spec, seed)
    runtime = _runtime("ort-cpu", extra={"qdq_matmulnbits_accuracy_level": "4"})
    out, nodes = _execute(runtime, graph, feeds)
    assert executed_weights(nodes) == "int4" and executed_precision(nodes) == "int8"
    assert precision_fallback("int4", "int8", "int4")
    assert normalized_error(out, int4.reference(graph.spec, feeds)["Y"]) < 0.05  # int8 activations: close, not fp32


def test_a_runtime_that_dequantises_to_fp32_says_fp32_weights(seed):
    """Without graph optimisation ONNX Runtime runs DequantizeLinear then a float MatMul: fp32 weights."""
    graph = int4.build(GEMV, "int4", "fwd", "dq", block=32)
    feeds = make_feeds(graph.spec, seed)
    out, nodes = _execute(_runtime("ort-cpu", graph_optimization="disable"), graph, feeds)
    assert _rel_error(out, int4.reference(graph.spec, feeds)["Y"]) <= int4.tolerance(graph.spec).bound
    assert executed_weights(nodes) == "fp32" and executed_precision(nodes) == "fp32"
    assert precision_fallback("int4", "fp32", "fp32")
    stated = executed_statement({"precision_executed": "fp32", "weights_executed": "fp32"})
    assert stated == "fp32 weights, fp32 compute"


def test_openvino_dynamic_quantisation_is_int8_compute_when_not_pinned(seed):
    graph = int4.build(GEMV, "int4", "fwd", "nbits", block=32)
    feeds = make_feeds(graph.spec, seed)
    _, pinned = _execute(_runtime("openvino"), graph, feeds)
    assert executed_precision(pinned) == "fp32"
    _, chosen = _execute(_runtime("openvino", allow_runtime_precision=True), graph, feeds)
    assert executed_weights(chosen) == "int4" and executed_precision(chosen) == "int8"


def test_int4_options_are_checked():
    assert GenOptions(precision="int4").int4_forms == INT4_FORMS
    with pytest.raises(UsageError, match="valid: 32, 64, 128"):
        GenOptions(precision="int4", int4_blocks=(48,))
    with pytest.raises(UsageError, match="--int4-form applies to int4 graphs only"):
        GenOptions.from_fields({"precision": "fp32", "passes": [], "int8_form": None, "int4_form": ["nbits"]}, "qdq")


def test_run_times_every_form_block_and_states_what_executed(tmp_path):
    """End to end: a GEMV and a small GEMM in both forms at two block sizes, uint4, on both CPU runtimes."""
    from dbench.cli import app

    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "48,1,256,0,0", "40,3,256,0,0")
    args = ["run", "--kernels", str(kernels), "--precision", "int4", "--int4-block", "32,128", "--int4-type"]
    args += ["uint4", "--runtime", "ort-cpu,openvino", "--quick", "--out", str(tmp_path / "r")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (log,) = (tmp_path / "r").glob("*/*.jsonl")
    rows = [json.loads(line) for line in log.read_text().splitlines() if '"type": "result"' in line]
    assert len(rows) == 2 * 2 * 2 * 2
    for row in rows:
        assert row["status"] == "ok" and row["verified"], row["message"]
        executed = (row["weights_executed"], row["precision_executed"], row["precision_fallback"])
        assert executed == ("int4", "fp32", False), row["graph_id"]
    assert {r["form"] for r in rows} == set(INT4_FORMS)
    assert "int4w/fp32" in result.output


@pytest.mark.parametrize(("runtime", "form"), [("ort-cpu", "nbits"), ("ort-cpu", "dq"), ("openvino", "dq")])
def test_a_graph_that_computes_with_a_scale_off_is_a_mismatch_row(runtime, form):
    """Through the worker as a run does: the graph multiplies its scales by 1.25 before use, the spec's
    reference does not; the row is `mismatch`, never `ok`."""
    from onnx import helper, numpy_helper

    from dbench.outcome import Status
    from dbench.worker.job import Job
    from dbench.worker.main import execute
    from dbench.worker.timing import QUICK

    graph = int4.build(GEMV, "int4", "fwd", form, block=32)
    model = graph.model
    model.graph.initializer.append(numpy_helper.from_array(np.array(1.25, dtype=np.float32), "off"))
    model.graph.node.insert(0, helper.make_node("Mul", ["scales", "off"], ["scales_off"]))
    for node in model.graph.node[1:]:
        node.input[:] = ["scales_off" if name == "scales" else name for name in node.input]
    job = Job(
        spec=graph.spec,
        model=model.SerializeToString(),
        sha256=None,
        runtime=runtime,
        options=RuntimeOptions(threads=1),
        timing=QUICK.per_round(),
        profile_runs=0,
    )
    outcome = execute(job)
    assert outcome.status == Status.MISMATCH, outcome.message
    assert outcome.verification["ok"] is False and outcome.verification["error"] > 0.1


def test_weights_fed_per_call_run_on_openvino_and_are_refused_by_ort_with_the_reason(seed):
    """--weights input: OpenVINO takes a 4-bit input (packed two a byte); ONNX Runtime's Python API has no
    4-bit OrtValue, which the row says."""
    from dbench.errors import UnsupportedError

    graph = int4.build(GEMV, "int4", "fwd", "dq", block=32, weight_type="uint4")
    feeds = make_feeds(graph.spec, seed)
    session = _runtime("openvino").prepare(graph.model, graph.spec, {})
    session.bind(feeds)
    session.run()
    out = session.outputs()["Y"]
    session.close()
    assert _rel_error(out, int4.reference(graph.spec, feeds)["Y"]) <= int4.tolerance(graph.spec).bound
    session = _runtime("ort-cpu").prepare(graph.model, graph.spec, {})
    with pytest.raises(UnsupportedError, match="--weights const"):
        session.bind(feeds)
    session.close()
