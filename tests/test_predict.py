"""`dbench predict`: the prediction arithmetic and its paired interval on rows made by hand; the whole
command on both CPU runtimes (one run: the model, an empty graph and the units, in rounds); units
exported as a bundle, run as a board would, and predicted from with --units-run, whose refusals are one
line each; the report's predictions and the per-node profile shown on request; bad input."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from typer.testing import CliRunner

from dbench.cli import app
from dbench.units.prediction import kept, predicted, predictions
from tests import model_builders as mb

runner = CliRunner()
QUICK = ("--quick", "--threads", "1", "--rounds", "3")
T_975_DF2 = 4.302652729911275
"""Student's t 97.5 % quantile, 2 degrees of freedom (tables)."""


def share(row: dict) -> float:
    """What of a unit row's time the prediction keeps: all of it without a profile."""
    return 1.0 if kept(row) is None else kept(row)


def model_state(rows: list[dict]) -> float:
    """The prediction from a run's rows, written out: each unit's warm median plus its evicted twin's
    excess (each net of its own empty graph) in its weights' share, then empty + Σ count x (that - empty) x kept."""
    median = {r["graph_id"]: r["median_us"] for r in rows}
    empty, evicted_empty = median["empty"], median["empty.evicted"]
    units = []
    for r in rows:
        info = r["attrs"]["predict"]
        if info["role"] == "unit" and not info.get("timing"):
            share_of_weights = info["weight_bytes"] / (info["weight_bytes"] + info["io_bytes"])
            taken = r["median_us"]
            if share_of_weights:  # a unit without weights has no evicted twin: its warm time is its time
                taken += share_of_weights * (
                    (median[r["graph_id"] + ".evicted"] - evicted_empty) - (r["median_us"] - empty)
                )
            units.append((info["count"], taken, share(r)))
    return predicted(empty, units)


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def row(role: str, graph: str, median: float, rounds: list[float], status: str = "ok", **tag) -> dict:
    return {
        "run_id": "run-x",
        "graph_id": graph,
        "variant": "ort-cpu",
        "runtime": "ort-cpu",
        "status": status,
        "median_us": median if status == "ok" else None,
        "round_medians_us": rounds,
        "nodes": tag.pop("nodes", []),
        "attrs": {"predict": {"role": role, "model": "m", "runtime": "ort-cpu", "dims": {}, **tag}},
    }


def hand_rows(unit_b_status: str = "ok") -> list[dict]:
    """A model of 100 µs, an empty graph of 5 µs, unit A x2 of 30 µs and unit B x1 of 40 µs."""
    units = [
        {"graph": "m.u001", "kind": "executed", "nodes": ["a1", "a2"], "layers": ["LA1"]},
        {"graph": "m.u001", "kind": "executed", "nodes": ["a3", "a4"], "layers": ["LA2"]},
        {"graph": "m.u002", "kind": "executed", "nodes": ["b"], "layers": ["LB"]},
        {"graph": "", "kind": "inserted", "nodes": [], "layers": ["Reorder"]},
        {"graph": "", "kind": "folded", "nodes": ["shape"], "layers": []},
    ]
    profile = [{"name": n, "time_us": t} for n, t in (("LA1", 20.0), ("LA2", 20.0), ("LB", 50.0), ("Reorder", 10.0))]
    return [
        row("model", "m", 100.0, [100.0, 110.0, 90.0], units=units, graphs=2, nodes=profile),
        row("empty", "empty", 5.0, [5.0, 6.0, 4.0]),
        row(
            "unit",
            "m.u001",
            30.0,
            [30.0, 33.0, 28.0],
            count=2,
            graphs=2,
            kernels=["conv_x"],
            occurrences=[{"nodes": ["a1", "a2"], "layers": ["LA1"]}, {"nodes": ["a3", "a4"], "layers": ["LA2"]}],
        ),
        row(
            "unit",
            "m.u002",
            40.0,
            [40.0, 44.0, 36.0],
            status=unit_b_status,
            count=1,
            graphs=2,
            occurrences=[{"nodes": ["b"], "layers": ["LB"]}],
        ),
    ]


