"""`dbench run --json`: the finished run as strict JSON on stdout alone (the tables and progress on
stderr), its rows matching the log without the per-sample times and profile; bad input prints no JSON."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import write_csv


def test_run_json_is_the_only_stdout_and_matches_the_log(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0", "8,8,8,0,0")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dbench",
            "run",
            "--kernels",
            str(kernels),
            "--quick",
            "--min-time",
            "0.02",
            "--profile-runs",
            "1",
            "--threads",
            "1",
            "--out",
            str(tmp_path / "res"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout, parse_constant=_not_json)
    (log,) = (tmp_path / "res").glob("*/*.jsonl")
    logged = [r for r in map(json.loads, log.read_text().splitlines()[1:]) if r["type"] == "result"]
    assert summary["run_id"] == log.stem and summary["log"] == str(log) and summary["exit_code"] == 0
    assert summary["statuses"] == {"ok": 2}
    assert [r["graph_id"] for r in summary["rows"]] == [r["graph_id"] for r in logged]
    for row, full in zip(summary["rows"], logged):
        assert "samples_us" not in row and "nodes" not in row
        assert row["median_us"] == full["median_us"] and row["verified"] is True
    assert any(path.endswith(".csv") for path in summary["files"])
    assert "ok" in done.stderr and summary["run_id"] in done.stderr  # the human summary went to stderr


def _not_json(name: str):
    raise AssertionError(f"{name} is not strict JSON")


def test_run_json_with_bad_input_prints_no_json(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "dbench", "run", "--suite", "nope", "--json", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == "" and done.stderr.startswith("error: unknown suite")
