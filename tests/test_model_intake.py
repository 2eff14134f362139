"""Every real model gets in (issue 24): each class of defect that real exported models showed, on a small
model made here and run through the paths a user's model takes (CLI, graph sources, worker), with
fresh inputs and onnx.reference or dbench's numpy reference checking the outputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from typer.testing import CliRunner

from dbench.cli import app
from dbench.frommodel.walk import model_kernels
from dbench.runtimes.base import RuntimeOptions
from dbench.worker.job import Job
from dbench.worker.main import execute
from dbench.worker.timing import QUICK
from tests import model_builders as mb

runner = CliRunner()
RUN = ("--quick", "--profile-runs", "0", "--threads", "1")


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def rows_of(out: Path) -> list[dict]:
    records = [json.loads(line) for log in sorted(out.rglob("*.jsonl")) for line in log.read_text().splitlines()[1:]]
    return [r for r in records if r.get("type") == "result"]


def run_item(path: Path, dims: dict[str, int], runtime: str = "ort-cpu", weights: str = "const", profile_runs: int = 0):
    """One model through its graph source and the worker, in this process."""
    from dbench.sources.model import model_item

    item = model_item(path, dims)
    data, digest = item.load()
    job = Job(
        spec=item.spec,
        model=data,
        sha256=digest,
        runtime=runtime,
        options=RuntimeOptions(threads=1),
        timing=QUICK,
        weights=weights,
        verify=True,
        profile_runs=profile_runs,
        contract=item.contract,
    )
    return item, execute(job)


# 1. Initializers listed as graph inputs -------------------------------------------------------------


def test_stored_weights_follow_the_weights_mode(seed):
    """Initialized inputs are constants in const mode; in input mode the floating ones are fed every call
    with the stored values, and shape tensors stay constants."""
    from dbench.sources.contract import initialized_inputs, stored_weights

    m = mb.linear_ir3(np.random.default_rng(seed))
    stored = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    const = onnx.ModelProto()
    const.CopyFrom(m)
    assert stored_weights(const, "const") == {}
    assert [i.name for i in const.graph.input] == ["x"] and const.ir_version >= 4 and not initialized_inputs(const)
    fed = stored_weights(m, "input")
    assert set(fed) == {"w1", "b1", "w2"}
    for name, array in fed.items():
        np.testing.assert_array_equal(array, stored[name])
    assert [i.name for i in m.graph.input] == ["x", "w1", "b1", "w2"] and [t.name for t in m.graph.initializer] == [
        "shape"
    ]


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["ort-cpu", "openvino"])
def test_initializers_listed_as_inputs_run_in_both_weights_modes(tmp_path, runtime, seed):
    """An IR 3 export and an IR 10 one that keeps initializers as inputs run and verify, weights constant
    or fed every call (before: "graph inputs [...] do not match the manifest's", every time)."""
    rng = np.random.default_rng(seed)
    folder = tmp_path / "models"
    folder.mkdir()
    mb.save(mb.linear_ir3(rng), folder, "ir3")
    mb.save(mb.initializers_as_inputs(mb.mlp(rng)), folder, "ir10")
    for weights in ("const", "input"):
        out = tmp_path / weights
        result = invoke(
            "run",
            "--graphs",
            folder,
            "--dim",
            "batch=3",
            "--runtime",
            runtime,
            "--weights",
            weights,
            *RUN,
            "--out",
            out,
        )
        assert result.exit_code == 0, result.output
        rows = sorted(rows_of(out), key=lambda r: r["graph_id"])
        assert [(r["graph_id"], r["status"], r["verified"], r["weights"]) for r in rows] == [
            ("ir10", "ok", True, weights),
            ("ir3", "ok", True, weights),
        ], [r["message"] for r in rows]


def test_a_model_that_no_longer_matches_names_its_own_source(tmp_path, seed):
    """A mismatch between a model and its description names the model, never a manifest to regenerate."""
    from dbench.sources.model import model_item

    rng = np.random.default_rng(seed)
    path = mb.save(mb.mlp(rng), tmp_path, "mlp")
    item = model_item(path, {"batch": 2})
    changed = mb.mlp(rng)
    changed.graph.input[0].name = "renamed"
    changed.graph.node[0].input[0] = "renamed"
    job = Job(
        spec=item.spec,
        model=changed.SerializeToString(),
        sha256=None,
        runtime="ort-cpu",
        options=RuntimeOptions(threads=1),
        timing=QUICK,
        contract=item.contract,
    )
    outcome = execute(job)
    assert outcome.status == "failed"
    assert "the model as read when the run started" in outcome.message and "manifest" not in outcome.message


# 2. IR < 4 models lose kernels after folding shape arithmetic ---------------------------------------


def test_an_ir3_model_keeps_every_kernel(tmp_path, seed):
    path = mb.save(mb.ir3_folded_scale(np.random.default_rng(seed)), tmp_path, "ir3")
    extraction = model_kernels(path, {"batch": 2})
    assert [k.kernel.id for k in extraction.kernels] == [
        "conv_w6_h6_c4_n2_k8_s3_r3_pw1_ph1_sw1_sh1",
        "conv_w6_h6_c8_n2_k8_s3_r3_pw1_ph1_sw1_sh1",
    ]
    assert sum(k.kernel.flops() for k in extraction.kernels) == 2 * 2 * 8 * 36 * 9 * (4 + 8)  # 2·N·K·P·Q·R·S·C, both
    assert {s.op for s in extraction.skipped} == {"Dropout", "Sqrt", "Mul"}


# 3. A 0-d first output -------------------------------------------------------------------------------


def test_a_0d_first_output_runs_and_verifies(tmp_path, seed):
    nodes = [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0), helper.make_node("Relu", ["x"], ["y"])]
    m = mb.model(nodes, [mb.value("x", [3, 4])], [mb.value("total", []), mb.value("y", [3, 4])], (), "scalar_first")
    _, outcome = run_item(mb.save(m, tmp_path, "scalar_first"), {})
    assert (outcome.status, outcome.verification["ok"]) == ("ok", True), outcome.message


# 4. --kernels-run sums the model's kernels only, as this run runs them -------------------------------


@pytest.mark.slow
def test_kernels_run_must_match_the_model_run(tmp_path, seed):
    """Kernels made with another --dim, or run with other settings, or from a kernel file, are refused with
    one line naming the difference, before the model is timed; the matching run is accepted."""
    path = mb.save(mb.mlp(np.random.default_rng(seed)), tmp_path, "mlp")
    results = tmp_path / "results"
    assert invoke("gen", "--from-model", path, "--dim", "batch=2", "--out", tmp_path / "graphs").exit_code == 0
    assert invoke("run", "--graphs", tmp_path / "graphs" / "mlp", *RUN, "--out", results).exit_code == 0
    (kernels,) = results.rglob("*.jsonl")

    def refused(needle: str, *args) -> None:
        result = invoke("run", "--model", path, "--kernels-run", kernels, "--out", tmp_path / "refused", *args)
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 2 and len(lines) == 1 and needle in lines[0], result.output
        assert not (tmp_path / "refused").exists()

    refused("for model mlp at --dim batch=1 (its kernels were generated with --dim batch=2)", "--dim", "batch=1", *RUN)
    refused("ran with --threads 1, this model run with --threads 2", "--dim", "batch=2", "--quick", "--threads", "2")
    refused(
        "ran with --runtime ort-cpu, this model run with --runtime openvino",
        "--dim",
        "batch=2",
        "--runtime",
        "openvino",
        *RUN,
    )
    assert (
        invoke(
            "run", "--kernels", tmp_path / "graphs" / "mlp" / "kernels.csv", *RUN, "--out", tmp_path / "csv"
        ).exit_code
        == 0
    )
    (from_csv,) = (tmp_path / "csv").rglob("*.jsonl")
    kernels = from_csv
    refused("timed the kernel file", "--dim", "batch=2", *RUN)
    kernels = next(results.rglob("*.jsonl"))
    result = invoke("run", "--model", path, "--kernels-run", kernels, "--dim", "batch=2", *RUN, "--out", results)
    assert result.exit_code == 0 and "whole model vs the sum of its kernels" in result.output, result.output


# 5. Foreign int8 models: their precision, inputs that exercise them, verification that says something ----


def quantised_inputs_model() -> onnx.ModelProto:
    """Fed inputs in every role: token ids into a 10-row table, int8 data with a fed scale and zero
    point into DequantizeLinear, and a float activation."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["e"]),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["dq"]),
        helper.make_node("Add", ["dq", "x"], ["y"]),
    ]
    inputs = [
        mb.value("ids", [5], TensorProto.INT64),
        mb.value("q", [4, 4], TensorProto.INT8),
        mb.value("s", [], TensorProto.FLOAT),
        mb.value("z", [], TensorProto.INT8),
        mb.value("x", [4, 4]),
    ]
    return mb.model(
        nodes, inputs, [mb.value("e", [5, 4]), mb.value("y", [4, 4])], [mb.weight("table", (10, 4), rng)], "roles"
    )