def test_the_prediction_is_empty_plus_each_units_count_times_its_median_net_of_the_empty_graph():
    (p,) = predictions(hand_rows())
    assert p.predicted_us == pytest.approx(5 + 2 * (30 - 5) + (40 - 5))
    assert p.measured_us == 100.0 and p.error == pytest.approx(90 / 100 - 1)
    assert (p.units_timed, p.units_total, p.nodes_timed, p.nodes_total) == (2, 2, 5, 6)
    lines = {u.graph: u for u in p.units}
    assert lines["m.u001"].isolated_us == pytest.approx(50.0) and lines["m.u001"].in_model_us == pytest.approx(40.0)
    assert lines["m.u002"].in_model_us == pytest.approx(50.0) and lines["m.u002"].share == pytest.approx(0.5)
    assert lines["Reorder"].kind == "inserted" and lines["Reorder"].in_model_us == pytest.approx(10.0)
    assert lines["folded"].in_model_us == 0.0 and lines["m.u001"].kernels == ("conv_x",)
    assert p.inserted_us == pytest.approx(10.0) and p.profiled_us == pytest.approx(100.0)


def test_a_units_boundary_reorders_are_left_out_in_the_share_its_own_profile_gives_them():
    rows = hand_rows()
    rows[2]["nodes"] = [
        {"name": "in_abcd_acdb", "op_type": "Reorder", "time_us": 6.0},
        {"name": "conv", "op_type": "Convolution", "time_us": 20.0},
        {"name": "ReorderOutput_3", "op_type": "ReorderOutput", "time_us": 4.0},
        {"name": "subgraph", "op_type": "Subgraph", "time_us": 30.0, "container": True},
    ]
    assert kept(rows[2]) == pytest.approx(20 / 30) and kept(rows[3]) is None
    assert kept({**rows[3], "profile_call_us": 9.9}) == 1.0  # profiled, but no layer took time: nothing to leave out
    (p,) = predictions(rows)
    assert p.predicted_us == pytest.approx(5 + 2 * 25 * 2 / 3 + 35)
    lines = {u.graph: u for u in p.units}
    assert lines["m.u001"].isolated_us == pytest.approx(50 * 2 / 3) and lines["m.u001"].reorders_us == pytest.approx(
        50 / 3
    )
    assert lines["m.u002"].reorders_us == 0.0 and p.reorders_us == pytest.approx(50 / 3)
    assert any("1 units have no per-node profile" in note and "m.u002" in note for note in p.notes)
    rounds = [
        math.log(predicted(e, [(2, a, 2 / 3), (1, b, 1.0)]) / m)
        for e, a, b, m in zip([5.0, 6.0, 4.0], [30.0, 33.0, 28.0], [40.0, 44.0, 36.0], [100.0, 110.0, 90.0])
    ]
    half = T_975_DF2 * np.std(rounds, ddof=1) / math.sqrt(3)
    assert p.error_low == pytest.approx((1 + p.error) * math.exp(-half) - 1)


def test_the_error_interval_pairs_the_rounds():
    """Round r's prediction from the units' and the empty graph's round medians against the model's
    round r; Student's t over the log ratios, centred on the medians' error."""
    (p,) = predictions(hand_rows())
    ratios = [
        math.log(predicted(e, [(2, a, 1.0), (1, b, 1.0)]) / m)
        for e, a, b, m in zip([5.0, 6.0, 4.0], [30.0, 33.0, 28.0], [40.0, 44.0, 36.0], [100.0, 110.0, 90.0])
    ]
    half = T_975_DF2 * np.std(ratios, ddof=1) / math.sqrt(3)
    assert p.rounds == 3
    assert p.error_low == pytest.approx(0.9 * math.exp(-half) - 1) and p.error_high == pytest.approx(
        0.9 * math.exp(half) - 1
    )


def test_a_unit_that_did_not_run_is_left_out_and_said_and_the_interval_is_withheld():
    (p,) = predictions(hand_rows(unit_b_status="unsupported"))
    assert p.predicted_us == pytest.approx(5 + 2 * 25) and p.units_timed == 1
    assert p.error_low is None and any("m.u002 (unsupported)" in note for note in p.notes)


