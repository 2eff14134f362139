"""`dbench run --fleet`: a real Dask cluster on this machine (a scheduler and three nodes, each a `dask
worker` with a machine key of its own) runs one selection in one command; a node whose worker is killed
mid-run comes back (its nanny restarts it) and finishes, a node killed whole is named as never back and
finishes on `--resume`; every row lands under its node's key, none lost, none doubled, and no process is
left. Without the `fleet` extra the command is one line naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dbench.store.log import RunLog
from tests.fleet_cluster import LocalCluster
from tests.processes import process_tree, run_tree

SELECTION = [
    "--suite",
    "inference-device",
    "--ops",
    "gemm",
    "--id",
    "gemm_m*_n1_*",
    "--quick",
    "--no-profile",
    "--threads",
    "1",
    "--min-time",
    "2",
    "--max-time",
    "3",
]
"""Six batch-1 GEMVs, each sampled 2-3 s, so a node takes 15-20 s: killing a node after its first row
must land before it finishes (at --quick's 0.5 s a graph, node-c finished its six while node-b's worker
was being killed, and was never lost)."""
NODES = ("node-a", "node-b", "node-c")
TIMEOUT_S = 300


def _dbench(*args: str) -> list[str]:
    return [sys.executable, "-m", "dbench", *args]


def _rows(out: Path, key: str) -> list[str]:
    """The graph ids of every row under a machine's folder, all its logs together."""
    return [row["graph_id"] for path in sorted((out / key).glob("*.jsonl")) for row in RunLog.read(path).rows()]


def _wait_for_row(out: Path, key: str, fleet: subprocess.Popen) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not [
        line
        for path in (out / key).glob("*.jsonl")
        for line in path.read_text().splitlines()
        if '"type": "result"' in line
    ]:
        assert fleet.poll() is None, f"the fleet ended before {key} made a row: {fleet.communicate()}"
        assert time.monotonic() < deadline, f"{key} made no row in time"
        time.sleep(0.1)


@pytest.mark.slow
def test_three_nodes_one_killed_and_back_one_lost_then_resumed(tmp_path):
    pytest.importorskip("distributed", reason="the fleet extra (dask distributed) is not installed")
    out = tmp_path / "res"
    with LocalCluster(tmp_path) as cluster:
        for key in NODES:
            cluster.add_node(key)
        listed = run_tree(_dbench("fleet", cluster.address), 60)
        assert listed.returncode == 0 and all(key in listed.stdout for key in NODES), listed.stdout + listed.stderr

        command = _dbench("run", "--fleet", cluster.address, *SELECTION, "--fleet-wait", "3", "--out", str(out))
        with process_tree(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as fleet:
            _wait_for_row(out, "node-b", fleet)
            cluster.kill_worker_process("node-b")  # its nanny starts a new worker: the machine comes back
            _wait_for_row(out, "node-c", fleet)
            cluster.kill_node("node-c")  # gone for good
            stdout, stderr = fleet.communicate(timeout=TIMEOUT_S)
        said = " ".join((stdout + stderr).split())
        assert fleet.returncode == 1, said
        assert "never came back: node-c" in said and "--resume fleet-" in said, said
        fleet_id = next((out / "fleets").glob("fleet-*.json")).stem
        record = json.loads((out / "fleets" / f"{fleet_id}.json").read_text())
        assert {k: m["status"] for k, m in record["machines"].items()} == {
            "node-a": "finished",
            "node-b": "finished",
            "node-c": "lost",
        }
        assert "node-b: dropped" in said, "the killed worker was seen to leave"

        cluster.add_node("node-c")
        resumed = run_tree(
            _dbench("run", "--fleet", cluster.address, "--resume", fleet_id, "--out", str(out)), TIMEOUT_S
        )
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr

    six = sorted(_rows(out, "node-a"))
    assert len(six) == 6 and len(set(six)) == 6
    for key in NODES:
        rows = _rows(out, key)
        assert sorted(rows) == six, f"{key}: every graph exactly once ({rows})"
        assert len(list((out / key).glob("*.jsonl"))) == 1, f"{key}: one run, resumed in place"
    header = RunLog.read(next((out / "node-c").glob("*.jsonl"))).header()
    assert header["fleet"]["id"] == fleet_id and header["host"]["machine_key"] == "node-c"


def test_without_the_fleet_extra_the_command_is_one_line_exit_2(tmp_path):
    hide = (
        "import sys; sys.modules['distributed'] = None; sys.argv = ['dbench'] + sys.argv[1:]; "
        "from dbench.cli import main; main()"
    )
    for args in (
        ["run", "--fleet", "tcp://127.0.0.1:1", *SELECTION, "--out", str(tmp_path / "res")],
        ["fleet", "tcp://127.0.0.1:1"],
    ):
        done = subprocess.run(
            [sys.executable, "-c", hide, *args],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "pip install 'dbench[fleet]'" in lines[0], done.stderr
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize(
    "args, says",
    [
        (["--kernels", "{tmp}/k.csv"], "dbench export --kernels"),
        (["--model", "{tmp}/m.onnx"], "--model does not apply to a fleet run"),
        (["--fleet-wait", "5"], None),
        (["--shard", "1/2"], "--shard splits a selection"),
    ],
)
def test_fleet_options_that_cannot_apply_are_refused(tmp_path, args, says):
    from typer.testing import CliRunner

    from dbench.cli import app

    (tmp_path / "k.csv").write_text("family,m,n,k\n")
    (tmp_path / "m.onnx").write_bytes(b"")
    fleet = [] if says is None else ["--fleet", "tcp://127.0.0.1:1"]
    args = [arg.format(tmp=tmp_path) for arg in args]
    result = CliRunner().invoke(app, ["run", *fleet, *args, "--out", str(tmp_path / "res")])
    assert result.exit_code == 2, result.output
    assert (says or "add --fleet ADDRESS") in " ".join(result.output.split())