def test_inputs_are_drawn_for_what_reads_them(tmp_path):
    from dbench.sources.model import model_item
    from dbench.sources.model_feeds import FLOAT_RANGE, SCALE_RANGE

    item = model_item(mb.save(quantised_inputs_model(), tmp_path, "roles"), {})
    drawn = {t.name: (t.low, t.high) for t in item.spec.inputs}
    assert drawn == {"ids": (0, 9), "q": (-128, 127), "s": SCALE_RANGE, "z": (-64, 63), "x": FLOAT_RANGE}
    assert SCALE_RANGE[0] > 0
    roi = mb.model(
        [helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], output_height=2, output_width=2)],
        [mb.value("x", [3, 4, 8, 8]), mb.value("rois", [5, 4]), mb.value("batch", [5], TensorProto.INT64)],
        [mb.value("y", [5, 4, 2, 2])],
        (),
        "roi",
    )
    assert {t.name: (t.low, t.high) for t in model_item(mb.save(roi, tmp_path, "roi"), {}).spec.inputs}["batch"] == (
        0,
        2,
    )


def test_an_int8_model_is_int8(tmp_path, seed):
    """Its precision is its kernels' (the float scales do not make it fp32)."""
    from dbench.sources.model import model_item

    item = model_item(mb.save(mb.int8_qlinear(np.random.default_rng(seed)), tmp_path, "int8"), {})
    assert item.spec.precision == "int8"


