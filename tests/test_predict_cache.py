"""`dbench predict`'s unit cache, through the command on ONNX Runtime CPU: a second prediction of a model
reuses every unit (and the empty graphs) and times only the model, its reused rows the figures and
verdicts first measured; `--fresh` times them again; a changed runtime option or runtime version misses;
units that differ only in names and weight values are timed once, within a model and across models."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import onnx
from onnx import numpy_helper

from dbench.units.prediction import REUSED
from dbench.units.same import SMALL
from tests import model_builders as mb
from tests.test_predict import QUICK, invoke, small_cnn

TIMED_ROLES = ("unit", "empty")
FIGURES = ("status", "message", "verified", "verified_by", "median_us", "round_medians_us", "ci_low_us", "ci_high_us")
"""What a reused row keeps as first measured: its verdict, figures and interval."""


def runs(out) -> list[tuple[dict, list[dict], list[dict]]]:
    """Every prediction run under `out`, oldest first: (header, rows, round records)."""
    found = []
    for path in sorted(out.rglob("run-*.jsonl"), key=lambda p: p.stat().st_mtime):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        found.append(
            (
                lines[0],
                [line for line in lines[1:] if line.get("type") == "result"],
                [line for line in lines[1:] if line.get("type") == "round"],
            )
        )
    return found


def predict(path, out, *more) -> dict:
    result = invoke("predict", path, "--dim", "batch=1", *QUICK, "--out", out, "--format", "json", *more)
    assert result.exit_code == 0, result.output
    (shown,) = json.loads(result.stdout[result.stdout.index("[") :])
    return shown


def role(row: dict) -> str:
    return row["attrs"]["predict"]["role"]


def reused(rows: list[dict]) -> dict[str, str]:
    """Graph id -> the run it was reused from, for the reused rows."""
    return {r["graph_id"]: r["attrs"]["predict"][REUSED] for r in rows if r["attrs"]["predict"].get(REUSED)}


def test_a_second_prediction_reuses_every_unit_and_times_only_the_model(tmp_path, seed):
    path = mb.save(small_cnn(np.random.default_rng(seed)), tmp_path, "small")
    first = predict(path, tmp_path / "out")
    again = predict(path, tmp_path / "out")
    (h1, rows1, _), (h2, rows2, rounds2) = runs(tmp_path / "out")
    timed = [r for r in rows1 if role(r) in TIMED_ROLES]
    assert timed and not reused(rows1) and h1["unit_cache"] == {"fresh": False, "reused": {}}
    assert {r["graph_id"] for r in rounds2} == {"small"}  # only the model was timed again
    assert reused(rows2) == {r["graph_id"]: h1["run_id"] for r in timed} == h2["unit_cache"]["reused"]
    before = {r["graph_id"]: r for r in timed}
    for row in (r for r in rows2 if role(r) in TIMED_ROLES):
        old = before[row["graph_id"]]
        for field in FIGURES:
            assert row[field] == old[field], (row["graph_id"], field)
        assert row["run_id"] == h2["run_id"]
    assert again["units_timed"] == again["units_total"] == first["units_total"]
    assert any(f"reused from the unit cache, as timed in run {h1['run_id']}" in n for n in again["notes"])
    assert again["rounds"] == 3 and (again["error_low"] is not None or again["interval_note"])
    assert f"reused from run {h1['run_id']}; 0 timed" in said(path, tmp_path / "out")


def said(path, out, *more) -> str:
    """What a prediction of `path` (its table) says on the terminal."""
    result = invoke("predict", path, "--dim", "batch=1", *QUICK, "--out", out, *more)
    assert result.exit_code == 0, result.output
    return result.output


def test_fresh_times_every_unit_again(tmp_path, seed):
    path = mb.save(small_cnn(np.random.default_rng(seed)), tmp_path, "small")
    predict(path, tmp_path / "out")
    shown = predict(path, tmp_path / "out", "--fresh")
    (_, rows1, _), (h2, rows2, rounds2) = runs(tmp_path / "out")
    assert h2["unit_cache"] == {"fresh": True, "reused": {}} and not reused(rows2)
    assert {r["graph_id"] for r in rounds2} == {r["graph_id"] for r in rows1}
    assert not any("unit cache" in n for n in shown["notes"])
    assert "unit cache: not used (--fresh)" in said(path, tmp_path / "fresh", "--fresh")


def test_a_changed_runtime_option_or_version_times_the_units_again(tmp_path, seed, monkeypatch):
    from dbench.runtimes.onnxruntime import OrtCpu

    path = mb.save(small_cnn(np.random.default_rng(seed)), tmp_path, "small")
    predict(path, tmp_path / "out")
    predict(path, tmp_path / "out", "--option", "use_arena=0")
    monkeypatch.setattr(OrtCpu, "version", classmethod(lambda cls: "0.0.1-another-build"))
    predict(path, tmp_path / "out")
    (_, rows1, _), (_, rows2, rounds2), (_, rows3, rounds3) = runs(tmp_path / "out")
    assert not reused(rows2) and not reused(rows3)
    assert {r["graph_id"] for r in rounds2} == {r["graph_id"] for r in rounds3} == {r["graph_id"] for r in rows1}
    assert rows3[0]["runtime_version"] == "0.0.1-another-build"


def renamed(model: onnx.ModelProto, rng, name: str) -> onnx.ModelProto:
    """The same model under other node and tensor names, its weights drawn again (not the small constants:
    those count by value, dbench.units.same)."""
    other = onnx.ModelProto()
    other.CopyFrom(model)
    graph = other.graph
    new = {v.name: f"{name}_{v.name}_t" for v in [*graph.input, *graph.output]}
    new.update({t.name: f"{name}_{t.name}_w" for t in graph.initializer})
    for node in graph.node:
        node.name = f"{name}_{node.name}_n"
        new.update({o: f"{name}_{o}_v" for o in node.output if o not in new})
    for node in graph.node:
        node.input[:] = [new.get(i, i) for i in node.input]
        node.output[:] = [new.get(o, o) for o in node.output]
    for value in [*graph.input, *graph.output]:
        value.name = new[value.name]
    for tensor in graph.initializer:
        array = numpy_helper.to_array(tensor)
        if array.size > SMALL:
            array = rng.standard_normal(array.shape).astype(array.dtype)
        tensor.CopyFrom(numpy_helper.from_array(array, new[tensor.name]))
    return other


def test_units_that_differ_only_in_names_and_weights_are_timed_once(tmp_path, seed):
    rng = np.random.default_rng(seed)
    mlp = mb.mlp(rng)  # two MatMuls of one shape: one unit graph with a count of 2
    shown = predict(mb.save(mlp, tmp_path, "mlp"), tmp_path / "out")
    assert any(u["count"] == 2 and u["kind"] == "executed" for u in shown["units"]), shown["units"]
    other = predict(mb.save(renamed(mlp, rng, "other"), tmp_path, "other"), tmp_path / "out")
    (h1, rows1, _), (_, rows2, rounds2) = runs(tmp_path / "out")
    assert {r["graph_id"] for r in rounds2} == {"other"}  # another model, every unit known by its content
    units = [r for r in rows2 if role(r) in TIMED_ROLES]
    assert units and set(reused(rows2).values()) == {h1["run_id"]} and len(reused(rows2)) == len(units)
    assert all(r["graph_id"].startswith("other.") or r["graph_id"].startswith("empty") for r in units)
    assert other["units_timed"] == other["units_total"] == shown["units_total"]


def test_units_sample_less_than_the_model_unless_the_sampling_is_given(tmp_path):
    """Without --min-time the units and empty graphs sample UNIT_MIN_TIME over their rounds and the model
    the run's default, in the same rounds; the header says so. --min-time sets every graph's."""
    from dbench.orchestrator.predict import UNIT_MIN_TIME, plan_predict
    from dbench.orchestrator.request import RunRequest

    model = mb.save(small_cnn(np.random.default_rng(0)), tmp_path, "small")
    request = RunRequest(graphs=str(model), runtime="ort-cpu", threads=1, dims={"batch": 1})
    planned, _ = plan_predict(request, tmp_path / "out")
    planned.timing_lock.release()
    units = [i.spec.id for i in planned.items if i.spec.attrs["predict"]["role"] in TIMED_ROLES]
    assert units and set(planned.config.graph_timing) == set(units)
    assert {planned.config.timing_of(u).min_time for u in units} == {UNIT_MIN_TIME}
    assert UNIT_MIN_TIME < planned.config.timing.min_time
    assert planned.config.timing_of("small") == planned.config.timing
    assert {planned.config.timing_of(u).rounds for u in units} == {planned.config.timing.rounds}
    assert planned.header["unit_timing"]["min_time"] == UNIT_MIN_TIME
    given, _ = plan_predict(dataclasses.replace(request, min_time=1.0), tmp_path / "given")
    given.timing_lock.release()
    assert not given.config.graph_timing and "unit_timing" not in given.header