def test_a_round_that_predicts_a_non_positive_time_withholds_the_interval_and_says_which():
    rows = hand_rows()
    rows[1]["round_medians_us"] = [
        5.0,
        60.0,
        4.0,
    ]  # round 2's empty graph slower than every unit: 60 + 2(33-60) + (44-60) < 0
    (p,) = predictions(rows)
    assert p.error == pytest.approx(-0.1) and p.error_low is None and p.error_high is None
    assert p.interval_note.startswith("round 2 predicts") and "non-positive" in p.interval_note
    assert p.to_dict()["interval_note"] == p.interval_note


def test_no_prediction_without_the_empty_graph():
    rows = [r for r in hand_rows() if r["graph_id"] != "empty"]
    (p,) = predictions(rows)
    assert p.predicted_us is None and p.error is None and any("empty graph" in n for n in p.notes)


def test_a_layer_the_runtime_inserted_timed_as_a_unit_counts_whole_in_the_prediction():
    """The Reorder inside the model, timed as a unit of its own: all of its time net of the empty graph
    counts (its own profile is that one reorder, which is no boundary of it); it leaves the inserted
    layers no unit times, and the gap says what it adds."""
    from dbench.render.predict import disagreements, gap_lines, inserted_text

    rows = hand_rows()
    rows[0]["attrs"]["predict"]["units"][3]["graph"] = "m.u003.ReorderOutput"
    rows[0]["attrs"]["predict"]["graphs"] = 3
    rows.append(
        row(
            "unit",
            "m.u003.ReorderOutput",
            12.0,
            [12.0, 13.0, 11.0],
            count=1,
            graphs=3,
            kind="inserted",
            occurrences=[{"nodes": [], "layers": ["Reorder"]}],
            nodes=[{"name": "Reorder", "op_type": "ReorderOutput", "time_us": 7.0}],
        )
    )
    (p,) = predictions(rows)
    assert p.predicted_us == pytest.approx(5 + 2 * (30 - 5) + (40 - 5) + (12 - 5))
    assert (p.units_timed, p.units_total) == (3, 3)
    lines = {u.graph: u for u in p.units}
    assert "Reorder" not in lines and lines["m.u003.ReorderOutput"].kind == "inserted"
    assert (
        lines["m.u003.ReorderOutput"].isolated_us == pytest.approx(7.0)
        and lines["m.u003.ReorderOutput"].reorders_us == 0.0
    )
    assert (
        lines["m.u003.ReorderOutput"].in_model_us is None
    )  # the runtime's names for them change from session to session
    assert p.inserted_us == pytest.approx(10.0) and p.untimed_inserted_us == 0.0 and p.reorders_us == 0.0
    gap = p.gap
    assert gap["units alone"] == pytest.approx(100.0) and gap["inserted layers alone"] == pytest.approx(12.0)
    assert gap["per-call overhead"] == pytest.approx(-3 * 5) and gap["inserted layers not timed"] == 0.0
    assert gap["predicted"] + gap["unexplained"] == pytest.approx(100.0)
    assert "inserted layers timed as units +12" in gap_lines(p)[0] and "no unit times" not in gap_lines(p)[0]
    assert not any("timed in no unit" in line for line in disagreements(p)) and inserted_text(p) == "10.0 µs"
    (before,) = predictions(hand_rows())  # the same Reorder untimed: beside the prediction, not in it
    assert before.untimed_inserted_us == pytest.approx(10.0) and "untimed" in inserted_text(before)
    assert any("1 layers the runtime inserted" in line for line in disagreements(before))


def test_a_units_run_alone_predicts_without_a_measurement():
    (p,) = predictions([r for r in hand_rows() if r["graph_id"] != "m"])
    assert p.predicted_us == pytest.approx(90.0) and p.measured_us is None and p.error is None
    assert p.units_total == 2


def test_isolation_and_the_model_disagree_only_beyond_the_ratio_and_a_share_of_the_model():
    rows = hand_rows()
    rows[0]["nodes"][2]["time_us"] = 200.0  # unit B: 35 µs in isolation against 200 µs inside the model
    (p,) = predictions(rows)
    lines = {u.graph: u for u in p.units}
    assert lines["m.u002"].disagrees and not lines["m.u001"].disagrees