@pytest.mark.slow
def test_an_int8_model_row_keeps_the_invariants(tmp_path, seed):
    path = mb.save(mb.int8_qlinear(np.random.default_rng(seed)), tmp_path, "int8")
    result = invoke("run", "--model", path, "--quick", "--threads", "1", "--out", tmp_path / "results")
    assert result.exit_code == 0, result.output
    (row,) = rows_of(tmp_path / "results")
    assert (row["status"], row["precision"], row["verified"]) == ("ok", "int8", True), row["message"]
    assert row["precision_executed"] == "int8" and row["invariant_violations"] == []


def test_an_input_that_sets_a_shape_is_unsupported_with_its_reason(tmp_path):
    m = mb.model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [mb.value("x", [2, 6]), mb.value("shape", [2], TensorProto.INT64)],
        [mb.value("y", [3, 4])],
        (),
        "reshape",
    )
    result = invoke("run", "--model", mb.save(m, tmp_path, "reshape"), *RUN, "--out", tmp_path / "results")
    assert result.exit_code == 0, result.output
    (row,) = rows_of(tmp_path / "results")
    assert (
        row["status"] == "unsupported"
        and "input 'shape' sets a shape, size or axis (Reshape input 1)" in row["message"]
    )


def test_an_input_that_sets_an_axis_through_other_ops_is_found(tmp_path):
    """Its values reach CumSum's axis through a Cast and an If branch: no drawn value would do."""
    branch = helper.make_graph([helper.make_node("CumSum", ["x", "axis"], ["s"])], "then", [], [mb.value("s", [2, 6])])
    nodes = [
        helper.make_node("Cast", ["a"], ["axis"], to=TensorProto.INT64),
        helper.make_node("If", ["flag"], ["y"], then_branch=branch, else_branch=branch),
    ]
    m = mb.model(
        nodes,
        [mb.value("x", [2, 6]), mb.value("a", [], TensorProto.INT32), mb.value("flag", [], TensorProto.BOOL)],
        [mb.value("y", [2, 6])],
        (),
        "axis",
    )
    from dbench.sources.model import model_item

    item = model_item(mb.save(m, tmp_path, "axis"), {})
    assert item.unsupported == (
        "input 'a' sets a shape, size or axis (CumSum input 1): dbench cannot draw it; make it a "
        "constant (an initializer) in the model"
    )


