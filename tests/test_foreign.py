"""Foreign graphs (plain .onnx files, no manifest) and whole models: scalars, symbolic dims and several
outputs run and verify against onnx.reference; bad input is one line, a non-zero exit, nothing written."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from typer.testing import CliRunner

from dbench.cli import app
from dbench.frommodel.predict import model_vs_kernels
from tests import model_builders as mb

runner = CliRunner()


def invoke(*args) -> object:
    return runner.invoke(app, [str(a) for a in args])


def scalar_model() -> onnx.ModelProto:
    """y = x·s with s a 0-d input, and the scalar z = s + s: two outputs, one of them 0-d."""
    nodes = [helper.make_node("Mul", ["x", "s"], ["y"]), helper.make_node("Add", ["s", "s"], ["z"])]
    return mb.model(
        nodes, [mb.value("x", [3, 4]), mb.value("s", [])], [mb.value("y", [3, 4]), mb.value("z", [])], (), "scalar"
    )


def symbolic_model(rng) -> onnx.ModelProto:
    """[batch, seq, 8] · W[8, 4] -> Relu, token ids [n] -> Gather from a table: three outputs, three symbolic dims."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gather", ["table", "ids"], ["e"]),
    ]
    inputs = [mb.value("x", ["batch", "seq", 8]), mb.value("ids", ["n"], TensorProto.INT64)]
    outputs = [mb.value("h", ["batch", "seq", 4]), mb.value("r", ["batch", "seq", 4]), mb.value("e", ["n", 4])]
    return mb.model(nodes, inputs, outputs, [mb.weight("w", (8, 4), rng), mb.weight("table", (10, 4), rng)], "symbolic")


def rows_of(out: Path) -> list[dict]:
    (log,) = out.rglob("*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()[1:] if '"type": "result"' in line]


def test_scalar_feeds_keep_their_shape():
    from dbench.gen.feeds import make_tensor
    from dbench.gen.graph import TensorSpec

    assert make_tensor(TensorSpec("s", (), "float32", "activation"), np.random.default_rng(0)).shape == ()


@pytest.mark.parametrize("runtime", ["ort-cpu", "openvino"])
def test_adapters_keep_scalar_inputs_and_outputs_0d(runtime, seed):
    """Issue 12.3: a 0-d input is bound as 0-d and a 0-d output comes back 0-d (np.ascontiguousarray made
    the feed (1,): ORT then returned z as (1,), OpenVINO refused the feed)."""
    from dbench.gen.graph import GraphSpec, TensorSpec
    from dbench.runtimes.base import RuntimeOptions
    from dbench.runtimes.registry import runtime_class

    rng = np.random.default_rng(seed)
    x, s = rng.standard_normal((3, 4)).astype(np.float32), np.array(rng.standard_normal(), dtype=np.float32)
    spec = GraphSpec(
        id="scalar",
        kernel_id="scalar",
        family="model",
        op="model",
        params={},
        suites=("user",),
        apps=(),
        pass_name="fwd",
        form="model",
        precision="fp32",
        flops=0,
        flops_executed=0,
        inputs=(TensorSpec("x", (3, 4), "float32", "activation"), TensorSpec("s", (), "float32", "activation")),
        outputs=(TensorSpec("y", (3, 4), "float32", "output"), TensorSpec("z", (), "float32", "output")),
        seed=seed,
    )
    session = runtime_class(runtime)(RuntimeOptions(threads=1)).prepare(scalar_model(), spec, {})
    try:
        session.bind({"x": x, "s": s})
        session.run()
        outputs = session.outputs()
    finally:
        session.close()
    assert outputs["y"].shape == (3, 4) and outputs["z"].shape == ()
    np.testing.assert_allclose(outputs["y"], x * s, rtol=1e-6)
    np.testing.assert_allclose(outputs["z"], 2 * s, rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["ort-cpu", "openvino"])
def test_plain_folder_runs_and_verifies(tmp_path, runtime, seed):
    folder = tmp_path / "models"
    folder.mkdir()
    rng = np.random.default_rng(seed)
    mb.save(scalar_model(), folder, "scalar")
    mb.save(symbolic_model(rng), folder, "symbolic")
    mb.save(mb.lstm(rng), folder, "lstm")
    result = invoke(
        "run",
        "--graphs",
        folder,
        "--runtime",
        runtime,
        "--dim",
        "batch=2,seq=3",
        "--dim",
        "n=5",
        "--quick",
        "--profile-runs",
        "0",
        "--out",
        tmp_path / "results",
    )
    assert result.exit_code == 0, result.output
    rows = {r["graph_id"]: r for r in rows_of(tmp_path / "results")}
    assert set(rows) == {"scalar", "symbolic", "lstm"}
    for row in rows.values():
        assert (row["status"], row["verified"], row["verified_by"]) == ("ok", True, "onnx.reference"), row["message"]
    assert rows["lstm"]["flops"] == 2 * (2 * 4 * 3 * 2 * 16 * 16 + 3 * 2 * 16)  # its two LSTM kernels (T = seq = 3)


@pytest.mark.slow
def test_a_model_above_the_old_budget_is_verified_by_the_reference(tmp_path):
    """0.54 GFLOP was above onnx.reference's budget of 0.5 GFLOP and ran unverified; its Conv, Gemm and
    MatMul are BLAS, so the budget is 200 GFLOP and 120 s (a model past it: tests/test_foreign_verification.py)."""
    rng = np.random.default_rng(0)
    big = mb.model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        [mb.value("x", [1024, 1024])],
        [mb.value("y", [1024, 256])],
        [mb.weight("w", (1024, 256), rng)],
        "big",
    )
    path = mb.save(big, tmp_path, "big")
    result = invoke(
        "run", "--model", path, "--quick", "--profile-runs", "0", "--threads", "1", "--out", tmp_path / "results"
    )
    assert result.exit_code == 0, result.output
    (row,) = rows_of(tmp_path / "results")
    assert (row["status"], row["verified"], row["verified_by"], row["flops"]) == (
        "ok",
        True,
        "onnx.reference",
        2 * 1024 * 1024 * 256,
    )


