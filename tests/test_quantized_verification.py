"""Quantized models verified in their own units (dbench.check.quantized): a static QDQ ResNet-18 and
MobileNetV2 (per-channel, made by onnxruntime.quantization here, shrunk) and a dynamic-int8 MLP run
`ok` on ONNX Runtime and OpenVINO, whose outputs differ from the reference by rounding; real defects
(an output shifted a step by a wrong zero point, a requantization with a wrong scale, uint8 x int8
pair sums saturating in 16 bits, the unquantized model run instead) stay `mismatch`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from typer.testing import CliRunner

from dbench.check.quantized import chain_rule, derive, rounding_nodes
from dbench.check.verdict import compare
from dbench.cli import app
from dbench.sources.model_reference import reference_outputs, tolerance
from tests import quantized_models as qm

runner = CliRunner()
RUN = ("--quick", "--threads", "1", "--rounds", "3", "--profile-runs", "0")
SIZE, WIDTH = 48, 0.5


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def rows_of(out: Path) -> list[dict]:
    records = [json.loads(line) for log in sorted(out.rglob("*.jsonl")) for line in log.read_text().splitlines()[1:]]
    return [r for r in records if r.get("type") == "result"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """{name: (fp32 model, its int8 twin)}: ResNet-18 and MobileNetV2 static QDQ, the MLP dynamic."""
    folder = tmp_path_factory.mktemp("quantized")
    return {**qm.static_models(folder, SIZE, WIDTH), "mlp": qm.dynamic_model(folder)}


def _feeds(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    (value,) = model.graph.input
    shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
    return {value.name: np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}


def _spec(path: Path):
    from dbench.sources.model import model_item

    return model_item(path, {}).spec


def _checked(path: Path, feeds):
    """(the reference's outputs, the rule derived for the model)."""
    model, spec = onnx.load(str(path)), _spec(path)
    expected, _by = reference_outputs(model, spec, feeds)
    return expected, derive(model, spec, feeds, expected, tolerance(spec))


def _ort(model: onnx.ModelProto | Path, feeds) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def _openvino(path: Path, feeds) -> dict[str, np.ndarray]:
    import openvino as ov

    compiled = ov.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled(feeds)
    return {port.get_any_name(): np.asarray(result[port]) for port in compiled.outputs}


def test_a_static_model_gets_a_step_rule_derived_from_its_graph(corpus):
    path = corpus["resnet18"][1]
    model = onnx.load(str(path))
    expected, rule = _checked(path, _feeds(model, 1))
    (output,) = rule.outputs
    scale = next(numpy_helper.to_array(t) for t in model.graph.initializer if t.name == "y_scale")
    assert output.metric == "steps" and output.grid and output.scale == pytest.approx(float(scale))
    assert rounding_nodes(model) > 20  # a chain of requantizations: the perturbed evaluations moved the output
    assert output.bound > 1 + 1.5 and output.rms > 0.5 and 0.5 < output.bias < 1.0, output
    assert output.bound < 0.25 * float(np.ptp(expected["y"])) / output.scale  # well inside the output's range


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "mlp"])
def test_two_runtimes_that_round_differently_are_both_ok(corpus, name, seed):
    path = corpus[name][1]
    feeds = _feeds(onnx.load(str(path)), seed)
    expected, rule = _checked(path, feeds)
    for outputs in (_ort(path, feeds), _openvino(path, feeds)):
        verdict = compare(outputs, expected, rule)
        assert verdict.ok, verdict


def _shifted(outputs: dict[str, np.ndarray], rule, steps: float) -> dict[str, np.ndarray]:
    return {name: value + steps * rule.rule_for(name).scale for name, value in outputs.items()}


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_an_output_shifted_one_step_by_a_wrong_zero_point_is_a_mismatch(corpus, name, seed):
    path = corpus[name][1]
    feeds = _feeds(onnx.load(str(path)), seed)
    expected, rule = _checked(path, feeds)
    outputs = _ort(path, feeds)
    assert compare(outputs, expected, rule).ok
    for steps in (1.0, -1.0):
        verdict = compare(_shifted(outputs, rule, steps), expected, rule)
        assert not verdict.ok and "shifted" in verdict.detail, verdict