def test_a_data_dependent_output_need_not_keep_its_declared_shape(tmp_path):
    """A test model declares NonZero's output as its own example data made it; dbench's inputs make another."""
    m = mb.model(
        [helper.make_node("NonZero", ["x"], ["y"])],
        [mb.value("x", [4, 5], TensorProto.BOOL)],
        [mb.value("y", [2, 3], TensorProto.INT64)],
        (),
        "nonzero",
    )
    _, outcome = run_item(mb.save(m, tmp_path, "nonzero"), {})
    assert (outcome.status, outcome.verification["ok"]) == ("ok", True), outcome.message


def test_an_op_the_runtime_does_not_know_is_unsupported(tmp_path):
    """ConstantFill, an experimental op PyTorch's opset-7 exports still write, which ONNX Runtime never had."""
    m = mb.model(
        [helper.make_node("ConstantFill", ["x"], ["y"], value=1.0), helper.make_node("Add", ["x", "y"], ["z"])],
        [mb.value("x", [4])],
        [mb.value("z", [4])],
        (),
        "fill",
    )
    _, outcome = run_item(mb.save(mb.initializers_as_inputs(m, ir_version=3, opset=7), tmp_path, "fill"), {})
    assert outcome.status == "unsupported" and "is not a registered function/op" in outcome.message


def test_executed_precision_is_that_of_arithmetic():
    """An fp16 model whose slowest node is a Where on a bool mask executed fp16, not `bool`."""
    from dbench.store.schema import executed_precision

    nodes = [
        {"precision": "bool", "time_us": 40.0},
        {"precision": "int64", "time_us": 30.0},
        {"precision": "fp16", "time_us": 9.0},
    ]
    assert executed_precision(nodes) == "fp16"
    assert executed_precision(nodes[:2]) == "unknown"


def test_degenerate_outputs_make_a_weak_verification():
    from dbench.check.verdict import compare
    from dbench.gen.tolerance import Tolerance

    rule = Tolerance("rel", 1e-3)
    rich = np.linspace(-1, 1, 64).reshape(8, 8)
    assert compare({"y": rich}, {"y": rich}, rule).weak == ""
    flat = {"y": np.zeros((8, 8)), "z": np.where(rich > 0, 1.0, -1.0)}
    verdict = compare(flat, flat, rule)
    assert verdict.ok and verdict.weak == "y: all zero; z: 2 distinct values in 64"
    assert compare({**flat, "r": rich}, {**flat, "r": rich}, rule).weak == ""  # one informative output is enough


def test_weak_verification_is_said_in_the_row(tmp_path):
    m = mb.model([helper.make_node("Sign", ["x"], ["y"])], [mb.value("x", [8, 8])], [mb.value("y", [8, 8])], (), "sign")
    _, outcome = run_item(mb.save(m, tmp_path, "sign"), {})
    assert outcome.status == "ok" and outcome.verification["ok"]
    assert outcome.message == "weak verification: the expected outputs are degenerate (y: 2 distinct values in 64)"


def test_nan_where_the_reference_has_nan_agrees(tmp_path):
    """Log of inputs in [-1, 1]: NaN in the same places on both sides is agreement, not a mismatch."""
    m = mb.model([helper.make_node("Log", ["x"], ["y"])], [mb.value("x", [8, 8])], [mb.value("y", [8, 8])], (), "log")
    _, outcome = run_item(mb.save(m, tmp_path, "log"), {})
    assert (outcome.status, outcome.verification["ok"]) == ("ok", True), outcome.message

    from dbench.check.verdict import compare
    from dbench.gen.tolerance import Tolerance

    ref = np.array([np.nan, 1.0, np.inf])
    assert not compare({"y": np.array([0.0, 1.0, np.inf])}, {"y": ref}, Tolerance("rel", 1e-3)).ok


# 6. Q/DQ folding must not depend on node names --------------------------------------------------------


def test_qdq_folding_survives_unnamed_nodes(tmp_path, seed):
    path = mb.save(mb.unnamed(mb.int8_qdq(np.random.default_rng(seed))), tmp_path, "int8")
    extraction = model_kernels(path, {})
    qdq = next(k for k in extraction.kernels if k.form == "qdq")
    assert qdq.nodes == ("MatMul_3",)
    folded = {s.node: s.folded_into for s in extraction.skipped if s.folded_into}
    assert folded == {
        "QuantizeLinear_0": "MatMul_3",
        "DequantizeLinear_1": "MatMul_3",
        "DequantizeLinear_2": "MatMul_3",
        "QuantizeLinear_4": "MatMul_3",
    }  # the model input's Q too (issue 40.5)


