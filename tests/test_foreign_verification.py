"""A foreign graph's reference is checked too (issue 40): a runtime that disagrees with onnx.reference is
held against a second, independent implementation before it is blamed (disputed when the two runtimes
agree against the reference, mismatch when the second sides with the reference or with neither, mismatch
saying so when there is none); a model the reference cannot run is verified across runtimes; a
structure-only model is verified with seeded random weights; ONNX Runtime refusing a valid model is
unsupported. Real ONNX Runtime and OpenVINO, small models; the reference is made wrong on purpose (a
test-only evaluator override), and so is a runtime (its outputs changed after it ran)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference.op_run import OpRun
from typer.testing import CliRunner

from dbench.cli import app
from dbench.outcome import Status
from dbench.runtimes.base import RuntimeOptions
from dbench.worker.job import Job
from dbench.worker.main import execute
from dbench.worker.timing import QUICK
from tests import model_builders as mb

runner = CliRunner()
OTHER = {"ort-cpu": "openvino", "openvino": "ort-cpu"}
SESSIONS = {"ort-cpu": "dbench.runtimes.onnxruntime.OrtSession", "openvino": "dbench.runtimes.openvino.OpenVinoSession"}


def conv_relu(rng, opset: int = 13) -> onnx.ModelProto:
    """x [1, 4, 8, 8] -> Conv 3x3 (8) -> Relu -> Conv 3x3 (4): real random weights."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["y"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    inits = [mb.weight("w1", (8, 4, 3, 3), rng), mb.weight("b1", (8,), rng), mb.weight("w2", (4, 8, 3, 3), rng)]
    m = mb.model(nodes, [mb.value("x", [1, 4, 8, 8])], [mb.value("y", [1, 4, 8, 8])], inits, "conv_relu")
    m.opset_import[0].version = opset
    m.ir_version = 7
    return m


def run_model(path: Path, runtime: str) -> object:
    """One model through its graph source and the worker, in this process (so monkeypatches reach it)."""
    from dbench.sources.model import model_item

    item = model_item(path, {})
    data, digest = item.load()
    job = Job(
        spec=item.spec,
        model=data,
        sha256=digest,
        runtime=runtime,
        options=RuntimeOptions(threads=1),
        timing=QUICK,
        verify=True,
        profile_runs=0,
        contract=item.contract,
    )
    return execute(job)


class Relu(OpRun):
    """A wrong Relu (it passes negatives on): the reference made wrong by construction."""

    op_domain = ""

    def _run(self, x):  # noqa: ANN001, ANN202 (onnx.reference's calling convention)
        return (x.copy(),)


@pytest.fixture
def wrong_reference(monkeypatch):
    """The reference's evaluator with a wrong Relu, here and in the localisation of the first node."""
    from onnx.reference import ReferenceEvaluator

    from dbench.sources import model_reference

    monkeypatch.setattr(
        model_reference,
        "_evaluator",
        lambda model, new_ops=None: ReferenceEvaluator(model, new_ops=[Relu, *(new_ops or [])]),
    )


def wrong_runtime(monkeypatch, runtime: str, change) -> None:
    """The runtime's outputs changed after it ran (in this process only: the second implementation runs in
    a child process, untouched)."""
    module, _, name = SESSIONS[runtime].rpartition(".")
    cls = getattr(__import__(module, fromlist=[name]), name)
    original = cls.outputs
    monkeypatch.setattr(cls, "outputs", lambda self: {k: change(v) for k, v in original(self).items()})


def row_of(outcome, spec) -> dict:
    from dbench.store.schema import Row

    return Row.build("run", 1, spec, {"name": "ort-cpu", "version": "1", "options": {}}, "const", outcome).to_dict()