def _wrong_scale(model: onnx.ModelProto, factor: float) -> onnx.ModelProto:
    """The model with the middle requantization (QuantizeLinear) using its scale times `factor`, its
    DequantizeLinear the right one: a runtime that requantizes one layer with a wrong scale."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    quantizers = [n for n in copy.graph.node if n.op_type == "QuantizeLinear"]
    node = quantizers[len(quantizers) // 2]
    scale = next(t for t in copy.graph.initializer if t.name == node.input[1])
    wrong = numpy_helper.from_array(numpy_helper.to_array(scale) * np.float32(factor), scale.name + "_wrong")
    copy.graph.initializer.append(wrong)
    node.input[1] = wrong.name
    return copy


LOOSE = pytest.mark.xfail(
    strict=False,
    reason="a known weakness of the derived budget: on the shrunk MobileNetV2 the perturbed evaluations spread "
    "about 5.5 steps RMS, and a doubled scale in the middle requantization moves the output about 8.5; it was "
    "caught on 8 of 10 fresh inputs (docs/method.md, what the quantized rule cannot catch)",
)


@pytest.mark.parametrize(
    "factor, name",
    [(2.0, "resnet18"), (0.5, "resnet18"), (0.5, "mobilenet_v2"), pytest.param(2.0, "mobilenet_v2", marks=LOOSE)],
)
def test_one_requantization_with_a_wrong_scale_is_a_mismatch(corpus, name, factor, seed):
    path = corpus[name][1]
    model = onnx.load(str(path))
    feeds = _feeds(model, seed)
    expected, rule = _checked(path, feeds)
    verdict = compare(_ort(_wrong_scale(model, factor), feeds), expected, rule)
    assert not verdict.ok, verdict


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "mlp"])
def test_a_runtime_that_silently_ran_the_unquantized_model_is_a_mismatch(corpus, name, seed):
    fp32, int8 = corpus[name]
    feeds = _feeds(onnx.load(str(int8)), seed)
    expected, rule = _checked(int8, feeds)
    verdict = compare(_ort(fp32, feeds), expected, rule)
    assert not verdict.ok, verdict


def _saturating_matmul_integer():
    """MatMulInteger as ONNX Runtime's AVX2 kernel without VNNI computes uint8 x int8 (vpmaddubsw):
    products of the raw uint8 and int8 values added in pairs along K in saturating 16-bit arithmetic,
    the pairs then summed in 32 bits, the zero points corrected for afterwards."""
    from onnx.reference.op_run import OpRun

    class MatMulInteger(OpRun):
        op_domain = ""

        def _run(self, a, b, a_zero_point=None, b_zero_point=None):  # noqa: ANN001, ANN202
            a64, b64 = a.astype(np.int64), b.astype(np.int64)
            k = a64.shape[-1]
            products = a64[..., :, None] * b64[None, :, :] if a64.ndim == 2 else None
            pairs = products[:, : k - k % 2 : 2] + products[:, 1 : k - k % 2 : 2]
            total = np.clip(pairs, -32768, 32767).sum(axis=1) + (products[:, -1] if k % 2 else 0)
            if a_zero_point is not None:
                total -= np.int64(a_zero_point) * b64.sum(axis=0)
            if b_zero_point is not None:
                total -= a64.sum(axis=1, keepdims=True) * np.asarray(b_zero_point, np.int64)
                total += k * np.int64(a_zero_point if a_zero_point is not None else 0) * np.asarray(b_zero_point)
            return (total.astype(np.int32),)

    return MatMulInteger


def test_saturating_uint8_by_int8_pair_sums_are_a_mismatch(corpus, seed):
    from dbench.sources.foreign_reference import foreign_evaluator

    path = corpus["mlp"][1]
    model = onnx.load(str(path))
    feeds = _feeds(model, seed)
    feeds = {name: np.abs(value) * 4 for name, value in feeds.items()}  # activations that fill the uint8 range
    expected, rule = _checked(path, feeds)
    assert compare(_ort(path, feeds), expected, rule).ok
    (saturated,) = foreign_evaluator(model, [_saturating_matmul_integer()]).run(None, feeds)
    verdict = compare({"y": saturated}, expected, rule)
    assert not verdict.ok, verdict


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_a_static_qdq_model_runs_ok_on_both_cpu_runtimes_with_run_model(corpus, name, tmp_path):
    result = invoke("run", "--model", corpus[name][1], "--runtime", "ort-cpu,openvino", *RUN, "--out", tmp_path)
    rows = rows_of(tmp_path)
    assert result.exit_code == 0, result.output
    assert sorted(r["runtime"] for r in rows) == ["openvino", "ort-cpu"]
    for row in rows:
        assert row["status"] == "ok" and row["verified"], (row["runtime"], row["message"])
        assert row["tolerance_metric"] == "steps" and row["precision"] == "int8"


@pytest.mark.slow
def test_a_dynamic_int8_model_runs_with_model_graphs_and_predict_on_both_cpu_runtimes(corpus, tmp_path):
    path = corpus["mlp"][1]
    folder = tmp_path / "graphs"
    folder.mkdir()
    (folder / path.name).write_bytes(path.read_bytes())
    for args in (("--model", path), ("--graphs", folder)):
        out = tmp_path / args[0].strip("-")
        result = invoke("run", *args, "--runtime", "ort-cpu,openvino", *RUN, "--out", out)
        rows = rows_of(out)
        assert result.exit_code == 0, result.output
        assert len(rows) == 2 and all(r["status"] == "ok" and r["verified"] for r in rows), [
            (r["runtime"], r["message"]) for r in rows
        ]
    for runtime in ("ort-cpu", "openvino"):
        out = tmp_path / f"predict-{runtime}"
        result = invoke("predict", path, "--runtime", runtime, *RUN[:-2], "--out", out, "--format", "json")
        assert result.exit_code == 0, result.output
        rows = rows_of(out)
        assert rows and all(r["status"] in ("ok", "unsupported") for r in rows), [
            (r["graph_id"], r["status"], r["message"]) for r in rows
        ]
        assert all(r["message"] for r in rows if r["status"] == "unsupported")


@pytest.mark.slow
def test_the_units_predict_cuts_from_a_qdq_model_are_verified_in_steps(corpus, tmp_path):
    result = invoke("predict", corpus["resnet18"][1], "--runtime", "ort-cpu", *RUN[:-2], "--out", tmp_path)
    assert result.exit_code == 0, result.output
    rows = [r for r in rows_of(tmp_path) if r["attrs"]["predict"]["role"] == "unit"]
    assert rows and all(r["status"] == "ok" and r["verified"] for r in rows), [
        (r["graph_id"], r["message"]) for r in rows
    ]
    assert any(r["tolerance_metric"] == "steps" for r in rows)


def test_without_a_reference_a_quantized_output_gets_a_step_per_rounding_on_its_chain(corpus):
    model = onnx.load(str(corpus["resnet18"][1]))
    base = tolerance(_spec(corpus["resnet18"][1]))
    (output,) = chain_rule(model, base).outputs
    assert output.metric == "steps" and output.grid and output.bias == 0.5
    assert 10 <= output.bound <= rounding_nodes(model)  # the longest chain, not every rounding
    fp32 = onnx.load(str(corpus["resnet18"][0]))
    assert chain_rule(fp32, base) == base  # nothing rounds: the float rule


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_the_first_node_that_differs_is_the_defect_not_a_rounding(corpus, name, seed):
    """Every value judged by its own derived rule: ONNX Runtime's values of the model agree everywhere;
    with one requantization's scale doubled, the first value that differs is that requantization's."""
    from dbench.check.localise import exposed, first_disagreement
    from dbench.sources.model_reference import reference_values

    path = corpus[name][1]
    model, spec = onnx.load(str(path)), _spec(path)
    feeds = _feeds(model, seed)
    values, _by = reference_values(model, spec, feeds)
    rule = derive(model, spec, feeds, values, tolerance(spec), every_value=True)
    assert first_disagreement(model, values, _ort(exposed(model, spec)[0], feeds), rule, ["y"]) is None
    wrong = _wrong_scale(model, 2.0)
    (quantizer,) = [n for n in wrong.graph.node if n.op_type == "QuantizeLinear" and n.input[1].endswith("_wrong")]
    found = first_disagreement(model, values, _ort(exposed(wrong, spec)[0], feeds), rule, ["y"])
    readers = [n.name for n in model.graph.node if quantizer.output[0] in n.input]
    assert found is not None and found["node"] in readers, (found, readers)


def test_the_transposes_onnx_runtime_wraps_an_int8_unit_in_are_left_out_of_its_time():
    """An int8 convolution timed alone on ONNX Runtime runs as Transpose, QLinearConv (NHWC), Transpose;
    inside the model its neighbours hand it NHWC: the Transposes no node of the unit made are boundary
    layers, a Transpose that is the unit's own node is not."""
    from dbench.units.prediction import kept

    occurrences = [{"nodes": ["dq", "/conv", "q"], "layers": ["/conv_token_10"]}]
    profile = [
        {"name": "Transpose", "op_type": "Transpose", "time_us": 6.0},
        {"name": "/conv_token_1", "op_type": "QLinearConv", "time_us": 40.0},
        {"name": "Transpose_token_0", "op_type": "Transpose", "time_us": 14.0},
    ]
    unit = {"nodes": profile, "attrs": {"predict": {"role": "unit", "kind": "executed", "occurrences": occurrences}}}
    assert kept(unit) == pytest.approx(40 / 60)
    own = [{"nodes": ["/t"], "layers": ["/t"]}]
    transpose = {
        "nodes": [{"name": "/t_token_2", "op_type": "Transpose", "time_us": 5.0}],
        "attrs": {"predict": {"role": "unit", "kind": "executed", "occurrences": own}},
    }
    assert kept(transpose) == 1.0