def test_node_names_are_unique_whatever_the_exporter_wrote():
    from dbench.frommodel.extract import node_names

    nodes = [
        helper.make_node("Relu", ["a"], ["b"], name="n"),
        helper.make_node("Relu", ["b"], ["c"], name="n"),
        helper.make_node("Relu", ["c"], ["d"]),
        helper.make_node("Relu", ["d"], ["e"], name="Relu_2"),
    ]
    assert node_names(nodes) == ["n", "n_1", "Relu_2", "Relu_2_3"]


# 7. Optional attributes left out ---------------------------------------------------------------------


def test_an_lstm_without_hidden_size_takes_it_from_its_weights(tmp_path, seed):
    m = mb.lstm(np.random.default_rng(seed))
    del next(n for n in m.graph.node if n.name == "lstm2").attribute[:]  # the first keeps it: shape inference needs it
    path = mb.save(m, tmp_path, "lstm")
    assert [(k.kernel.id, k.copies) for k in model_kernels(path, {"seq": 5}).kernels] == [("rnn_lstm_h16_n2_t5", 2)]
    result = invoke("list", "--from-model", path, "--dim", "seq=5")
    assert result.exit_code == 0 and "rnn_lstm_h16_n2_t5" in result.output, result.output


# 8. ConvTranspose with output_shape or auto_pad ------------------------------------------------------


@pytest.mark.parametrize(
    "attrs, kernel",
    [
        ({"strides": [2, 2], "output_shape": [12, 12]}, "conv_w12_h12_c4_n1_k8_s4_r4_pw1_ph1_sw2_sh2"),
        ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, "conv_w12_h12_c4_n1_k8_s4_r4_pw1_ph1_sw2_sh2"),
        ({"strides": [2, 2], "pads": [1, 1, 1, 1]}, "conv_w12_h12_c4_n1_k8_s4_r4_pw1_ph1_sw2_sh2"),
        ({"strides": [1, 1], "auto_pad": "VALID"}, "conv_w9_h9_c4_n1_k8_s4_r4_pw0_ph0_sw1_sh1"),
    ],
)
def test_conv_transpose_resolves_output_shape_and_auto_pad(tmp_path, attrs, kernel, seed):
    """As the ONNX spec resolves them: the same kernel as explicit pads wherever the pads come out equal,
    and its graph verifies on ONNX Runtime."""
    from dbench.frommodel.output import build_graphs

    m = mb.model(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[4, 4], **attrs)],
        [mb.value("x", [1, 8, 6, 6])],
        [mb.value("y", None)],
        [mb.weight("w", (8, 4, 4, 4), np.random.default_rng(seed))],
        "up",
    )
    extraction = model_kernels(mb.save(m, tmp_path, "up"), {})
    assert [(k.kernel.id, k.pass_name) for k in extraction.kernels] == [(kernel, "bwd_data")]
    (graph,) = build_graphs(extraction, {})
    outcome = execute(
        Job(
            spec=graph.spec,
            model=graph.model.SerializeToString(),
            sha256=None,
            runtime="ort-cpu",
            options=RuntimeOptions(threads=1),
            timing=QUICK,
            profile_runs=0,
        )
    )
    assert (outcome.status, outcome.verification["ok"]) == ("ok", True), outcome.message


def test_conv_transpose_with_uneven_padding_says_so(tmp_path, seed):
    m = mb.model(
        [
            helper.make_node(
                "ConvTranspose", ["x", "w"], ["y"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"
            )
        ],
        [mb.value("x", [1, 8, 6, 6])],
        [mb.value("y", None)],
        [mb.weight("w", (8, 4, 3, 3), np.random.default_rng(seed))],
        "up",
    )
    extraction = model_kernels(mb.save(m, tmp_path, "up"), {})
    (skipped,) = extraction.skipped
    assert extraction.kernels == () and "asymmetric pads [0, 0, 1, 1]" in skipped.reason


# 9. A runtime's own refusal is unsupported ---------------------------------------------------------


def lstm_batch_first() -> onnx.ModelProto:
    h = 8
    rng = np.random.default_rng(0)
    node = helper.make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=h, layout=1)
    return mb.model(
        [node],
        [mb.value("x", [2, 5, h])],
        [mb.value("y", [2, 5, 1, h])],
        [mb.weight("W", (1, 4 * h, h), rng), mb.weight("R", (1, 4 * h, h), rng)],
        "lstm_batch_first",
    )