def test_model_vs_kernels_sums_median_times_copies():
    model = {
        "family": "model",
        "kernel_id": "net",
        "runtime": "ort-cpu",
        "status": "ok",
        "median_us": 100.0,
        "min_us": 70.0,
        "verified_by": "onnx.reference",
        "params": {"nodes": 9},
    }
    kernel = lambda kid, us, copies, status="ok": {
        "kernel_id": kid,
        "runtime": "ort-cpu",
        "status": status,
        "median_us": us,
        "min_us": us and us / 2,
        "attrs": {"model": {"name": "net", "copies": copies}},
    }
    other_runtime = {**kernel("c", 1000.0, 1), "runtime": "openvino"}
    (row,) = model_vs_kernels(
        [model], [kernel("a", 10.0, 3), kernel("b", 20.0, 2), kernel("d", None, 1, "unsupported"), other_runtime]
    )
    assert row["kernels_us"] == pytest.approx(70.0) and row["share"] == pytest.approx(0.7)
    assert row["kernels_min_us"] == pytest.approx(35.0) and row["share_of_min"] == pytest.approx(0.5)
    assert (row["kernels_timed"], row["kernels"], row["kernel_nodes_timed"], row["model_nodes"]) == (2, 3, 5, 9)
    assert row["kernels_not_ok"] == ["d (unsupported)"]


def one_error_line(result, needle: str, code: int = 2) -> None:
    """One line naming the problem; exit 2 (bad input) unless told (1: this machine cannot do it)."""
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], result.output


def test_not_onnx(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("these are not protobuf bytes \xff")
    one_error_line(invoke("gen", "--from-model", path, "--out", tmp_path / "out"), "is not an ONNX model")
    assert not (tmp_path / "out").exists()


def test_fails_shape_inference(tmp_path):
    bad = mb.model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        [mb.value("x", [2, 3])],
        [mb.value("y", [2, 5])],
        [mb.weight("w", (4, 5), np.random.default_rng(0))],
        "bad",
    )
    path = mb.save(bad, tmp_path, "bad")
    one_error_line(invoke("gen", "--from-model", path, "--out", tmp_path / "out"), "fails ONNX shape inference")
    assert not (tmp_path / "out").exists()


def test_unbound_dim_names_the_dim_to_give(tmp_path):
    path = mb.save(mb.mlp(np.random.default_rng(0)), tmp_path, "mlp")
    one_error_line(invoke("gen", "--from-model", path, "--out", tmp_path / "out"), "give --dim batch=N")
    one_error_line(
        invoke("list", "--from-model", path, "--dim", "batch=2,sequence=4"),
        "--dim sequence is not a symbolic dimension",
    )
    one_error_line(invoke("run", "--model", path, "--out", tmp_path / "results"), "give --dim batch=N")
    assert not (tmp_path / "out").exists() and not (tmp_path / "results").exists()


