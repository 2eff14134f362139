"""How a `disputed` row (two runtimes agree with each other against the reference) is shown: the run
passes (exit 0) and warns naming who agreed and where the reference differs; its time counts in
`dbench compare` (the verdict says disputed) and in `dbench report` (status column), never silently ok."""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from dbench.cli import app
from dbench.outcome import Outcome, Status
from dbench.store.compare import Side, compare_sides

DISPUTE = {
    "cross_check": {
        "runtime": "openvino",
        "version": "2026.4.1",
        "agrees": True,
        "error": 2e-7,
        "agrees_with_reference": False,
        "error_to_reference": 0.9,
    },
    "first_difference": {
        "node": "bn",
        "op": "BatchNormalization",
        "domain": "ai.onnx",
        "opset": 9,
        "output": "n",
        "error": 14.7,
    },
    "disagreeing_outputs": ["y"],
    "verified_by": "onnx.reference",
    "verify_check": "full",
}


def compare_row(graph: str, medians: list[float], status: str = "ok") -> dict:
    return {
        "graph_id": graph,
        "status": status,
        "verified": status == "ok",
        "median_us": float(np.median(medians)),
        "variant": "",
        "round_medians_us": medians,
        "samples": 50,
        "runtime": "ort-cpu",
        **(DISPUTE if status == "disputed" else {}),
    }


def test_compare_judges_a_disputed_time_and_says_it_is_disputed():
    rounds = [100.0, 101.0, 99.0, 100.5, 99.5]
    a = Side("a", [{"g": compare_row("g", rounds, "disputed"), "h": compare_row("h", rounds)}], ["a0"], ["box"])
    b = Side(
        "b", [{"g": compare_row("g", rounds, "disputed"), "h": compare_row("h", rounds, "mismatch")}], ["b0"], ["box"]
    )
    pairs = {p.graph_id: p for p in compare_sides(a, b).pairs}
    assert (
        pairs["g"].verdict == "same"
        and pairs["g"].detail == "a and b: disputed, two runtimes agree against onnx.reference"
    )
    assert pairs["h"].verdict == "b: mismatch"  # a mismatch's time never counts


def report_row(kernel: str, status: str, median: float) -> dict:
    return {
        "graph_id": kernel,
        "kernel_id": kernel,
        "family": "model",
        "op": "model",
        "pass": "fwd",
        "form": "model",
        "precision": "fp32",
        "precision_executed": "fp32",
        "precision_fallback": False,
        "runtime": "ort-cpu",
        "status": status,
        "verified": status == "ok",
        "median_us": median,
        "tflops": 1e-3,
        "samples_us": [median] * 8,
        "flops": 1000,
        "min_bytes": 100,
        "intensity": 10.0,
        "gbps": 1.0,
        **(DISPUTED_FIELDS if status == "disputed" else {}),
    }


DISPUTED_FIELDS = {**DISPUTE, "verified": False}


def test_report_counts_a_disputed_time_and_shows_its_status(tmp_path):
    from dbench.report.build import build_report
    from dbench.report.results import load
    from tests.report_fixtures import fake_log

    fake_log(
        tmp_path / "m",
        "run-a",
        {"machine_key": "k1"},
        [
            report_row("old_cnn", "disputed", 50.0),
            report_row("new_cnn", "ok", 40.0),
            report_row("bad_cnn", "mismatch", 30.0),
        ],
    )
    report = build_report(load([tmp_path / "m"]))
    table = report.families["model"]
    label = report.groups[0].label
    medians = table[(label, "median_us")]
    assert (medians["old_cnn.fwd.model"], medians["new_cnn.fwd.model"], np.isnan(medians["bad_cnn.fwd.model"])) == (
        50.0,
        40.0,
        True,
    )
    assert table[(label, "status")].to_dict() == {
        "old_cnn.fwd.model": "disputed",
        "new_cnn.fwd.model": "ok",
        "bad_cnn.fwd.model": "mismatch",
    }
    summary = report.summary.loc[label]
    assert (summary["verified"], summary["disputed"], summary["mismatch"]) == (2, 1, 1)


def test_a_disputed_row_passes_the_run_and_its_line_says_who_agreed():
    from dbench.gen.graph import GraphSpec
    from dbench.orchestrator.run import RunResult
    from dbench.render.run import graph_line
    from dbench.render.warnings import run_warnings
    from dbench.store.schema import Row

    spec = GraphSpec(
        id="old_cnn",
        kernel_id="old_cnn",
        family="model",
        op="model",
        params={},
        suites=("user",),
        apps=(),
        pass_name="fwd",
        form="model",
        precision="fp32",
        flops=1000,
        flops_executed=1000,
        inputs=(),
        outputs=(),
        seed=1,
    )
    verification = {
        "ok": False,
        "error": 0.9,
        "metric": "rel",
        "bound": 1e-3,
        "check": "full",
        "by": "onnx.reference",
        "second": DISPUTE["cross_check"],
        "first_difference": DISPUTE["first_difference"],
        "outputs": ["y"],
    }
    outcome = Outcome(
        Status.DISPUTED, "disputed: onnx.reference differs", figures={"median_us": 721.0}, verification=verification
    )
    row = Row.build("run", 1, spec, {"name": "ort-cpu", "version": "1", "options": {}}, "const", outcome)
    data = row.to_dict()
    assert (
        data["status"],
        data["cross_check"]["runtime"],
        data["first_difference"]["op"],
        data["disagreeing_outputs"],
    ) == ("disputed", "openvino", "BatchNormalization", ["y"])
    line = graph_line(1, 1, row)
    assert line.startswith(
        "[1/1] old_cnn disputed (openvino agrees; onnx.reference differs from BatchNormalization opset 9 on) 721"
    )
    (warning,) = [w for w in run_warnings([data], {}) if "disputed" in w]
    assert warning.startswith("1 rows disputed (e.g. old_cnn: openvino agrees")
    result = RunResult("run", {}, None, [data, {**data, "status": "unsupported"}], ([], ""))
    assert result.exit_code == 0
    assert RunResult("run", {}, None, [data, {**data, "status": "mismatch"}], ([], "")).exit_code == 3


def test_compare_cli_shows_the_disputed_side(tmp_path):
    from tests.report_fixtures import fake_log

    rounds = [100.0, 101.0, 99.0, 100.5, 99.5]
    rows = [{**report_row("old_cnn", "disputed", 100.0), "round_medians_us": rounds, "rounds": 5}]
    a = fake_log(tmp_path / "a", "run-a", {"machine_key": "k1"}, rows)
    b = fake_log(tmp_path / "b", "run-b", {"machine_key": "k1"}, rows)
    result = CliRunner().invoke(app, ["compare", str(a), str(b)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "disputed, two runtimes agree against onnx.reference" in " ".join(result.output.split())
