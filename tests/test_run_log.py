"""Run logs written before this version still open, compare and resume; a torn last line (a kill
mid-write) is cut off on resume so later rows stay readable; old rows' statuses are Status values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.outcome import Status
from dbench.store.log import RunLog
from dbench.store.schema import LOAD_FIELDS, Row
from tests.helpers import rerun_of

REFERENCE = (
    Path(__file__).parent.parent
    / "docs"
    / "measurements"
    / "reference-results"
    / "vm-epyc-2core"
    / "run-20261121-080201-2fbd.jsonl"
)
runner = CliRunner()


CHEAPEST = "gemm_m3072_n1_k128_nn.fwd.gemm.fp32"


def _copy(tmp_path: Path, drop: str | None = None, torn: bool = False) -> Path:
    """The reference log copied under tmp_path/res/<machine>/ without the row of graph `drop`, and
    the start of that row appended without its newline when `torn` (a kill mid-write)."""
    folder = tmp_path / "res" / "vm-epyc-2core"
    folder.mkdir(parents=True)
    lines = REFERENCE.read_text().splitlines(keepends=True)
    dropped = [line for line in lines if drop and f'"graph_id": "{drop}"' in line]
    text = "".join(line for line in lines if line not in dropped) + (dropped[0][:200] if torn else "")
    path = folder / REFERENCE.name
    path.write_text(text)
    return path


def test_reference_rows_match_the_row_schema():
    log = RunLog.read(REFERENCE)
    rows = log.rows()
    keys = set(Row.__dataclass_fields__) - {"pass_name"} | {"pass", "type"}
    later = {
        "invariant_violations",
        "spread",
        "mad_us",
        "ci_low_us",
        "ci_high_us",
        "ci_rel",
        "first_call_us",
        "runtime_median_us",
        "device_median_us",
        "samples_us",
        "load_1m",
        "verified_by",
        "profile_call_us",
        "variant",
        "percentiles_us",
        "rerun_low_us",
        "rerun_high_us",
        "rerun_rel",
        "interval_note",
        "rounds",
        "round_medians_us",
        "round_sizes",
        "round_sd",
        "device_graph_median_us",
        "gpu_state",
        *LOAD_FIELDS,
        "mode",
        "streams",
        "threads_per_stream",
        "throughput_tflops",
        "rate",
        "latency_bound_us",
        "verify_check",
        "false_accept",
        "drift_sd",
        "drift_df",
        "drift_runs",
        "coverage_pairs",
        "coverage_inside",
        "history_factor",
        "overlapped",
        "injected_slowdown",
        "resolve_target",
        "resolved",
        "resolve_half",
        "resolve_note",
        "cross_check",
        "first_difference",
        "disagreeing_outputs",
        "reference_unavailable",
        "verify_random_weights",
        "placement",
        "executed_form",
        "weights_executed",
    }  # fields added after schema version 1
    assert rows and all(set(r) == keys - later for r in rows), "old rows: the same keys, less the later fields"
    assert {Status(r["status"]) for r in rows} == {Status.OK}


def test_torn_last_line_is_cut_before_appending(tmp_path):
    path = _copy(tmp_path, drop=CHEAPEST, torn=True)
    with RunLog.resume(path) as log:
        row = dict(log.rows()[0], seq=46, graph_id="appended")
        log.append({k: v for k, v in row.items() if k != "type"})
    rows = RunLog(path).rows()
    assert [r["graph_id"] for r in rows][-1] == "appended" and len(rows) == 47


def test_reference_run_compares_with_a_rerun_of_the_same_figures(tmp_path):
    """The old log compares with a second run of identical figures (its header's run id changed); a byte
    copy is the same run and is refused (tests/test_bad_input.py)."""
    path = _copy(tmp_path)
    other = rerun_of(path, path.with_name("rerun.jsonl"))
    result = runner.invoke(app, ["compare", str(path), str(other)])
    assert result.exit_code == 0, result.output
    assert CHEAPEST in result.stdout and "1.000" in result.stdout


@pytest.mark.slow
def test_reference_run_resumes_after_a_torn_line(tmp_path):
    """The committed reference log without one row, that row torn at the end, resumes: one new row,
    every graph exactly once, and the log reads back whole."""
    path = _copy(tmp_path, drop=CHEAPEST, torn=True)
    result = runner.invoke(app, ["run", "--resume", path.stem, "--out", str(tmp_path / "res")])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in path.read_text().splitlines()[1:] if '"type": "result"' in line]
    ids = [r["graph_id"] for r in rows]
    assert len(ids) == 47 and len(set(ids)) == 47
    assert rows[-1]["graph_id"] == CHEAPEST and rows[-1]["seq"] == 46
    assert rows[-1]["status"] == "ok" and rows[-1]["weights"] == "const"


def _edited(tmp_path: Path, line: str) -> Path:
    """The reference log with one hand-written line appended after its rows."""
    path = _copy(tmp_path)
    path.write_text(path.read_text() + line + "\n")
    return path


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("5", "line 49 is not a JSON object"),
        ('{"type": "result", "graph_id": 5, "status": "ok"}', "line 49 is a result row without 'graph_id' as text"),
        ('{"type": "result", "graph_id": "g"}', "line 49 is a result row without 'status' as text"),
    ],
)
def test_a_hand_edited_line_is_named_by_every_reader(tmp_path, line, words):
    """compare and report say which line is wrong, in one line, instead of failing inside their tables."""
    path = _edited(tmp_path, line)
    assert len(REFERENCE.read_text().splitlines()) == 48  # the line numbers above
    for command in (
        ["compare", path.stem, "--out", str(tmp_path / "res")],
        ["report", str(path), "--out", str(tmp_path / "rep")],
    ):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, result.output
        assert words in result.output and "the log is corrupt" in result.output and "Traceback" not in result.output


def test_the_report_names_a_row_without_its_kernel(tmp_path):
    """A result row the log accepts (graph id and status) but the report cannot place: named, not a pandas error."""
    path = _edited(tmp_path, '{"type": "result", "graph_id": "g", "status": "ok", "runtime": "ort-cpu"}')
    result = runner.invoke(app, ["report", str(path), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 2, result.output
    assert "the row of g has no 'kernel_id', 'pass', 'form' as text" in " ".join(result.output.split())