def test_unsupported_node_is_listed_not_fatal(tmp_path):
    h = 8
    gru = helper.make_node("GRU", ["x", "W", "R"], ["y"], name="gru0", hidden_size=h)  # linear_before_reset=0
    rng = np.random.default_rng(0)
    m = mb.model(
        [gru, helper.make_node("MatMul", ["x", "w"], ["z"], name="proj")],
        [mb.value("x", [4, 2, h])],
        [mb.value("y", [4, 1, 2, h]), mb.value("z", [4, 2, h])],
        [mb.weight("W", (1, 3 * h, h), rng), mb.weight("R", (1, 3 * h, h), rng), mb.weight("w", (h, h), rng)],
        "gru",
    )
    result = invoke("gen", "--from-model", mb.save(m, tmp_path, "gru"), "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    with open(tmp_path / "out" / "gru" / "not_expressed.csv") as fh:
        (row,) = csv.DictReader(fh)
    assert (row["node"], row["op"]) == ("gru0", "GRU") and row["reason"].startswith("GRU with linear_before_reset=0")
    assert "linear_before_reset=0" in result.output and "gemm_m8_n8_k8_nn" in result.output


def external_model(tmp_path: Path, location: str) -> Path:
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    w = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 4], data_location=TensorProto.EXTERNAL)
    w.external_data.add(key="location", value=location)
    m = mb.model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], [mb.value("x", [2, 4])], [mb.value("y", [2, 4])], [w], "ext"
    )
    return mb.save(m, folder, "ext")


def test_external_data_outside_the_folder_is_refused(tmp_path):
    (tmp_path / "w.bin").write_bytes(np.ones((4, 4), np.float32).tobytes())
    path = external_model(tmp_path, "../w.bin")
    one_error_line(invoke("gen", "--from-model", path, "--out", tmp_path / "out"), "outside the model's folder")
    one_error_line(invoke("run", "--model", path, "--out", tmp_path / "results"), "outside the model's folder")
    assert not (tmp_path / "out").exists() and not (tmp_path / "results").exists()


def test_external_data_inside_the_folder_is_read(tmp_path):
    path = external_model(tmp_path, "w.bin")
    (path.parent / "w.bin").write_bytes(np.eye(4, dtype=np.float32).tobytes())
    result = invoke(
        "run", "--model", path, "--quick", "--profile-runs", "0", "--threads", "1", "--out", tmp_path / "results"
    )
    assert result.exit_code == 0, result.output
    (row,) = rows_of(tmp_path / "results")
    assert (row["status"], row["verified"]) == ("ok", True), row["message"]


def test_too_large_for_memory(tmp_path):
    path = external_model(tmp_path, "w.bin")
    with open(path.parent / "w.bin", "wb") as fh:  # sparse: takes no disk, claims 256 GiB
        fh.truncate(256 * 2**30)
    one_error_line(invoke("run", "--model", path, "--out", tmp_path / "results"), "GiB available", code=1)
    assert not (tmp_path / "results").exists()


def test_catalog_selectors_beside_a_model_are_refused(tmp_path):
    path = mb.save(mb.mlp(np.random.default_rng(0)), tmp_path, "mlp")
    one_error_line(invoke("gen", "--from-model", path, "--dim", "batch=1", "--ops", "conv"), "drop --ops")
    one_error_line(invoke("run", "--model", path, "--dim", "batch=1", "--graphs", tmp_path), "give one of them")
    one_error_line(
        invoke("run", "--model", path, "--dim", "batch=1", "--suite", "train", "--out", tmp_path / "r"),
        "--model takes its kernels from the model; drop --suite",
    )
    one_error_line(
        invoke("run", "--dim", "batch=1", "--out", tmp_path / "r"), "--dim sizes the inputs of foreign models"
    )
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_model_beside_its_kernels_end_to_end(tmp_path):
    """gen --from-model, run its kernels, run the whole model with --kernels-run: the printed table is
    model_vs_kernels over the two logs."""
    path = mb.save(mb.mlp(np.random.default_rng(0)), tmp_path, "mlp")
    common = ["--quick", "--profile-runs", "0", "--threads", "1", "--out", tmp_path / "results"]
    assert invoke("gen", "--from-model", path, "--dim", "batch=4", "--out", tmp_path / "graphs").exit_code == 0
    result = invoke("run", "--graphs", tmp_path / "graphs" / "mlp", *common)
    assert result.exit_code == 0, result.output
    (kernels_log,) = (tmp_path / "results").rglob("*.jsonl")
    result = invoke("run", "--model", path, "--dim", "batch=4", "--kernels-run", kernels_log, *common)
    assert result.exit_code == 0, result.output
    model_log = next(p for p in (tmp_path / "results").rglob("*.jsonl") if p != kernels_log)
    read = lambda p: [json.loads(line) for line in p.read_text().splitlines()[1:] if '"type": "result"' in line]
    (row,) = model_vs_kernels(read(model_log), read(kernels_log))
    assert (row["kernels_timed"], row["kernels"], row["kernel_nodes_timed"], row["model_nodes"]) == (2, 2, 3, 5)
    assert "whole model vs the sum of its kernels" in result.output and f"{row['share']:.0%}" in result.output
