"""Bad input a new user tried (issue 27), each once: one line naming the problem and the fix, exit 2,
nothing written or changed; and the partial input that used to pass without a word now says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from typer.testing import CliRunner

from dbench.cli import app
from dbench.store.log import RunLog
from tests import model_builders as mb
from tests.helpers import write_csv
from tests.processes import run_tree

runner = CliRunner()
FAST = ["--quick", "--min-time", "0.05", "--profile-runs", "0", "--threads", "1"]


def refused(args: list, needle: str, out: Path | None = None) -> str:
    """Exit 2, one `error:` line holding `needle`, no traceback, and `out` (if given) not created."""
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[-1].startswith("error: ") and needle in lines[-1], result.output
    if out is not None:
        assert not out.exists(), f"{out} was written"
    return lines[-1]


@pytest.fixture
def kernels(tmp_path) -> Path:
    return write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0")


def test_resume_with_an_empty_id_starts_nothing(tmp_path):
    """In a process tree with a deadline: taken for no --resume, it would start the default run (306 graphs)."""
    command = [sys.executable, "-m", "dbench", "run", "--resume", "", "--out", str(tmp_path / "res")]
    try:
        done = run_tree(command, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("--resume '' started a run (killed after 60 s)")
    assert done.returncode == 2 and "'--resume': is empty" in done.stderr, done.stderr
    assert not (tmp_path / "res").exists()


def test_memory_limit_nan_is_one_line(kernels, tmp_path):
    for value in ("nan", "inf", "-1", "0", "1e300"):
        refused(
            ["run", "--kernels", kernels, "--memory-limit", value, "--out", tmp_path / "res"],
            "--memory-limit",
            tmp_path / "res",
        )


def test_cpus_given_empty_is_refused(kernels, tmp_path):
    refused(
        ["run", "--kernels", kernels, "--cpus", "", "--out", tmp_path / "res"], "'--cpus': is empty", tmp_path / "res"
    )
    from dbench.affinity import parse_cpus
    from dbench.errors import UsageError

    with pytest.raises(UsageError, match="--cpus was given no CPU"):  # callers of the library too
        parse_cpus(" ")


@pytest.mark.parametrize(
    "flags,needle",
    [
        (["--int8-form", "qdq"], "--int8-form applies to int8 graphs only, not fp32"),
        (["--no-pad"], "--no-pad applies to int8 graphs only"),
        (
            ["--precision", "fp16", "--int8-form", "qlinear", "--no-pad"],
            "--int8-form and --no-pad apply to int8 graphs only, not fp16",
        ),
    ],
)
def test_int8_options_beside_another_precision_are_refused(kernels, tmp_path, flags, needle):
    refused(["gen", "--kernels", kernels, *flags, "--out", tmp_path / "g"], needle, tmp_path / "g")
    refused(["run", "--kernels", kernels, *flags, "--out", tmp_path / "res"], needle, tmp_path / "res")


def test_int8_options_at_int8_still_work(kernels, tmp_path):
    result = runner.invoke(
        app,
        [
            "gen",
            "--kernels",
            str(kernels),
            "--precision",
            "int8",
            "--int8-form",
            "qlinear",
            "--no-pad",
            "--out",
            str(tmp_path / "g"),
        ],
    )
    assert result.exit_code == 0, result.output


def test_a_kernel_file_with_an_unknown_column_is_refused(tmp_path):
    path = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t,batchsize", "16,8,32,0,0,4")
    line = refused(["list", "--kernels", path], "column 'batchsize': unknown column")
    assert "a gemm file has m, n, k, a_t, b_t and optionally batch, suite, app, copies" in line
    refused(["run", "--kernels", path, "--out", tmp_path / "res"], "unknown column", tmp_path / "res")


def test_the_kernels_csv_gen_from_model_writes_reads_back(tmp_path):
    """Its informational columns (id, gflop, nodes, precision, pass, form) are columns dbench wrote."""
    model = mb.save(mb.mlp(np.random.default_rng(0)), tmp_path, "mlp")
    assert (
        runner.invoke(
            app, ["gen", "--from-model", str(model), "--dim", "batch=1", "--out", str(tmp_path / "g")]
        ).exit_code
        == 0
    )
    listed = runner.invoke(app, ["list", "--kernels", str(tmp_path / "g" / "mlp" / "kernels.csv")])
    assert listed.exit_code == 0, listed.output


def test_a_manifest_listing_a_graph_twice_is_refused(kernels, tmp_path):
    assert runner.invoke(app, ["gen", "--kernels", str(kernels), "--out", str(tmp_path / "g")]).exit_code == 0
    manifest = tmp_path / "g" / "all" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["graphs"].append(data["graphs"][0])
    manifest.write_text(json.dumps(data))
    refused(
        ["run", "--graphs", manifest.parent, *FAST, "--out", tmp_path / "res"],
        f"lists graph {data['graphs'][0]['id']!r} twice",
        tmp_path / "res",
    )


def test_a_link_out_of_a_foreign_folder_is_refused(tmp_path):
    outside = mb.save(mb.mlp(np.random.default_rng(0)), tmp_path, "elsewhere")
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "x.onnx").symlink_to(outside)
    refused(
        ["run", "--graphs", folder, "--dim", "batch=1", *FAST, "--out", tmp_path / "res"],
        "is a link to",
        tmp_path / "res",
    )


def test_a_link_inside_a_foreign_folder_still_runs(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    mb.save(mb.mlp(np.random.default_rng(0)), folder, "real")
    (folder / "alias.onnx").symlink_to(folder / "real.onnx")
    result = runner.invoke(
        app, ["run", "--graphs", str(folder), "--dim", "batch=1", *FAST, "--out", str(tmp_path / "res")]
    )
    assert result.exit_code == 0, result.output


def test_use_arena_takes_0_or_1_and_is_applied(kernels, tmp_path):
    refused(
        ["run", "--kernels", kernels, "--option", "use_arena=banana", "--out", tmp_path / "res"],
        "--option use_arena=banana is not valid; use 0 or 1",
        tmp_path / "res",
    )
    from dbench.catalog import load_kernel_file
    from dbench.gen.plan import GraphRequest, build
    from dbench.runtimes.base import RuntimeOptions
    from dbench.runtimes.onnxruntime import OrtCpu

    graph = build(GraphRequest(load_kernel_file(kernels)[0], "fp32", "fwd", "gemm"))
    for value, expected in (("0", False), ("1", True)):
        runtime = OrtCpu(RuntimeOptions(threads=1, extra={"use_arena": value}))
        session = runtime.prepare(graph.model, graph.spec, {})
        try:  # what ONNX Runtime itself holds, not what dbench records
            assert session.session.get_session_options().enable_cpu_mem_arena is expected
        finally:
            session.close()
        assert runtime.describe()["enable_cpu_mem_arena"] is expected


def _no_kernel_model(folder: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    model = helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    path = folder / "relu.onnx"
    onnx.save(model, str(path))
    return path


def test_a_model_with_no_kernel_node_is_an_error_for_list_and_gen(tmp_path):
    path = _no_kernel_model(tmp_path)
    refused(
        ["gen", "--from-model", path, "--out", tmp_path / "g"], "has no node dbench times as a kernel", tmp_path / "g"
    )
    listed = runner.invoke(app, ["list", "--from-model", str(path)])
    assert listed.exit_code == 2 and "Relu" in listed.output  # the reasons, then the error line
    assert listed.output.strip().splitlines()[-1].startswith("error: ")


def _log(folder: Path, run_id: str, rows: list[dict]) -> Path:
    with RunLog.create(
        folder,
        run_id,
        {
            "kind": "kernels",
            "runtime": {"name": "ort-cpu"},
            "host": {"machine": "box", "hostname": "box", "machine_key": "box-x-2c-8g-000000"},
        },
    ) as log:
        for row in rows:
            log.append(row)
    return log.path


def _row(graph: str, status: str = "ok", verified: bool | None = True) -> dict:
    times = [100.0, 101.0, 99.0, 100.5]
    return {
        "graph_id": graph,
        "kernel_id": graph,
        "family": "gemm",
        "pass": "fwd",
        "form": "gemm",
        "precision": "fp32",
        "runtime": "ort-cpu",
        "status": status,
        "verified": verified,
        "median_us": 100.0,
        "samples_us": times,
    }


def test_compare_of_a_run_with_itself_is_refused(tmp_path):
    path = _log(tmp_path / "m", "run-a", [_row("g")])
    refused(["compare", path, path], "a run compared with itself says nothing")
    refused(
        ["compare", "run-a", str(path), "--out", tmp_path], "a run compared with itself says nothing"
    )  # id and path


def test_compare_of_a_run_with_its_copy_is_refused(tmp_path):
    """A byte copy of a log is the same run (its header's run id) under another name: refused like a run named twice."""
    path = _log(tmp_path / "m", "run-a", [_row("g")])
    copy = path.with_name("run-copy.jsonl")
    copy.write_bytes(path.read_bytes())
    line = refused(["compare", copy, path, "--out", tmp_path / "out"], "is named twice", tmp_path / "out")
    assert "run-a" in line and "copy" in line


def test_compare_with_no_graph_verified_in_both_exits_2(tmp_path):
    a = _log(tmp_path / "m", "run-a", [_row("g1"), _row("g2", "mismatch", False)])
    b = _log(tmp_path / "m", "run-b", [_row("g3"), _row("g2")])
    refused(["compare", a, b], "have no graph verified on both sides: nothing to compare")


def test_compare_and_report_say_a_log_is_torn(tmp_path):
    a = _log(tmp_path / "m", "run-a", [_row("g1"), _row("g2")])
    b = _log(tmp_path / "m", "run-b", [_row("g1"), _row("g2")])
    with b.open("a") as fh:
        fh.write('{"type": "result", "graph_id": "g3", "sta')  # a kill mid-write
    result = runner.invoke(app, ["compare", str(a), str(b)])
    assert result.exit_code == 0, result.output
    assert "run-b.jsonl ends in a torn line" in " ".join(result.output.split())
    from dbench.report.results import load

    notes = load([tmp_path / "m"]).notes
    assert any("run-b.jsonl ends in a torn line" in note and "dbench run --resume run-b" in note for note in notes), (
        notes
    )
    assert not any("run-a" in note for note in notes)
