"""`dbench run --streams` and `--scenario server` end to end on ONNX Runtime CPU and OpenVINO with tiny
graphs and --quick: throughput rows have their own fields (never a latency row's), a sweep prints its
knee, compare judges throughput rows with the latency rows' statistics and refuses to set one against
a latency row; every new option's bad input is one line (exit 2) before anything is written."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.orchestrator.request import RunRequest
from dbench.stats.differences import paired
from tests.helpers import write_csv
from tests.test_run_validation import _command

runner = CliRunner()
FAST = ("--min-time", "0.02", "--max-time", "0.5", "--warmup", "0", "--profile-runs", "2")
"""--quick's sampling without its round cost cap: on a loaded machine the cap cut an OpenVINO variant to
2 rounds (its compile of a tiny graph, ~0.12 s, is near a quick round's 0.17 s share)."""
LIMIT = 4 * len(os.sched_getaffinity(0))
"""The most threads a run may ask for here (MAX_THREADS_PER_CORE per CPU)."""

CASES = [
    (["--scenario", "offline"], "unknown scenario 'offline'; valid: latency, throughput, server"),
    (
        ["--scenario", "latency", "--streams", "2"],
        "--streams puts requests in flight, which --scenario latency does not",
    ),
    (["--streams", "0"], "--streams 0 is out of range; use 1 to"),
    (["--streams", str(LIMIT + 1)], f"--streams {LIMIT + 1} is out of range"),
    (["--streams", "1,1"], "--streams names 1 twice; give each value once"),
    (["--streams", "2,x"], "--streams '2,x': 'x' is not a whole number"),
    (["--streams", str(LIMIT), "--threads", "2"], f"--streams {LIMIT} x --threads 2 is {2 * LIMIT} threads"),
    (["--rate", "100"], "--rate belongs to the server scenario; add --scenario server --rate Q"),
    (["--streams", "2", "--latency-bound", "5"], "--latency-bound belongs to the server scenario"),
    (["--scenario", "server"], "--scenario server needs --rate Q"),
    (["--scenario", "server", "--rate", "0"], "--rate 0 must be a positive number of requests per second"),
    (["--scenario", "server", "--rate", "nan"], "--rate nan must be a positive number"),
    (
        ["--scenario", "server", "--rate", "10", "--latency-bound", "-1"],
        "--latency-bound -1 must be a positive number of milliseconds",
    ),
    (
        ["--scenario", "server", "--rate", "10", "--search-time", "5"],
        "--search-time bounds the search for the highest rate under --latency-bound",
    ),
    (
        ["--scenario", "server", "--rate", "10", "--latency-bound", "5", "--search-time", "-1"],
        "--search-time -1 must be 0",
    ),
    (["--resume", "run-x", "--streams", "2"], "drop --streams"),
]


@pytest.mark.parametrize("args,phrase", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_load_input_is_one_line_before_anything_is_written(args, phrase, tmp_path):
    result = runner.invoke(app, _command(args, tmp_path))
    assert result.exit_code == 2, result.output
    assert phrase in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output
    assert not list(tmp_path.glob("res/*/*.jsonl")), "no run log for input that cannot run"


def test_load_options_survive_the_run_header():
    """--resume rebuilds the request from the header: the load options come back as given."""
    request = RunRequest(scenario="server", streams=[1, 2], rate=50.0, latency_bound=4.0, search_time=3.0)
    stored = json.loads(json.dumps(dataclasses.asdict(request)))
    again = RunRequest.from_dict(stored, Path("x.jsonl"))
    assert again == request and [v.load for v in again.variants()] == [v.load for v in request.variants()]
    old = {k: v for k, v in stored.items() if k not in ("scenario", "streams", "rate", "latency_bound", "search_time")}
    assert RunRequest.from_dict(old, Path("x.jsonl")).mode == "latency", "a run made before modes resumes as latency"


def test_streams_share_the_cpus_unless_threads_are_given():
    cpus = RunRequest().cpu_count()
    variants = RunRequest(streams=[1, 2]).variants()
    assert [(v.label, v.load.streams, v.options.threads) for v in variants] == [
        ("ort-cpu streams=1", 1, cpus),
        ("ort-cpu streams=2", 2, max(1, cpus // 2)),
    ]
    assert [v.options.threads for v in RunRequest(streams=2, threads=1).variants()] == [1]
    assert RunRequest().variants()[0].load is None, "latency stays the default"


@pytest.fixture
def kernels(tmp_path) -> Path:
    return write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0", "32,8,32,0,0")


def rows_of(out: Path, run_id: str | None = None) -> list[dict]:
    logs = [p for p in out.glob("*/*.jsonl") if run_id is None or p.stem == run_id]
    return [r for p in logs for r in map(json.loads, p.read_text().splitlines()) if r["type"] == "result"]


LATENCY_ONLY = (
    "median_us",
    "p10_us",
    "p90_us",
    "p99_us",
    "min_us",
    "mean_us",
    "tflops",
    "gbps",
    "samples_us",
    "round_medians_us",
    "rerun_low_us",
    "rerun_high_us",
    "percentiles_us",
    "first_call_us",
)


@pytest.mark.slow
def test_a_stream_sweep_on_both_runtimes_gives_throughput_rows_a_knee_and_compares(kernels, tmp_path):
    out = tmp_path / "res"
    result = runner.invoke(
        app,
        [
            "run",
            "--kernels",
            str(kernels),
            "--runtime",
            "ort-cpu,openvino",
            "--streams",
            "1,2",
            *FAST,
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = rows_of(out)
    assert len(rows) == 2 * 4 and {r["status"] for r in rows} == {"ok"}
    cpus = RunRequest().cpu_count()
    for row in rows:
        assert row["mode"] == "throughput" and row["verified"] is True
        assert row["threads_per_stream"] == max(1, cpus // row["streams"])
        assert row["inferences_per_s"] > 0 and row["throughput_tflops"] > 0 and len(row["round_per_inference_us"]) == 3
        assert (
            row["inferences_per_s_low"] < row["inferences_per_s"] < row["inferences_per_s_high"] or row["interval_note"]
        )
        assert row["latency_p50_us"] <= row["latency_p99_us"] and len(row["stream_inferences"]) == row["streams"]
        assert all(row[field] is None for field in LATENCY_ONLY), "no latency-row figure in a throughput row"
        assert row["precision_executed"] == "fp32", "the profile of one request alone gives the executed precision"
    text = " ".join(result.output.split())
    assert "throughput ·" in text and "inf/s" in text and "saturates at" in text
    assert "re-runs' medians" not in text and "cold" not in text, "no latency table for throughput rows"
    run_id = rows[0]["run_id"]
    compared = runner.invoke(app, ["compare", run_id, "--out", str(out), "--format", "json"])
    assert compared.exit_code == 0, compared.output
    tables = json.loads(compared.stdout)
    assert {t["mode"] for t in tables} == {"throughput"} and {t["figure"] for t in tables} == {"time_per_inference_us"}
    by_variant = {(r["graph_id"], r["variant"]): r for r in rows}
    first = tables[0]
    for kernel in first["kernels"]:
        if kernel["p"] is None:
            continue
        a = by_variant[(kernel["graph_id"], first["a"])]["round_per_inference_us"]
        b = by_variant[(kernel["graph_id"], first["b"])]["round_per_inference_us"]
        assert kernel["p"] == pytest.approx(paired(a, b).p), "the latency rows' paired test on the rounds' figures"
        assert kernel["ratio"] == pytest.approx(paired(a, b).ratio)


@pytest.mark.slow
def test_compare_refuses_a_throughput_row_against_a_latency_row(kernels, tmp_path):
    out = tmp_path / "res"
    for extra in ((), ("--streams", "2")):
        result = runner.invoke(
            app, ["run", "--kernels", str(kernels), "--id", "gemm_m16_*", *extra, *FAST, "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
    latency, throughput = (r["run_id"] for r in sorted(rows_of(out), key=lambda r: r.get("mode") != "latency"))
    refused = runner.invoke(app, ["compare", latency, throughput, "--out", str(out)])
    assert refused.exit_code == 2
    assert "holds latency rows" in refused.output and "throughput rows: a latency row is not comparable" in " ".join(
        refused.output.split()
    )


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["ort-cpu", "openvino"])
def test_the_server_scenario_measures_arrivals_latency_and_the_highest_rate(kernels, tmp_path, runtime):
    out = tmp_path / "res"
    result = runner.invoke(
        app,
        [
            "run",
            "--kernels",
            str(kernels),
            "--id",
            "gemm_m16_*",
            "--runtime",
            runtime,
            "--scenario",
            "server",
            "--rate",
            "300",
            "--latency-bound",
            "20",
            "--search-time",
            "1",
            *FAST,
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    (row,) = rows_of(out)
    assert row["mode"] == "server" and row["rate"] == 300 and row["latency_bound_us"] == 20_000
    assert row["arrival_rate"] > 0 and 0 <= row["over_bound"] <= 1 and len(row["round_p99_us"]) == 3
    assert row["latency_p50_us"] <= row["latency_p99_us"] and row["median_us"] is None
    assert row["search"]["trials"] and row["search"]["stop"] and row["verified"] is True
    text = " ".join(result.output.split())
    assert "server ·" in text and "max rate" in text