def evicted_rows(twin_b_status: str = "ok") -> list[dict]:
    """hand_rows with each unit's and the empty graph's evicted twin: empty 20 µs after the eviction;
    A (weights 3/4 of its bytes) 60 µs, B (weights 1/4) 80 µs."""
    rows = hand_rows()
    rows[2]["attrs"]["predict"].update(weight_bytes=300, io_bytes=100)
    rows[3]["attrs"]["predict"].update(weight_bytes=100, io_bytes=300)

    def twin(warm: dict, median: float, rounds: list[float], status: str = "ok") -> dict:
        info = {k: v for k, v in warm["attrs"]["predict"].items() if k not in ("role", "model", "runtime", "dims")}
        return row(
            "unit",
            f"{warm['graph_id']}.evicted",
            median,
            rounds,
            status=status,
            **info,
            timing="evicted",
            warm=warm["graph_id"],
        )

    return rows + [
        row("empty", "empty.evicted", 20.0, [20.0, 22.0, 18.0], timing="evicted"),
        twin(rows[2], 60.0, [60.0, 66.0, 57.0]),
        twin(rows[3], 80.0, [80.0, 84.0, 70.0], twin_b_status),
    ]


def test_each_unit_takes_its_weight_share_of_the_evicted_excess():
    """model-state: warm + f x ((evicted - evicted empty) - (warm - empty)); warm and evicted alone are the
    other two methods, from the same rows."""
    a = 30 + 0.75 * ((60 - 20) - (30 - 5))
    b = 40 + 0.25 * ((80 - 20) - (40 - 5))
    (p,) = predictions(evicted_rows())
    assert p.method == "model-state" and p.evicted_empty_us == 20.0 and not any("evicted" in note for note in p.notes)
    assert p.predicted_us == pytest.approx(5 + 2 * (a - 5) + (b - 5))
    lines = {u.graph: u for u in p.units}
    assert set(lines) == {"m.u001", "m.u002", "Reorder", "folded"}  # the twins are no units of their own
    assert lines["m.u001"].cache_us == pytest.approx(2 * (a - 30)) and lines["m.u001"].evicted_us == 60.0
    assert lines["m.u002"].weight_share == pytest.approx(0.25)
    ratios = [
        math.log(
            predicted(e, [(2, wa + 0.75 * ((ea - ee) - (wa - e)), 1.0), (1, wb + 0.25 * ((eb - ee) - (wb - e)), 1.0)])
            / m
        )
        for e, ee, wa, ea, wb, eb, m in zip(
            [5, 6, 4], [20, 22, 18], [30, 33, 28], [60, 66, 57], [40, 44, 36], [80, 84, 70], [100, 110, 90]
        )
    ]
    half = T_975_DF2 * np.std(ratios, ddof=1) / math.sqrt(3)
    assert p.error_low == pytest.approx((1 + p.error) * math.exp(-half) - 1)
    gap = p.gap
    assert gap["units alone"] == pytest.approx(2 * 30 + 40) and gap["per-call overhead"] == pytest.approx(-2 * 5)
    assert gap["cache"] == pytest.approx(2 * (a - 30) + (b - 40)) and gap["inserted layers not timed"] == 10.0
    assert gap["predicted"] + 10.0 + gap["unexplained"] == pytest.approx(100.0)
    (warm,) = predictions(evicted_rows(), method="warm")
    (cold,) = predictions(evicted_rows(), method="evicted")
    assert warm.predicted_us == pytest.approx(90.0) and warm.method == "warm"
    assert cold.predicted_us == pytest.approx(5 + 2 * (60 - 20) + (80 - 20))


def test_a_unit_whose_evicted_twin_failed_is_taken_warm_and_said():
    (p,) = predictions(evicted_rows(twin_b_status="crashed"))
    a = 30 + 0.75 * ((60 - 20) - (30 - 5))
    assert p.predicted_us == pytest.approx(5 + 2 * (a - 5) + (40 - 5))
    assert any("1 units have no evicted time and are taken warm: m.u002" in note for note in p.notes)