@pytest.mark.parametrize("runtime", ["ort-cpu", "openvino"])
def test_runtimes_that_agree_against_a_wrong_reference_are_disputed(tmp_path, runtime, seed, wrong_reference):
    outcome = run_model(mb.save(conv_relu(np.random.default_rng(seed)), tmp_path, "conv_relu"), runtime)
    assert outcome.status == Status.DISPUTED, outcome.message
    second = outcome.verification["second"]
    assert (second["runtime"], second["agrees"], second["agrees_with_reference"]) == (OTHER[runtime], True, False)
    assert second["error"] < 1e-5 and second["version"]
    first = outcome.verification["first_difference"]
    assert (first["node"], first["op"], first["opset"], first["output"]) == ("relu1", "Relu", 13, "r1")
    assert outcome.verification["outputs"] == ["y"] and outcome.verification["check"] == "full"
    assert (
        f"{OTHER[runtime]} agrees with this runtime" in outcome.message
        and "first node that differs: Relu 'relu1'" in outcome.message
    )
    assert outcome.stats.median_us > 0  # timed: a disputed row's time stands


def test_a_foreign_graph_under_load_is_disputed_the_same_way(tmp_path, seed, wrong_reference):
    """Throughput rows of a foreign graph: the first request checked against the reference and the second
    implementation, every other request against the first."""
    from dbench.scenario import Load
    from dbench.sources.model import model_item

    item = model_item(mb.save(conv_relu(np.random.default_rng(seed)), tmp_path, "conv_relu"), {})
    data, digest = item.load()
    outcome = execute(
        Job(
            spec=item.spec,
            model=data,
            sha256=digest,
            runtime="ort-cpu",
            options=RuntimeOptions(threads=1),
            timing=QUICK,
            verify=True,
            profile_runs=0,
            contract=item.contract,
            load=Load("throughput", 2),
        )
    )
    assert outcome.status == Status.DISPUTED, outcome.message
    assert outcome.verification["requests_checked"] == 2 and outcome.verification["second"]["runtime"] == "openvino"
    assert outcome.stats.inferences > 0  # timed under load: the disputed time stands


def test_a_runtime_the_second_implementation_contradicts_is_a_mismatch(tmp_path, seed, monkeypatch):
    wrong_runtime(monkeypatch, "ort-cpu", lambda v: v + 0.1 * np.abs(v).max())
    outcome = run_model(mb.save(conv_relu(np.random.default_rng(seed)), tmp_path, "conv_relu"), "ort-cpu")
    assert outcome.status == Status.MISMATCH, outcome.message
    second = outcome.verification["second"]
    assert (second["runtime"], second["agrees"], second["agrees_with_reference"]) == ("openvino", False, True)
    assert "openvino agrees with onnx.reference" in outcome.message
    assert outcome.verification["first_difference"]["op"] == "Conv"  # every value it exposes is shifted: the first node


def test_three_implementations_that_all_differ_are_a_mismatch(tmp_path, seed, monkeypatch, wrong_reference):
    wrong_runtime(monkeypatch, "ort-cpu", lambda v: v + 0.1 * np.abs(v).max())
    outcome = run_model(mb.save(conv_relu(np.random.default_rng(seed)), tmp_path, "conv_relu"), "ort-cpu")
    assert outcome.status == Status.MISMATCH and "openvino agrees with neither" in outcome.message
    assert (
        outcome.verification["second"]["agrees"] is False
        and outcome.verification["second"]["agrees_with_reference"] is False
    )


def test_without_a_second_implementation_a_mismatch_says_so(tmp_path, seed, monkeypatch, wrong_reference):
    from dbench.runtimes.openvino import OpenVino

    monkeypatch.setattr(OpenVino, "availability", classmethod(lambda cls: (False, "openvino is not installed")))
    path = mb.save(conv_relu(np.random.default_rng(seed)), tmp_path, "conv_relu")
    outcome = run_model(path, "ort-cpu")
    assert outcome.status == Status.MISMATCH
    assert outcome.verification["second"] == {
        "runtime": None,
        "why": "no second implementation here (openvino: openvino is not installed)",
    }
    assert "no second implementation checked" in outcome.message
    from dbench.render.warnings import run_warnings
    from dbench.sources.model import model_item

    row = row_of(outcome, model_item(path, {}).spec)

    assert any("rest on onnx.reference alone" in line for line in run_warnings([row], {}))


