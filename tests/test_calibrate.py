"""`dbench calibrate`: the noise per size class from an A/A run's rows (dbench.calibrate.analyse), what it
predicts (dbench.store.calibration), where it is stored, and who quotes it: run's plan, compare, report."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from dbench.calibrate.analyse import drift_by_class, kernel_noise, noise_classes
from dbench.cli import app
from dbench.errors import InputError
from dbench.stats.sequential import rounds_to_reach
from dbench.store.calibration import Entry, NoiseClass, class_of, entry_for, read_calibration, write_calibration
from dbench.store.history import History

runner = CliRunner()


def _aa_rows(rng, graph: str, median: float, pair_sd: float, rounds: int = 10) -> list[dict]:
    """Both copies of one graph in an A/A run: a shared round shift and each copy's own noise."""
    shared = rng.normal(0, 0.1, rounds)
    return [
        {
            "graph_id": graph,
            "status": "ok",
            "variant": f"ort-cpu #{copy}",
            "rounds": rounds,
            "inputs_s": 0.1,
            "prepare_s": 0.1,
            "timed_s": 0.4 * rounds,
            "warmup_s": 0.05,
            "round_medians_us": list(median * np.exp(shared + rng.normal(0, pair_sd / math.sqrt(2), rounds))),
        }
        for copy in (1, 2)
    ]


def test_classes_hold_their_kernels_paired_noise_and_predict_resolve_rounds():
    rng = np.random.default_rng(8)
    rows = (
        _aa_rows(rng, "small", 9.0, 0.02)
        + _aa_rows(rng, "mid", 1500.0, 0.10)
        + _aa_rows(rng, "mid2", 2000.0, 0.12)
        + _aa_rows(rng, "big", 30000.0, 0.05, rounds=12)
    )
    kernels = kernel_noise(rows)
    assert [k["graph_id"] for k in kernels] == ["small", "mid", "mid2", "big"]
    assert all(k["pairs"] >= 10 for k in kernels) and kernels[0]["pair_sd"] < kernels[1]["pair_sd"]
    classes = noise_classes(kernels, {1000.0: (0.03, 4)})
    assert [c.class_us for c in classes] == [10.0, 1000.0, 10000.0]
    mid = classes[1]
    assert mid.kernels == ["mid", "mid2"] and mid.drift_sd == 0.03 and mid.pairs == 20
    assert mid.pair_sd == pytest.approx(np.median([kernels[1]["pair_sd"], kernels[2]["pair_sd"]]))
    assert mid.resolve_rounds(0.05) == rounds_to_reach(mid.pair_sd, 0.05)
    assert mid.finds(30) < mid.finds(10) < mid.finds(3)


def test_a_kernel_calibrated_itself_is_predicted_from_its_own_noise():
    noisy = NoiseClass(1000.0, ["a", "b"], 20, 0.10, 0.2, 0.1, round_s=0.5)
    entry = Entry(
        "ort-cpu",
        "1",
        2,
        "now",
        "calibrate-x",
        0.3,
        150.0,
        10,
        [1.0, 1.0],
        [noisy],
        [{"graph_id": "a", "median_us": 900.0, "pairs": 10, "pair_sd": 0.02, "round_sd": 0.03, "round_s": 0.5}],
    )
    assert entry.predict_rounds(900.0, 0.05, graph_id="a") == rounds_to_reach(0.02, 0.05)
    assert entry.predict_rounds(1100.0, 0.05, graph_id="other") == rounds_to_reach(0.10, 0.05)
    assert entry.predict_rounds(1e6, 0.05) == rounds_to_reach(0.10, 0.05)  # the nearest class measured


def test_the_one_line_answer_names_what_is_in_reach_and_what_is_not():
    quiet = NoiseClass(1000.0, ["a"], 10, 0.02, 0.02, 0.02, round_s=0.5)
    loud = NoiseClass(10.0, ["b"], 10, 0.40, 0.4, 0.4, round_s=0.5)
    answer = Entry("ort-cpu", "1", 2, "now", "c", 0.3, 150.0, 10, [None, None], [loud, quiet]).answer()
    assert answer.startswith(
        f"this machine resolves ±5% on kernels of about 1 ms in about {quiet.resolve_rounds(0.05)} interleaved rounds"
    )
    assert "at about 10 µs" in answer