@pytest.mark.parametrize(
    "status, message, verification, flag",
    [
        ("disputed", "onnx.reference differs; onnxruntime and openvino agree", {"ok": True}, "disputed"),
        ("ok", "weak verification: the expected outputs are degenerate (near-uniform)", {"ok": True}, "weak"),
        ("ok", "unverified: above onnx.reference's budget", {"ok": None, "by": None}, "unverified"),
    ],
)
def test_a_unit_with_a_disputed_weak_or_missing_check_stays_in_the_prediction_flagged(
    status, message, verification, flag
):
    rows = hand_rows()
    rows[3].update(status=status, median_us=40.0, message=message, verification=verification)
    (p,) = predictions(rows)
    assert p.predicted_us == pytest.approx(90.0) and p.units_timed == 2 and not p.left_out
    assert p.flagged == (f"m.u002 ({flag})",) and {u.graph: u for u in p.units}["m.u002"].flag == flag
    assert any(f"m.u002 ({flag})" in note and "counted" in note for note in p.notes)
    assert p.error_low is not None  # nothing left out: the interval stands


def test_units_left_out_are_named_with_their_share_of_the_model_in_its_profile():
    rows = hand_rows(unit_b_status="mismatch")
    (p,) = predictions(rows)
    assert (
        p.left_out == ("m.u002 (mismatch)",)
        and p.left_out_us == pytest.approx(50.0)
        and p.left_out_share == pytest.approx(0.5)
    )
    assert any(
        "left out of the prediction (50.0% of the model in the runtime's profile): m.u002 (mismatch)" in note
        for note in p.notes
    ), p.notes
    assert p.to_dict()["left_out_share"] == pytest.approx(0.5)
    from dbench.render.predict import left_out_text

    assert left_out_text(p) == "1 (50.0%)"
    (alone,) = predictions([r for r in rows if r["graph_id"] != "m"])  # a board's run: no profile of the model
    assert alone.left_out_share is None and any("share of the model is unknown" in note for note in alone.notes)


