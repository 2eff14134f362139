"""`--no-profile` and `--profile-runs` do what their help says: no pass at all (no nodes, no executed
precision claimed, no profiling seconds), or a pass capped at the runs asked; contradicting them is one
line and exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dbench.cli import app
from dbench.store.log import RunLog

runner = CliRunner()
SELECTION = ["--suite", "inference-device", "--ops", "gemm", "--id", "gemm_m64_n1_k1216*", "--quick", "--threads", "1"]


def rows(out: Path) -> list[dict]:
    (log,) = out.glob("*/*.jsonl")
    return RunLog.read(log).rows()


def test_no_profile_skips_the_pass_and_claims_no_precision(tmp_path):
    result = runner.invoke(app, ["run", *SELECTION, "--no-profile", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (row,) = rows(tmp_path)
    assert row["status"] == "ok" and row["verified"]
    assert row["nodes"] == [] and row["precision_executed"] == "unknown" and row["profile_s"] is None
    assert row["kernel_time_us"] is None


def test_profile_runs_keeps_a_pass(tmp_path):
    result = runner.invoke(app, ["run", *SELECTION, "--profile-runs", "1", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (row,) = rows(tmp_path)
    assert row["nodes"] and row["precision_executed"] == "fp32" and row["profile_s"] > 0


def test_no_profile_with_profile_runs_is_refused(tmp_path):
    result = runner.invoke(app, ["run", *SELECTION, "--no-profile", "--profile-runs", "3", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--no-profile and --profile-runs 3 contradict" in result.output
    assert "Traceback" not in result.output and not list(tmp_path.glob("*/*.jsonl"))