def test_drift_per_class_comes_from_earlier_runs_of_the_same_runtime_and_threads():
    history = History()
    rng = np.random.default_rng(3)
    for shift in rng.normal(0, 0.05, 6):
        for threads in (1, 2):
            history.add(
                {
                    "status": "ok",
                    "graph_id": "g",
                    "runtime": "ort-cpu",
                    "runtime_version": "1",
                    "runtime_options": {"threads": threads},
                    "weights": "const",
                    "mode": "latency",
                    "median_us": 1000.0,
                    "round_medians_us": list(1000.0 * np.exp(shift + rng.normal(0, 0.002, 3))),
                }
            )
    found = drift_by_class(history, "ort-cpu", 2)
    assert set(found) == {1000.0} and 0.02 < found[1000.0][0] < 0.1 and found[1000.0][1] == 1
    assert drift_by_class(history, "openvino", 2) == {}


def test_the_store_keeps_one_entry_per_runtime_and_threads_and_refuses_a_foreign_file(tmp_path):
    first = Entry(
        "ort-cpu", "1", 2, "t1", "c1", 0.3, 150.0, 10, [None, None], [NoiseClass(10.0, ["a"], 9, 0.1, 0.1, 0.1)]
    )
    write_calibration(tmp_path, "m", first)
    write_calibration(tmp_path, "m", Entry("ort-cpu", "1", 1, "t2", "c2", 0.3, 150.0, 10, [None, None], []))
    write_calibration(tmp_path, "m", Entry("ort-cpu", "1", 2, "t3", "c3", 0.3, 150.0, 10, [None, None], []))
    entries = read_calibration(tmp_path)
    assert sorted((e.threads, e.taken_at) for e in entries) == [(1, "t2"), (2, "t3")]
    assert entry_for(entries, "ort-cpu", 2).run_id == "c3" and entry_for(entries, "openvino", 2) is None
    (tmp_path / "calibration.json").write_text("{not json")
    with pytest.raises(InputError, match="not a calibration dbench wrote"):
        read_calibration(tmp_path)


def test_class_of_rounds_to_the_nearest_decade():
    assert [class_of(t) for t in (3.0, 31.0, 32.0, 316.0, 317.0, 9000.0)] == [1.0, 10.0, 100.0, 100.0, 1000.0, 10000.0]


def test_calibrate_measures_stores_and_is_quoted_by_run_compare_and_report(tmp_path):
    out = tmp_path / "res"
    result = runner.invoke(app, ["calibrate", "--budget", "20s", "--id", "gemm_m64_n1_k1216_nn", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "paired rounds" in result.output and "this machine" in result.output and "calibration.json" in result.output
    (folder,) = out.iterdir()
    (entry,) = read_calibration(folder)
    assert (
        entry.runtime == "ort-cpu"
        and entry.kernels[0]["graph_id"] == "gemm_m64_n1_k1216_nn.fwd.gemm.fp32"
        and entry.rounds >= 3
    )
    (log,) = folder.glob("calibrate-*.jsonl")
    assert json.loads(log.read_text().splitlines()[0])["kind"] == "calibrate"
    refused = runner.invoke(app, ["run", "--resume", log.stem, "--out", str(out)])
    assert refused.exit_code == 2 and "is a dbench calibrate run" in refused.output
    run = runner.invoke(
        app,
        [
            "run",
            "--id",
            "gemm_m64_n1_k1216_nn",
            "--suite",
            "inference-device",
            "--runtime",
            "ort-cpu,ort-cpu",
            "--resolve",
            "50%",
            "--rounds",
            "5",
            "--min-time",
            "0.1",
            "--out",
            str(out),
        ],
    )
    assert run.exit_code == 0, run.output
    assert f"calibration: ort-cpu at {entry.threads} threads" in run.output
    (made,) = folder.glob("run-*.jsonl")
    compared = runner.invoke(app, ["compare", str(made)])
    assert "this machine's calibration (ort-cpu at" in compared.output
    report = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "report")])
    assert report.exit_code == 0, report.output
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "## This machine's noise (dbench calibrate)" in markdown and "ort-cpu #" in markdown
    assert (
        "calibrate-" not in markdown.split("## This machine's noise")[0]
    )  # the calibration's own A/A rows are left out