def small_cnn(rng) -> onnx.ModelProto:
    """Conv+Relu, MaxPool, Conv+Relu, GlobalAveragePool, Flatten, Gemm: a small CNN, symbolic batch."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "w2"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1),
    ]
    inits = [
        mb.weight("w1", (16, 8, 3, 3), rng),
        mb.weight("b1", (16,), rng),
        mb.weight("w2", (16, 16, 3, 3), rng),
        mb.weight("wf", (10, 16), rng),
        mb.weight("bf", (10,), rng),
    ]
    return mb.model(nodes, [mb.value("x", ["batch", 8, 16, 16])], [mb.value("y", ["batch", 10])], inits, "small")


def read_log(out: Path, kind: str) -> tuple[dict, list[dict]]:
    for path in sorted(out.rglob("*.jsonl")):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        if lines[0].get("kind") == kind:
            return lines[0], [line for line in lines[1:] if line.get("type") == "result"]
    raise AssertionError(f"no {kind} run under {out}")


@pytest.mark.parametrize("runtime", ["ort-cpu", "openvino"])
def test_predict_runs_the_model_its_units_and_an_empty_graph_in_one_run(tmp_path, seed, runtime):
    path = mb.save(small_cnn(np.random.default_rng(seed)), tmp_path, "small")
    result = invoke(
        "predict", path, "--dim", "batch=1", "--runtime", runtime, *QUICK, "--out", tmp_path / "out", "--format", "json"
    )
    assert result.exit_code == 0, result.output
    header, rows = read_log(tmp_path / "out", "predict")
    roles = [(r["attrs"]["predict"]["role"], r["attrs"]["predict"].get("timing", "")) for r in rows]
    assert (
        roles.count(("model", "")) == 1 and roles.count(("empty", "")) == 1 and roles.count(("empty", "evicted")) == 1
    )
    weighted = [r for r in rows if r["attrs"]["predict"]["role"] == "unit" and r["attrs"]["predict"]["weight_bytes"]]
    assert roles.count(("unit", "")) >= len(weighted) / 2 and roles.count(("unit", "evicted")) == len(weighted) / 2 > 0
    assert all(r["status"] == "ok" and r["rounds"] == 3 and r["verified"] for r in rows), [
        (r["graph_id"], r["message"]) for r in rows
    ]
    assert header["executed"]["runtime"] == runtime and header["request"]["dims"] == {"batch": 1}
    (shown,) = json.loads(result.stdout[result.stdout.index("[") :])
    warm = [r for r in rows if r["attrs"]["predict"]["role"] == "unit" and not r["attrs"]["predict"].get("timing")]
    evicted = next(r for r in rows if r["graph_id"] == "empty.evicted")["attrs"]["evict_bytes"]
    assert evicted > 0 and all(r["attrs"]["predict"]["evict_bytes"] == evicted for r in warm)
    model = next(r for r in rows if r["graph_id"] == "small")["median_us"]
    assert shown["method"] == "model-state"
    assert shown["predicted_us"] == pytest.approx(model_state(rows))
    assert shown["error"] == pytest.approx(model_state(rows) / model - 1)
    assert shown["units_timed"] == shown["units_total"] == len(warm) and shown["nodes_total"] == 8
    gap = shown["gap"]
    assert gap["units alone"] + gap["inserted layers alone"] + gap["per-call overhead"] + gap[
        "units' boundary reorders"
    ] + gap["cache"] == pytest.approx(gap["predicted"])
    assert gap["predicted"] + gap.get("inserted layers not timed", 0.0) + gap["unexplained"] == pytest.approx(model)
    assert shown["rounds"] == 3
    if shown["error_low"] is None:  # one round's units came out below its empty graph (OpenVINO's units are near it)
        assert "no interval on a non-positive prediction" in shown["interval_note"], shown["interval_note"]
    else:
        assert shown["error_low"] < shown["error"] < shown["error_high"] and not shown["interval_note"]
    in_model = [u["in_model_us"] for u in shown["units"] if u["kind"] == "executed"]
    assert all(t is not None and t >= 0 for t in in_model) and sum(in_model) > 0


def test_the_table_says_where_isolation_and_the_model_stand(tmp_path, seed):
    path = mb.save(small_cnn(np.random.default_rng(seed)), tmp_path, "small")
    result = invoke("predict", path, "--dim", "batch=1", *QUICK, "--out", tmp_path / "out", "--top", "3")
    assert result.exit_code == 0, result.output
    assert "predicted from the units vs measured" in result.stdout and "units of small on ort-cpu" in result.stdout
    assert "more units not shown (--top)" in result.stdout


@pytest.fixture(scope="module")
def board_run(tmp_path_factory):
    """The small model's units exported (cut by ort-cpu at --threads 1), run from the bundle as a board
    runs it: (model path, results folder, the board run's log)."""
    folder = tmp_path_factory.mktemp("board")
    path = mb.save(small_cnn(np.random.default_rng(7)), folder, "small")
    bundle = folder / "units.tar.gz"
    result = invoke(
        "export", "--units", path, "--dim", "batch=1", "--runtime", "ort-cpu", "--threads", "1", "--out", bundle
    )
    assert result.exit_code == 0, result.output
    result = invoke("run", "--graphs", bundle, "--runtime", "ort-cpu", *QUICK, "--out", folder / "out")
    assert result.exit_code == 0, result.output
    (log,) = (folder / "out").rglob("*.jsonl")
    return path, folder / "out", log


def test_units_run_predicts_from_a_boards_unit_rows_without_running_the_model(board_run):
    path, out, log = board_run
    result = invoke(
        "predict", path, "--dim", "batch=1", "--threads", "1", "--units-run", log, "--out", out, "--format", "json"
    )
    assert result.exit_code == 0, result.output
    (shown,) = json.loads(result.stdout)
    rows = [json.loads(line) for line in log.read_text().splitlines()[1:] if '"type": "result"' in line]
    assert all(r["status"] == "ok" and r["verified_by"] == "onnx.reference" for r in rows)
    assert shown["predicted_us"] == pytest.approx(model_state(rows)) and shown["measured_us"] is None
    assert shown["method"] == "model-state" and not shown["notes"], shown["notes"]
    assert (
        shown["units_timed"]
        == shown["units_total"]
        == sum(1 for r in rows if r["attrs"]["predict"]["role"] == "unit" and not r["attrs"]["predict"].get("timing"))
    )
    # The bundle carries the reorder ONNX Runtime inserts inside the model, as a unit the board times and verifies.
    inserted = [
        r for r in rows if r["attrs"]["predict"].get("kind") == "inserted" and not r["attrs"]["predict"].get("timing")
    ]
    assert inserted and all(r["graph_id"].split(".")[-1] in ("ReorderInput", "ReorderOutput") for r in inserted)
    assert shown["gap"]["inserted layers alone"] == pytest.approx(sum(r["median_us"] for r in inserted))


def refusal(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output
    for word in words:
        assert word in result.output, result.output


@pytest.mark.parametrize(
    "change, words",
    [
        (("--threads", "2"), ("--threads 1", "--threads 2")),
        (("--threads", "1", "--runtime", "openvino"), ("--runtime ort-cpu", "--runtime openvino")),
        (("--threads", "1", "--dim", "batch=2"), ("--dim batch=1", "batch=2")),
    ],
)
def test_units_run_refuses_another_configuration_in_one_line(board_run, change, words):
    path, out, log = board_run
    args = ["--dim", "batch=1", *change] if "--dim" not in change else list(change)
    refusal(invoke("predict", path, *args, "--units-run", log, "--out", out), *words)


def test_units_run_refuses_another_file_and_an_incomplete_run(board_run, tmp_path):
    path, out, log = board_run
    changed = tmp_path / "small.onnx"
    model = onnx.load(str(path))
    model.doc_string = "edited"
    onnx.save(model, str(changed))
    refusal(
        invoke("predict", changed, "--dim", "batch=1", "--threads", "1", "--units-run", log, "--out", out),
        "file hash differs",
    )
    lines = log.read_text().splitlines()
    partial = tmp_path / "partial.jsonl"
    dropped = next(i for i, line in enumerate(lines) if '"family": "unit"' in line and '"type": "result"' in line)
    partial.write_text("\n".join(lines[:dropped] + lines[dropped + 1 :]) + "\n")
    refusal(
        invoke("predict", path, "--dim", "batch=1", "--threads", "1", "--units-run", partial, "--out", out),
        "lacks 1 of its",
    )
    other = tmp_path / "other.onnx"
    shutil.copy(path, other)
    refusal(
        invoke("predict", other, "--dim", "batch=1", "--threads", "1", "--units-run", log, "--out", out),
        "holds no unit of model other",
    )


@pytest.mark.parametrize(
    "args, words",
    [
        (("--runtime", "torch"), ("cannot tell which layers", "use openvino, ort-cpu")),
        (("--runtime", "ort-cpu,openvino"), ("one --runtime",)),
        (("--format", "xml"), ("unknown format",)),
        (("--top", "-1"), ("--top -1",)),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, seed, args, words):
    path = mb.save(small_cnn(np.random.default_rng(seed)), tmp_path, "small")
    refusal(invoke("predict", path, "--dim", "batch=1", *args, "--out", tmp_path / "out"), *words)
    assert not (tmp_path / "out").exists()


def test_a_folder_or_no_model_is_refused(tmp_path):
    refusal(invoke("predict", tmp_path, "--out", tmp_path / "out"), "one .onnx model file")
    refusal(invoke("predict", "--out", tmp_path / "out"), "give the model")
    assert not (tmp_path / "out").exists()


def test_a_prediction_run_resumes_with_its_own_command(tmp_path, seed):
    """An interrupted prediction (its last rows lost) completes with dbench predict --resume, cut again
    from the layers its header stored; dbench run --resume refuses it with the command to use."""
    path = mb.save(small_cnn(np.random.default_rng(seed)), tmp_path, "small")
    assert invoke("predict", path, "--dim", "batch=1", *QUICK, "--out", tmp_path / "out").exit_code == 0
    (log,) = (tmp_path / "out").rglob("*.jsonl")
    lines = log.read_text().splitlines()
    results = [i for i, line in enumerate(lines) if '"type": "result"' in line]
    log.write_text("\n".join(lines[: results[-2]]) + "\n")  # the last two graphs' rows never written
    run_id = log.stem
    refusal(invoke("run", "--resume", run_id, "--out", tmp_path / "out"), "dbench predict --resume")
    result = invoke("predict", "--resume", run_id, "--out", tmp_path / "out", "--format", "json")
    assert result.exit_code == 0, result.output
    header, rows = read_log(tmp_path / "out", "predict")
    assert len(rows) == header["graphs"] == len({r["graph_id"] for r in rows})
    (shown,) = json.loads(result.stdout[result.stdout.index("[") :])
    assert shown["units_timed"] == shown["units_total"]


def test_report_shows_predicted_vs_measured_and_profiles_on_request(tmp_path, seed):
    """The predictions, the top units beside the DeepBench kernel each holds (timed alone by a run of
    `gen --from-model`'s graphs), the scatter; the per-node profiles only with --profile."""
    from dbench.render.numbers import format_time

    path = mb.save(small_cnn(np.random.default_rng(seed)), tmp_path, "small")
    assert invoke("predict", path, "--dim", "batch=1", *QUICK, "--out", tmp_path / "out").exit_code == 0
    assert invoke("gen", "--from-model", path, "--dim", "batch=1", "--out", tmp_path / "graphs").exit_code == 0
    assert invoke("run", "--graphs", tmp_path / "graphs" / "small", *QUICK, "--out", tmp_path / "out").exit_code == 0
    result = invoke("report", tmp_path / "out", "--out", tmp_path / "plain")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "plain" / "report.md").read_text()
    assert "## Predicted from the units vs measured" in text and "### Units that take most of each model" in text
    _, kernel_rows = read_log(tmp_path / "out", "kernels")
    conv = next(r for r in kernel_rows if r["kernel_id"] == "conv_w16_h16_c8_n1_k16_s3_r3_pw1_ph1_sw1_sh1")
    unit_line = next(
        line for line in text.splitlines() if "small.u001.Conv-Relu" in line and "| small | ort-cpu |" in line
    )
    assert unit_line.rstrip(" |").endswith(
        f"conv_w16_h16_c8_n1_k16_s3_r3_pw1_ph1_sw1_sh1 | {format_time(conv['median_us'])}"
    )
    assert "Per-node profiles" not in text and (tmp_path / "plain" / "predicted-vs-measured.png").is_file()
    result = invoke("report", tmp_path / "out", "--out", tmp_path / "profiled", "--profile")
    assert result.exit_code == 0, result.output
    text = (tmp_path / "profiled" / "report.md").read_text()
    _, rows = read_log(tmp_path / "out", "predict")
    layer = next(r for r in rows if r["graph_id"] == "small")["nodes"][0]
    before, profiles = text.split("## Per-node profiles")
    assert "### small · ort-cpu" in profiles and f"| {layer['name']} | {layer['op_type']} |" in profiles
    assert f"| {layer['name']} | {layer['op_type']} |" not in before
    assert (tmp_path / "profiled" / "profiles.csv").is_file()


def test_run_shows_each_rows_profile_on_request(tmp_path):
    args = [
        "run",
        "--suite",
        "inference-device",
        "--ops",
        "gemm",
        "--id",
        "gemm_m128_n1_k1024_*",
        *QUICK,
        "--out",
        tmp_path / "out",
    ]
    plain = invoke(*args)
    shown = invoke(*args, "--show-profile")
    assert plain.exit_code == shown.exit_code == 0, shown.output
    assert (
        "profile · gemm_m128_n1_k1024_nn.fwd.gemm.fp32" in shown.stdout and "Gemm:CPUExecutionProvider" in shown.stdout
    )
    assert "profile ·" not in plain.stdout


def test_a_quick_prediction_has_no_round_cost_cap(tmp_path):
    """--quick's cap would give a costly unit fewer rounds than the model, breaking the pairing, and could
    leave out the model's profile (the units' in-model times): a prediction runs without it."""
    from dbench.orchestrator.predict import plan_predict
    from dbench.orchestrator.request import RunRequest

    model = mb.save(small_cnn(np.random.default_rng(0)), tmp_path, "small")
    planned, _ = plan_predict(
        RunRequest(graphs=str(model), runtime="ort-cpu", quick=True, threads=1, dims={"batch": 1}), tmp_path / "out"
    )
    assert planned.config.timing.round_cost_cap is None and planned.config.timing.max_time == 0.5