def per_channel_conv_integer() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], kernel_shape=[3, 3])
    inits = [
        mb.weight("w", (8, 4, 3, 3), rng, np.uint8),
        numpy_helper.from_array(np.array(3, np.uint8), "xz"),
        numpy_helper.from_array(np.arange(8, dtype=np.uint8), "wz"),
    ]
    return mb.model(
        [node],
        [mb.value("x", [1, 4, 8, 8], TensorProto.UINT8)],
        [mb.value("y", [1, 8, 6, 6], TensorProto.INT32)],
        inits,
        "per_channel",
    )


@pytest.mark.parametrize("build", [lstm_batch_first, per_channel_conv_integer])
def test_a_runtime_refusal_is_unsupported(tmp_path, build):
    _, outcome = run_item(mb.save(build(), tmp_path, "m"), {})
    assert outcome.status == "unsupported" and "not supported" in outcome.message


# 10. A model's Gemm keeps its own C -------------------------------------------------------------------


@pytest.mark.parametrize(
    "c, id_form, inputs",
    [(None, "gemm-noc", ["A", "B"]), ((10,), "gemm-c10", ["A", "B", "C"]), ((3, 10), "gemm", ["A", "B", "C"])],
)
def test_a_model_gemm_is_timed_with_its_own_c(tmp_path, c, id_form, inputs, seed):
    """No C, a [N] bias or a full C: the kernel graph reads what the model's node reads, and verifies."""
    from dbench.frommodel.output import build_graphs

    rng = np.random.default_rng(seed)
    names = ["x", "w"] + (["c"] if c else [])
    inits = [mb.weight("w", (10, 16), rng)] + ([mb.weight("c", c, rng)] if c else [])
    m = mb.model(
        [helper.make_node("Gemm", names, ["y"], transB=1)],
        [mb.value("x", [3, 16])],
        [mb.value("y", [3, 10])],
        inits,
        "fc",
    )
    (graph,) = build_graphs(model_kernels(mb.save(m, tmp_path, "fc"), {}), {})
    assert graph.id == f"gemm_m10_n3_k16_tn.fwd.{id_form}.fp32"
    assert [t.name for t in graph.spec.inputs] == inputs and (c is None or graph.spec.inputs[2].shape == c)
    outcome = execute(
        Job(
            spec=graph.spec,
            model=graph.model.SerializeToString(),
            sha256=None,
            runtime="ort-cpu",
            options=RuntimeOptions(threads=1),
            timing=QUICK,
            profile_runs=0,
        )
    )
    assert (outcome.status, outcome.verification["ok"]) == ("ok", True), outcome.message


# 11. No rate without counted work; a profiler's cost per node is no violation --------------------------


def test_a_row_without_kernels_has_no_rate(tmp_path):
    m = mb.model(
        [helper.make_node("Relu", ["x"], ["y"])], [mb.value("x", [64, 64])], [mb.value("y", [64, 64])], (), "relu"
    )
    result = invoke("run", "--model", mb.save(m, tmp_path, "relu"), *RUN, "--out", tmp_path / "results")
    assert result.exit_code == 0, result.output
    (row,) = rows_of(tmp_path / "results")
    assert row["flops"] == 0 and row["median_us"] > 0
    assert (row["tflops"], row["tflops_executed"], row["intensity"]) == (None, None, None)
    assert " 0 " not in next(line for line in result.output.splitlines() if "relu" in line)


def test_the_profiler_cost_per_node_is_not_a_violation():
    from dbench.store.invariants import PROFILE_EVENT_US, violations

    many = [{"time_us": 5.0, "precision": "fp32"} for _ in range(100)]
    row = {
        "precision": "fp32",
        "precision_executed": "fp32",
        "median_us": 100.0,
        "kernel_time_us": 500.0,
        "profile_call_us": 520.0,
        "nodes": many,
    }
    assert violations(row) == []
    assert PROFILE_EVENT_US * 2 < 500.0 - 300.0  # the same kernel time over two nodes is still a violation
    assert violations({**row, "nodes": many[:2]}) != []


# Found by the corpus (benchmarks/model_intake.py) -------------------------------------------------------


