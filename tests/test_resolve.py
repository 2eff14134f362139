"""`dbench run --resolve`: rounds per graph until its anytime-valid interval is narrow enough, the rows
that say how it ended, compare's anytime-valid test on them, and the benchmark-only injected slowdown
that the goal's A/B runs need (never on by accident)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.orchestrator.slowdown import VARIABLE, injected
from dbench.worker.main import slowed
from tests.helpers import write_csv

runner = CliRunner()


@pytest.fixture
def kernels(tmp_path) -> Path:
    return write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "64,64,64,0,0", "8,8,8,0,0")


def _rows(out: Path) -> list[dict]:
    (log,) = out.glob("*/*.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines() if '"type": "result"' in line]


def test_an_interleaved_resolve_run_stops_each_graph_by_its_paired_interval(tmp_path, kernels):
    out = tmp_path / "res"
    result = runner.invoke(
        app,
        [
            "run",
            "--kernels",
            str(kernels),
            "--runtime",
            "ort-cpu,ort-cpu",
            "--resolve",
            "50%",
            "--rounds",
            "8",
            "--min-time",
            "0.1",
            "--no-profile",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert (
        "resolve: rounds per graph until its anytime-valid 95% interval is within ±50%, at most 8 a graph"
        in result.output
    )
    assert "--resolve 50%:" in result.output
    rows = _rows(out)
    assert len(rows) == 4 and all(r["resolve_target"] == 0.5 for r in rows)
    for graph in {r["graph_id"] for r in rows}:
        pair = [r for r in rows if r["graph_id"] == graph]
        assert (
            pair[0]["rounds"] == pair[1]["rounds"] and 3 <= pair[0]["rounds"] <= 8
        )  # a graph's variants stop together
        assert pair[0]["resolved"] == pair[1]["resolved"]
        if pair[0]["resolved"]:
            assert pair[1]["resolve_half"] <= 0.5 and "resolved" in pair[1]["resolve_note"]
        else:
            assert "not resolved" in pair[1]["resolve_note"]
    (log,) = out.glob("*/*.jsonl")
    compared = runner.invoke(app, ["compare", str(log), "--format", "json"])
    (table,) = json.loads(compared.stdout)
    assert "anytime-valid" in table["method"] and all("anytime" in k["method"] for k in table["kernels"] if k["method"])


def test_a_single_resolve_run_takes_rounds_as_long_as_a_fixed_runs(tmp_path, kernels):
    out = tmp_path / "res"
    result = runner.invoke(
        app,
        [
            "run",
            "--kernels",
            str(kernels),
            "--id",
            "gemm_m8_*",
            "--resolve",
            "90%",
            "--rounds",
            "6",
            "--min-time",
            "0.09",
            "--no-profile",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    (log,) = out.glob("*/*.jsonl")
    header = json.loads(log.read_text().splitlines()[0])
    assert (
        header["timing"]["rounds"] == 6 and header["timing"]["share_rounds"] == 3
    )  # 0.03 s a round, as a 3-round run's
    (row,) = _rows(out)
    assert row["resolve_target"] == 0.9 and 3 <= row["rounds"] <= 6


def test_the_injected_slowdown_is_for_named_variants_only_and_refused_when_misnamed(monkeypatch):
    assert injected(["ort-cpu #1", "ort-cpu #2"]) == {}
    monkeypatch.setenv(VARIABLE, "ort-cpu #2=0.10")
    assert injected(["ort-cpu #1", "ort-cpu #2"]) == {"ort-cpu #2": 0.10}
    for bad, phrase in (
        ("ort-cpu #3=0.1", "is no variant of this run"),
        ("ort-cpu #2", "write LABEL=FRACTION"),
        ("ort-cpu #2=-1", "write LABEL=FRACTION"),
    ):
        monkeypatch.setenv(VARIABLE, bad)
        with pytest.raises(Exception, match=phrase):
            injected(["ort-cpu #1", "ort-cpu #2"])


def test_a_slowed_call_waits_at_least_its_fraction_of_its_own_time():
    calls = []

    def call() -> None:
        calls.append(1)
        time.sleep(0.002)

    start = time.perf_counter()
    slowed(call, 0.5)()
    took = time.perf_counter() - start
    assert calls == [1] and took >= 0.003


def test_a_run_with_an_injected_slowdown_says_so_in_its_header_rows_and_printout(tmp_path, kernels, monkeypatch):
    monkeypatch.setenv(VARIABLE, "ort-cpu #2=0.25")
    out = tmp_path / "res"
    result = runner.invoke(
        app,
        [
            "run",
            "--kernels",
            str(kernels),
            "--id",
            "gemm_m64_*",
            "--runtime",
            "ort-cpu,ort-cpu",
            "--quick",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "is slowed by 25% on purpose" in result.output
    rows = {r["variant"]: r for r in _rows(out)}
    assert rows["ort-cpu #2"]["injected_slowdown"] == 0.25 and rows["ort-cpu #1"]["injected_slowdown"] is None
    (log,) = out.glob("*/*.jsonl")
    assert json.loads(log.read_text().splitlines()[0])["injected_slowdown"] == {"ort-cpu #2": 0.25}
    compared = runner.invoke(app, ["compare", str(log)])
    assert "carries an injected slowdown of 25%" in compared.output
