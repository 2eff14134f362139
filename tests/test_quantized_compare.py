"""`dbench compare FP32 QUANTIZED --quantized`: the Wilson interval and the error tally against their
formulas, the pairing of two cuts' units, a side whose time is unverified shown but not trusted; then
the whole command on twins onnxruntime.quantization makes at test time (a static QDQ CNN classifier
through `dbench predict`, whole and per unit; a dynamic-int8 MLP through `run --model`, whole only),
and a twin with a wrong weight scale whose accuracy cost must show; bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.stats.agreement import ErrorTally, wilson
from dbench.store.compare import Side
from dbench.units.speedup import speeds
from dbench.units.twins import CutSide, pair_units
from tests import quantized_twins as qm

runner = CliRunner()
QUICK = ("--quick", "--threads", "1", "--rounds", "3")


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_the_wilson_interval_is_the_score_interval_and_stays_inside_0_and_1():
    low, high = wilson(50, 100)
    z = 1.959963984540054
    centre, half = (
        (0.5 + z * z / 200) / (1 + z * z / 100),
        z * math.sqrt(0.25 / 100 + z * z / 40000) / (1 + z * z / 100),
    )
    assert (low, high) == pytest.approx((centre - half, centre + half))
    low, high = wilson(200, 200)
    assert high == 1.0 and low == pytest.approx(200 / (200 + z * z))  # all agree: n / (n + z²)
    assert wilson(0, 10)[0] == pytest.approx(0.0, abs=1e-12)


def test_the_error_tally_pools_the_inputs_and_counts_top1_rows_only_for_a_classifier(seed):
    rng = np.random.default_rng(seed)
    refs = [rng.standard_normal((4, 10)) for _ in range(5)]
    gots = [r + 0.05 * rng.standard_normal(r.shape) for r in refs]
    gots[2][0] = -refs[2][0]  # one row's class changes
    tally, plain = ErrorTally(classify=True), ErrorTally()
    for r, g in zip(refs, gots):
        tally.add(r, g)
        plain.add(r, g)
    d = np.concatenate([(g - r).ravel() for r, g in zip(refs, gots)])
    ref = np.concatenate([r.ravel() for r in refs])
    assert tally.relative_error == pytest.approx(np.linalg.norm(d) / np.linalg.norm(ref))
    agree = sum(int(np.sum(np.argmax(r, -1) == np.argmax(g, -1))) for r, g in zip(refs, gots))
    assert tally.rows == 20 and tally.agree == agree < 20
    assert plain.agreement is None and plain.relative_error == tally.relative_error


def test_units_pair_by_a_shared_node_name_or_a_written_value_and_the_rest_have_no_twin():
    fp32 = CutSide(
        ("f.u1", "f.u2", "f.u3"),
        (("/0/Conv", "/1/Relu"), ("/2/Gemm",), ("/3/Softmax",)),
        {"/0/Conv": ("c",), "/1/Relu": ("r",), "/2/Gemm": ("g",), "/3/Softmax": ("y",)},
    )
    quantized = CutSide(
        ("q.u1", "q.u2", "q.u3", "q.u4"),
        (
            ("x_QuantizeLinear",),
            ("w_DequantizeLinear", "/0/Conv", "r_QuantizeLinear"),
            ("/2/Gemm_quant", "/2/Gemm_Add"),
            ("/3/Softmax",),
        ),
        {
            "x_QuantizeLinear": ("xq",),
            "/0/Conv": ("r",),
            "/2/Gemm_quant": ("gi",),
            "/2/Gemm_Add": ("g",),
            "/3/Softmax": ("y",),
        },
    )
    pairing = pair_units(fp32, quantized)
    assert [(t.fp32, t.quantized) for t in pairing.twins] == [((0,), (1,)), ((1,), (2,)), ((2,), (3,))]
    assert pairing.quantized_alone == (0,) and pairing.fp32_alone == ()
    assert pairing.twins[0].label(fp32) == "/0/Conv+/1/Relu"


def _row(graph: str, rounds: list[float], status: str = "ok") -> dict:
    return {
        "graph_id": graph,
        "status": status,
        "verified": status == "ok",
        "median_us": float(np.median(rounds)),
        "round_medians_us": rounds,
    }


def test_a_side_whose_check_failed_keeps_its_speedup_shown_but_untrusted_and_without_a_verdict():
    a = Side("fp32", [{}], ["a"], ["m"])
    b = Side("int8", [{}], ["b"], ["m"])
    lines = {
        "whole model": ([_row("f", [100.0, 101.0, 99.0, 100.5])], [_row("q", [50.0, 51.0, 49.5, 50.2])]),
        "/0/Conv": ([_row("f1", [40.0, 41.0, 39.0, 40.2])], [_row("q1", [10.0, 10.4, 9.9, 10.1], "mismatch")]),
    }
    _, found = speeds(a, b, lines)
    whole, conv = found
    assert whole.trusted and whole.pair.verdict == "faster" and whole.speedup == pytest.approx(2.0, rel=0.02)
    assert whole.interval[0] < whole.speedup < whole.interval[1]
    assert not conv.trusted and conv.pair.verdict == "b: mismatch" and conv.pair.difference is None
    assert conv.speedup == pytest.approx(4.0, rel=0.03) and conv.interval[0] < conv.speedup < conv.interval[1]


@pytest.fixture(scope="module")
def twins(tmp_path_factory) -> dict[str, Path]:
    """The corpus, made once: the CNN, its QDQ twin and a broken copy; the MLP and its dynamic twin."""
    folder = tmp_path_factory.mktemp("twins")
    cnn = qm.cnn_classifier(folder, 7)
    qdq = qm.qdq_twin(cnn, 7)
    mlp = qm.mlp(folder, 8)
    return {"cnn": cnn, "qdq": qdq, "broken": qm.broken_twin(qdq), "mlp": mlp, "dynamic": qm.dynamic_twin(mlp)}


def run_id(out: Path, model: Path) -> str:
    """The id of the run under `out` that timed `model`."""
    for path in sorted(out.rglob("*.jsonl")):
        header = json.loads(path.read_text().splitlines()[0])
        if Path(header["request"]["graphs"]).name == model.name:  # a model file, or a folder
            return header["run_id"]
    raise AssertionError(f"no run of {model.name} under {out}")


@pytest.fixture(scope="module")
def predicted(twins, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """`dbench predict` of the CNN, its QDQ twin and the broken twin on ort-cpu: the results folder, run ids."""
    out = tmp_path_factory.mktemp("results")
    ids = {}
    for key in ("cnn", "qdq", "broken"):
        result = invoke("predict", twins[key], "--runtime", "ort-cpu", *QUICK, "--out", out, "--format", "json")
        assert result.exit_code in (0, 3), result.output  # 3: a row mismatch (the QDQ rule is another change's)
        ids[key] = run_id(out, twins[key])
    return out, ids


def compared(out: Path, *runs_and_options) -> dict:
    result = invoke("compare", *runs_and_options, "--quantized", "--out", out, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_qdq_twin_is_set_beside_its_fp32_model_whole_and_unit_by_unit(predicted):
    out, ids = predicted
    shown = compared(out, ids["cnn"], ids["qdq"], "--inputs", 120)
    whole, *units = shown["lines"]
    assert whole["label"] == "whole model" and shown["inputs"] == 120 and shown["runtime"] == "ort-cpu"
    assert whole["speedup"] > 0 and whole["speedup_low"] < whole["speedup"] < whole["speedup_high"]
    assert whole["speedup"] == pytest.approx(whole["fp32_us"] / whole["quantized_us"], rel=0.5)
    (logits,) = whole["errors"]
    assert logits["name"] == "logits" and 0 < logits["relative_error"] < 0.1 and logits["rows"] == 120
    assert logits["agreement"] >= 0.9 and logits["agreement_low"] <= logits["agreement"] <= logits["agreement_high"]
    convs = [u for u in units if "Conv" in u["label"]]
    assert len(convs) == 2 and all(u["fp32_units"] and u["quantized_units"] for u in convs)
    assert all(0 < e["relative_error"] < 0.1 and e["agreement"] is None for u in convs for e in u["errors"])
    assert any("QuantizeLinear" in u for u in shown["quantized_units_without_twin"])
    table = invoke("compare", ids["cnn"], ids["qdq"], "--quantized", "--out", out, "--inputs", 20)
    assert table.exit_code == 0, table.output
    assert "speedup" in table.stdout and "top-1 agreement" in table.stdout and "output logits" in table.stdout


def test_a_twin_with_a_wrong_weight_scale_shows_its_accuracy_cost(predicted):
    out, ids = predicted
    good = compared(out, ids["cnn"], ids["qdq"], "--inputs", 100)["lines"]
    broken = compared(out, ids["cnn"], ids["broken"], "--inputs", 100)["lines"]
    assert broken[0]["errors"][0]["relative_error"] > 5 * good[0]["errors"][0]["relative_error"]
    assert broken[0]["errors"][0]["relative_error"] > 0.2
    first = next(u for u in broken if u["label"].startswith("/0/Conv"))
    assert first["errors"][0]["relative_error"] > 0.5


@pytest.mark.parametrize("runtime", ["ort-cpu", "openvino"])
def test_a_dynamic_int8_twin_run_whole_is_compared_whole_and_a_precision_fallback_is_said(twins, tmp_path, runtime):
    out = tmp_path / "out"
    for key in ("mlp", "dynamic"):
        result = invoke("run", "--model", twins[key], "--runtime", runtime, *QUICK, "--out", out)
        assert result.exit_code == 0, result.output
    shown = compared(out, run_id(out, twins["mlp"]), run_id(out, twins["dynamic"]), "--inputs", 80)
    (whole,) = shown["lines"]
    (logits,) = whole["errors"]
    assert shown["runtime"] == runtime and whole["speedup"] > 0 and logits["rows"] == 80
    assert 0 < logits["relative_error"] < 0.1 and logits["agreement"] >= 0.85
    lines = next(out.rglob(f"{run_id(out, twins['dynamic'])}.jsonl")).read_text().splitlines()
    row = next(r for r in map(json.loads, lines) if r.get("type") == "result")
    said = [n for n in shown["notes"] if n.startswith("mlp_dynamic ran in")]
    assert bool(said) == bool(row["precision_fallback"]), (said, row["precision_executed"])


def test_one_run_of_a_folder_of_both_models_pairs_their_rounds(twins, tmp_path):
    folder, out = tmp_path / "both", tmp_path / "out"
    folder.mkdir()
    for key in ("cnn", "qdq"):
        (folder / twins[key].name).write_bytes(twins[key].read_bytes())
    result = invoke("run", "--graphs", folder, "--runtime", "ort-cpu", *QUICK, "--out", out)
    assert result.exit_code in (0, 3), result.output
    shown = compared(out, run_id(out, folder), "--inputs", 60)
    (whole,) = shown["lines"]
    assert "paired" in shown["method"] and shown["fp32"].endswith("(cnn_fp32.onnx)")
    assert shown["quantized"].endswith("(cnn_int8.onnx)") and whole["speedup"] > 0
    assert 0 < whole["errors"][0]["relative_error"] < 0.1 and whole["errors"][0]["rows"] == 60


def test_bad_input_is_one_line(predicted):
    out, ids = predicted
    one = invoke("compare", ids["cnn"], "--quantized", "--out", out)
    assert one.exit_code == 2 and "not a run of a folder of two models" in one.output and "Traceback" not in one.output
    three = invoke("compare", ids["cnn"], ids["qdq"], ids["broken"], "--quantized", "--out", out)
    assert three.exit_code == 2 and "takes two runs" in three.output
    csv = invoke("compare", ids["cnn"], ids["qdq"], "--quantized", "--out", out, "--format", "csv")
    assert csv.exit_code == 2 and "table or json" in csv.output
    none = invoke("compare", ids["cnn"], ids["qdq"], "--quantized", "--out", out, "--inputs", 0)
    assert none.exit_code == 2 and "--inputs 0" in none.output