def test_an_input_that_becomes_indices_through_arithmetic_is_unsupported(tmp_path):
    """Direct indices (and ones only cast on the way) get their bounds; after arithmetic they have none."""
    from dbench.sources.model import model_item

    table = mb.weight("table", (10, 4), np.random.default_rng(0))
    cast = mb.model(
        [
            helper.make_node("Cast", ["ids"], ["i64"], to=TensorProto.INT64),
            helper.make_node("Gather", ["table", "i64"], ["e"]),
        ],
        [mb.value("ids", [5], TensorProto.INT32)],
        [mb.value("e", [5, 4])],
        [table],
        "cast",
    )
    assert [(t.low, t.high) for t in model_item(mb.save(cast, tmp_path, "cast"), {}).spec.inputs] == [(0, 9)]
    shifted = mb.model(
        [helper.make_node("Add", ["ids", "ids"], ["twice"]), helper.make_node("Gather", ["table", "twice"], ["e"])],
        [mb.value("ids", [5], TensorProto.INT64)],
        [mb.value("e", [5, 4])],
        [table],
        "shifted",
    )
    assert (
        "becomes indices (Gather input 1) through other ops"
        in model_item(mb.save(shifted, tmp_path, "shifted"), {}).unsupported
    )


def test_bfloat16_outputs_are_read_back_from_onnx_runtime(tmp_path):
    """ONNX Runtime runs a bf16 Unique but has no numpy type to copy its output with."""
    m = mb.model(
        [helper.make_node("Unique", ["x"], ["y"], sorted=1)],
        [mb.value("x", [12], TensorProto.BFLOAT16)],
        [mb.value("y", [None], TensorProto.BFLOAT16)],
        (),
        "unique",
    )
    m.opset_import[0].version, m.ir_version = 28, 14  # Unique takes bfloat16 in the newest opset (28, IR 14)
    _, outcome = run_item(mb.save(m, tmp_path, "unique"), {})
    assert (outcome.status, outcome.verification["ok"]) == ("ok", True), outcome.message


def test_values_leaving_a_branch_are_followed(tmp_path):
    """`n` is read inside an If branch whose result, leaving by position, sets Range's limit."""
    from dbench.sources.model import model_item

    one = numpy_helper.from_array(np.array(1, np.int64), "one")
    branch = helper.make_graph(
        [helper.make_node("Add", ["n", "one"], ["limit_in"])],
        "branch",
        [],
        [mb.value("limit_in", [], TensorProto.INT64)],
    )
    nodes = [
        helper.make_node("If", ["flag"], ["limit"], then_branch=branch, else_branch=branch),
        helper.make_node("Range", ["zero", "limit", "one"], ["r"]),
    ]
    m = mb.model(
        nodes,
        [mb.value("n", [], TensorProto.INT64), mb.value("flag", [], TensorProto.BOOL)],
        [mb.value("r", [None], TensorProto.INT64)],
        [one, numpy_helper.from_array(np.array(0, np.int64), "zero")],
        "range",
    )
    assert (
        "input 'n' sets a shape, size or axis (Range input 1)"
        in model_item(mb.save(m, tmp_path, "range"), {}).unsupported
    )


def test_an_input_openvino_renames_is_still_fed(tmp_path, seed):
    """OpenVINO names a Parameter that flows straight to an output after that output: fed by what is
    left, not left unfed (its memory read as the output: errors of 1e21 before)."""
    m = mb.model(
        [helper.make_node("Dropout", ["x"], ["y"]), helper.make_node("Relu", ["z"], ["w"])],
        [mb.value("x", [4, 4]), mb.value("z", [4, 4])],
        [mb.value("y", [4, 4]), mb.value("w", [4, 4])],
        (),
        "identity",
    )
    _, outcome = run_item(mb.save(m, tmp_path, "identity"), {}, runtime="openvino")
    assert (outcome.status, outcome.verification["ok"]) == ("ok", True), outcome.message


def test_a_model_that_draws_random_numbers_is_unverified_not_a_mismatch(tmp_path):
    m = mb.model(
        [helper.make_node("RandomUniformLike", ["x"], ["r"]), helper.make_node("Add", ["x", "r"], ["y"])],
        [mb.value("x", [4, 4])],
        [mb.value("y", [4, 4])],
        (),
        "noise",
    )
    _, outcome = run_item(mb.save(m, tmp_path, "noise"), {}, runtime="openvino")
    assert outcome.status == "ok" and outcome.verification == {"ok": None, "by": None}
    assert (
        outcome.message
        == "unverified: the model draws random numbers (RandomUniformLike): no reference can reproduce them"
    )