@pytest.mark.parametrize("runtime", ["ort-cpu", "openvino"])
def test_a_model_over_the_reference_budget_is_verified_across_runtimes(tmp_path, runtime, seed, monkeypatch):
    from dbench.sources import model_reference

    monkeypatch.setattr(model_reference, "FLOP_BUDGET", 0)
    outcome = run_model(mb.save(conv_relu(np.random.default_rng(seed)), tmp_path, "conv_relu"), runtime)
    v = outcome.verification
    assert (outcome.status, v["ok"], v["check"], v["by"]) == (Status.OK, True, "cross-runtime", OTHER[runtime]), (
        outcome.message
    )
    assert v["error"] < 1e-5 and "above onnx.reference's budget" in v["reference"]
    assert outcome.message.startswith(f"verified against {OTHER[runtime]}, not onnx.reference")


def test_a_reference_past_its_time_budget_is_stopped_and_the_model_verified_across_runtimes(
    tmp_path, seed, monkeypatch
):
    """AveragePool is a Python loop in onnx.reference (about 0.5 s here; dbench's corrections leave this
    version to it); 0.05 s of budget stops it."""
    from dbench.sources import model_reference

    monkeypatch.setattr(model_reference, "TIME_BUDGET_S", 0.05)
    nodes = [helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    path = mb.save(
        mb.model(nodes, [mb.value("x", [1, 16, 64, 64])], [mb.value("y", [1, 16, 64, 64])], (), "pool"),
        tmp_path,
        "pool",
    )
    outcome = run_model(path, "ort-cpu")
    assert outcome.status == Status.OK and outcome.verification["check"] == "cross-runtime", outcome.message
    assert outcome.verification["reference"] == "onnx.reference ran past its budget of 0.05 s"


def test_runtimes_that_disagree_without_a_reference_are_a_mismatch_naming_both(tmp_path, seed, monkeypatch):
    from dbench.sources import model_reference

    monkeypatch.setattr(model_reference, "FLOP_BUDGET", 0)
    wrong_runtime(monkeypatch, "ort-cpu", lambda v: v * 1.01)
    outcome = run_model(mb.save(conv_relu(np.random.default_rng(seed)), tmp_path, "conv_relu"), "ort-cpu")
    assert outcome.status == Status.MISMATCH and outcome.verification["check"] == "cross-runtime"
    assert "against openvino, and onnx.reference cannot tell which is right" in outcome.message


def test_with_neither_a_reference_nor_a_second_runtime_the_row_says_unverified(tmp_path, seed, monkeypatch):
    from dbench.runtimes.openvino import OpenVino
    from dbench.sources import model_reference

    monkeypatch.setattr(model_reference, "FLOP_BUDGET", 0)
    monkeypatch.setattr(OpenVino, "availability", classmethod(lambda cls: (False, "openvino is not installed")))
    outcome = run_model(mb.save(conv_relu(np.random.default_rng(seed)), tmp_path, "conv_relu"), "ort-cpu")
    assert outcome.status == Status.OK and outcome.verification["ok"] is None
    assert outcome.message.startswith("unverified: ") and "no second implementation here" in outcome.message


def test_a_structure_only_model_is_verified_with_random_weights(tmp_path, monkeypatch):
    """Constant weights make every logit equal: a runtime that permuted its output classes passes a check
    of the timed graph (weakly), and fails the check with seeded random weights."""
    from dbench.sources.verify_weights import ForVerification
    from dbench.worker import foreign

    path = mb.save(mb.structure_only(), tmp_path, "structure")
    outcome = run_model(path, "ort-cpu")
    v = outcome.verification
    assert (outcome.status, v["ok"], v["random_weights"], v["exposed"]) == (Status.OK, True, 4, ["logits"]), (
        outcome.message
    )
    assert "seeded random weights in place of its 4 constant-filled ones" in outcome.message

    wrong_runtime(monkeypatch, "ort-cpu", lambda value: np.flip(value, axis=-1).copy())
    assert run_model(path, "ort-cpu").status == Status.MISMATCH
    monkeypatch.setattr(foreign, "for_verification", lambda model, spec: ForVerification(model, spec))
    unchanged = run_model(path, "ort-cpu")  # the timed graph's own outputs: the same fault passes, weakly
    assert unchanged.status == Status.OK and "weak verification" in unchanged.message


def test_random_weights_keep_the_timed_graph_and_values_that_set_shapes():
    from dbench.gen.graph import GraphSpec, TensorSpec
    from dbench.sources.verify_weights import for_verification

    model = mb.structure_only()
    before = model.SerializeToString()
    spec = GraphSpec(
        id="s",
        kernel_id="s",
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
        inputs=(TensorSpec("x", (1, 4, 6, 6), "float32", "activation"),),
        outputs=(TensorSpec("prob", (1, 10), "float32", "output"),),
        seed=7,
    )
    checked = for_verification(model, spec)
    assert model.SerializeToString() == before  # the timed graph is untouched
    assert checked.replaced == ("b1", "b2", "w1", "w2") and checked.exposed == ("logits",)
    assert [t.name for t in checked.spec.outputs] == ["prob", "logits"] and [
        o.name for o in checked.model.graph.output
    ] == ["prob", "logits"]
    drawn = {t.name: numpy_helper.to_array(t) for t in checked.model.graph.initializer}
    assert set(drawn) == {"b1", "b2", "w1", "w2"}  # the shape tensors read by nothing else are gone
    assert np.abs(drawn["w1"]).max() <= np.sqrt(6 / 36) and np.unique(drawn["w1"]).size == drawn["w1"].size
    assert not any(n.op_type == "ConstantOfShape" for n in checked.model.graph.node)
    assert for_verification(model, spec).model.SerializeToString() == checked.model.SerializeToString()  # seeded
    plain = conv_relu(np.random.default_rng(0))
    assert for_verification(plain, spec).model is plain  # a model with its own weights is verified as it is


def test_the_first_difference_ignores_values_no_disagreeing_output_reads():
    """An inference Dropout's unused mask (ONNX Runtime returns zeros, onnx.reference ones for opset 9)
    is not where the model's outputs part: the Relu after it is."""
    from dbench.check.localise import first_disagreement
    from dbench.gen.tolerance import Tolerance

    nodes = [
        helper.make_node("Dropout", ["x"], ["d", "mask"], name="drop"),
        helper.make_node("Relu", ["d"], ["r"], name="relu"),
        helper.make_node("Neg", ["r"], ["y"], name="neg"),
    ]
    model = mb.model(nodes, [mb.value("x", [4])], [mb.value("y", [4])])
    x = np.array([-1.0, 2.0, -3.0, 4.0])
    reference = {"d": x, "mask": np.ones(4), "r": np.maximum(x, 0), "y": -np.maximum(x, 0)}
    runtime = {"d": x, "mask": np.zeros(4), "r": x, "y": -x}
    found = first_disagreement(model, reference, runtime, Tolerance("rel", 1e-3), ["y"])
    assert (found["node"], found["op"], found["output"]) == ("relu", "Relu", "r")
    assert first_disagreement(model, reference, reference, Tolerance("rel", 1e-3), ["y"]) is None


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def rows_of(out: Path) -> list[dict]:
    records = [json.loads(line) for log in sorted(out.rglob("*.jsonl")) for line in log.read_text().splitlines()[1:]]
    return [r for r in records if r.get("type") == "result"]


def old_opset_cnn(rng) -> onnx.ModelProto:
    """An opset 9 CNN as old exporters wrote them: Conv -> BatchNormalization -> Relu -> GlobalAveragePool ->
    Softmax over the coerced 2-D [1, 8] of a [1, 8, 1, 1] input. onnx.reference 1.23 gets both the
    BatchNormalization (training momentum) and the Softmax (no coercion) of opset 9 wrong."""
    positive = lambda name, shape: numpy_helper.from_array(rng.uniform(0.5, 1.5, shape).astype(np.float32), name)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
        helper.make_node("Relu", ["n"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
        helper.make_node("Softmax", ["g"], ["y"], name="softmax", axis=1),
    ]
    inits = [
        mb.weight("w", (8, 4, 3, 3), rng),
        positive("s", (8,)),
        mb.weight("b", (8,), rng),
        mb.weight("m", (8,), rng),
        positive("v", (8,)),
    ]
    m = mb.model(nodes, [mb.value("x", [1, 4, 8, 8])], [mb.value("y", [1, 8, 1, 1])], inits, "old")
    m.opset_import[0].version = 9
    m.ir_version = 4
    return m


@pytest.mark.slow
def test_an_old_opset_model_is_never_the_runtimes_mismatch(tmp_path, seed):
    """End to end on both CPU runtimes: where onnx.reference is wrong (uncorrected), the two runtimes agree
    against it and the rows are disputed, naming the node; where dbench corrects the reference, verified."""
    path = mb.save(old_opset_cnn(np.random.default_rng(seed)), tmp_path, "old")
    result = invoke(
        "run",
        "--model",
        path,
        "--runtime",
        "ort-cpu,openvino",
        "--quick",
        "--profile-runs",
        "0",
        "--threads",
        "1",
        "--out",
        tmp_path / "results",
    )
    assert result.exit_code == 0, result.output
    rows = rows_of(tmp_path / "results")
    assert len(rows) == 2
    for row in rows:
        assert row["status"] in ("ok", "disputed"), row["message"]
        if row["status"] == "ok":
            assert row["verified"] is True and row["verified_by"] == "onnx.reference"
        else:
            assert row["cross_check"]["agrees"] is True and row["cross_check"]["runtime"] == OTHER[row["runtime"]]
            assert (
                row["first_difference"]["op"] in ("BatchNormalization", "Softmax")
                and row["first_difference"]["opset"] == 9
            )
            assert row["median_us"] > 0 and "disputed" in result.output
    if any(r["status"] == "disputed" for r in rows):
        assert "rows disputed" in result.output  # the run's warning


def lstm_without_hidden_size() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    hidden, features = 4, 3
    inits = [mb.weight("W", (1, 4 * hidden, features), rng), mb.weight("R", (1, 4 * hidden, hidden), rng)]
    nodes = [helper.make_node("LSTM", ["x", "W", "R"], ["y"], name="lstm")]
    return mb.model(nodes, [mb.value("x", [5, 2, features])], [mb.value("y", [5, 1, 2, hidden])], inits, "lstm")


def test_a_valid_model_ort_refuses_at_session_creation_is_unsupported(tmp_path):
    path = mb.save(lstm_without_hidden_size(), tmp_path, "lstm")
    result = invoke(
        "run",
        "--model",
        path,
        "--runtime",
        "ort-cpu",
        "--quick",
        "--profile-runs",
        "0",
        "--threads",
        "1",
        "--out",
        tmp_path / "results",
    )
    assert result.exit_code == 0, result.output
    (row,) = rows_of(tmp_path / "results")
    assert row["status"] == "unsupported" and "hidden_size" in row["message"]
    assert row["message"].startswith("ONNX Runtime refuses this valid model at session creation")


def test_a_model_onnx_rejects_too_stays_failed():
    """Not every refusal is unsupported: an Add of shapes that cannot broadcast is a broken model."""
    from dbench.errors import UnsupportedError
    from dbench.gen.graph import GraphSpec, TensorSpec
    from dbench.runtimes.onnxruntime import GraphLoadError, OrtCpu

    inputs = (TensorSpec("a", (2, 3), "float32", "activation"), TensorSpec("b", (4, 5), "float32", "activation"))
    spec = GraphSpec(
        id="add",
        kernel_id="add",
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
        inputs=inputs,
        outputs=(TensorSpec("c", (2, 3), "float32", "output"),),
        seed=1,
    )
    broken = mb.model(
        [helper.make_node("Add", ["a", "b"], ["c"])], [t.value_info() for t in inputs], [mb.value("c", [2, 3])]
    )
    with pytest.raises(GraphLoadError, match="ONNX's checker rejects the model too") as raised:
        OrtCpu(RuntimeOptions(threads=1)).prepare(broken, spec, {})
    assert not isinstance(raised.value, UnsupportedError)
