"""Row invariants: each check catches the defect it names, and real rows of every family on both CPU
runtimes pass them all."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.store.invariants import KERNEL_TIME_TOLERANCE, PROFILE_CLOCK_SLACK_US, PROFILE_CLOCK_TOLERANCE, violations

SOUND = {"precision": "fp32", "precision_executed": "fp32", "median_us": 100.0, "kernel_time_us": 90.0}


def test_a_sound_row_breaks_nothing():
    assert violations(SOUND) == []
    assert violations({**SOUND, "kernel_time_us": None, "precision_executed": "unknown"}) == []
    assert violations({"precision": "fp32", "precision_executed": "", "status": "failed"}) == []


def test_kernel_time_above_the_end_to_end_median_is_a_violation():
    over = 100.0 * (1 + KERNEL_TIME_TOLERANCE) + 1
    (found,) = violations({**SOUND, "kernel_time_us": over})
    assert "exceeds the end-to-end median" in found
    assert violations({**SOUND, "kernel_time_us": over - 2}) == []


def test_kernel_time_above_its_own_profiling_pass_is_a_miscount():
    """Node times of one pass sum to at most that pass's time per call: beyond it, the adapter miscounts
    (a loop container added to its body), however the machine's load moved."""
    nodes = [{"time_us": 50.0}, {"time_us": 45.0}, {"time_us": 95.0, "container": True}]
    within = {**SOUND, "kernel_time_us": 95.0, "profile_call_us": 96.0, "nodes": nodes}
    assert violations(within) == []
    allowed = 96.0 * (1 + PROFILE_CLOCK_TOLERANCE) + PROFILE_CLOCK_SLACK_US * 2
    (found,) = violations({**within, "kernel_time_us": allowed + 0.5})
    assert "exceeds the 96.0 us per call of the profiling pass" in found
    assert violations({**within, "kernel_time_us": 190.0, "median_us": 100.0}) != []


@pytest.mark.parametrize(
    "precision, executed", [("fp32", "int64"), ("fp32", "bool"), ("fp16", "int8"), ("int8", "int64"), ("bf16", "fp64")]
)
def test_a_type_the_graph_could_not_compute_in_is_a_violation(precision, executed):
    (found,) = violations({**SOUND, "precision": precision, "precision_executed": executed})
    assert f"executed precision {executed}" in found


@pytest.mark.parametrize(
    "precision, executed", [("fp16", "fp32"), ("int8", "fp32"), ("int8", "int8"), ("bf16", "bf16")]
)
def test_fallbacks_a_runtime_really_takes_are_allowed(precision, executed):
    assert violations({**SOUND, "precision": precision, "precision_executed": executed}) == []


CASES = [  # (selection options): every family and form whose profile has its own shape
    ("--ops", "gemm", "--id", "gemm_m35_n700_k2048_nn"),
    ("--ops", "conv", "--id", "conv_w7_h7_c512_n1_k512_s3_r3_*"),
    ("--ops", "sparse", "--id", "sparse_m7680_n1_k2560_nn_z0.9"),
    ("--ops", "rnn", "--id", "rnn_vanilla_h64_n1_t96", "--rnn-form", "recurrence"),
    ("--ops", "rnn", "--id", "rnn_lstm_h256_n1_t150"),
    ("--ops", "gemm", "--id", "gemm_m35_n700_k2048_nn", "--precision", "int8"),
]


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["ort-cpu", "openvino"])
def test_every_row_of_a_run_keeps_the_invariants(runtime, tmp_path):
    """The runner marks a row that breaks one; on real rows of every family there must be none."""
    rows = []
    for case in CASES:
        out = tmp_path / str(len(rows))
        result = CliRunner().invoke(
            app, ["run", "--suite", "inference", *case, "--runtime", runtime, "--quick", "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
        (log,) = out.glob("*/*.jsonl")
        rows += [json.loads(line) for line in log.read_text().splitlines()[1:] if '"type": "result"' in line]
    assert len(rows) >= len(CASES)
    measured = [r for r in rows if r["status"] == "ok"]
    assert measured and all("invariant_violations" in r for r in rows)
    # the same-pass check had its frame on every row that kept a profile; under --quick a profile that would
    # cost more than the graph's sampling is left out, and the row says so
    unprofiled = [(r["graph_id"], r["message"]) for r in measured if not r["profile_call_us"]]
    assert all("no per-node profile" in (message or "") for _, message in unprofiled), unprofiled
    assert len(unprofiled) < len(measured)
    assert [(r["graph_id"], r["invariant_violations"]) for r in rows if r["invariant_violations"]] == []


def test_the_kernel_time_violation_names_the_load_it_was_measured_under():
    over = 100.0 * (1 + KERNEL_TIME_TOLERANCE) + 1
    (found,) = violations({**SOUND, "kernel_time_us": over, "load_1m": 3.5, "profile_call_us": 400.0})
    assert "1-minute load 3.50; the profiling pass ran at 400.0 us per call" in found
