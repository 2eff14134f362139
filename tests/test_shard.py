"""`dbench run --shard i/N`: the parts are disjoint, together exactly the selection, balanced by the
estimate the request alone gives (so every node splits alike), resumable; `report` and `compare` read
the parts of one run as one run, and say what is missing."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.orchestrator.request import RunRequest, validate
from dbench.orchestrator.shard import part_of, split
from dbench.sources.resolve import build_items
from dbench.store.log import RunLog

runner = CliRunner()
TINY = ["--suite", "inference-device", "--ops", "gemm", "--id", "gemm_m*_n1_*", "--quick", "--no-profile"]
"""Six batch-1 GEMVs of the device suite: microseconds each."""


def _items(request: RunRequest):
    classes = validate(request)
    return request.config(), build_items(request, classes["ort-cpu"].int8_form)


def test_split_is_disjoint_complete_and_balanced(seed):
    rng = random.Random(seed)
    weights = [(f"g{i:03d}", rng.lognormvariate(0, 1.5)) for i in range(rng.randint(20, 200))]
    for count in (1, 2, 3, 7):
        parts = split(weights, count)
        ids = [g for part in parts for g in part]
        assert sorted(ids) == sorted(g for g, _ in weights) and len(set(ids)) == len(ids)
        loads = [sum(dict(weights)[g] for g in part) for part in parts]
        assert max(loads) - min(loads) <= max(w for _, w in weights) + 1e-9, (
            "no part heavier than another by more than one graph"
        )
        assert split(list(reversed(weights)), count) == parts, "the same split whatever order the graphs come in"


@pytest.mark.parametrize("selection", [("--suite", "inference-device"), ("--suite", "inference", "--ops", "gemm,conv")])
def test_two_parts_are_exactly_the_selection_with_estimates_within_20_percent(selection):
    args = dict(zip(selection[::2], selection[1::2]))
    base = RunRequest(suite=args["--suite"], ops=tuple(args.get("--ops", "").split(",")) if "--ops" in args else ())
    config, items = _items(base)
    parts = [part_of(RunRequest(**{**base.__dict__, "shard": f"{i}/2"}), config, items) for i in (1, 2)]
    ids = [[item.spec.id for item in mine] for mine, _ in parts]
    assert sorted(ids[0] + ids[1]) == sorted(item.spec.id for item in items) and not set(ids[0]) & set(ids[1])
    estimates = parts[0][1].estimates_s
    assert max(estimates) <= 1.2 * min(estimates), estimates
    assert parts[0][1].label == parts[1][1].label and parts[0][1].split == parts[1][1].split


def test_parts_run_merge_into_one_run_in_report_and_compare(tmp_path):
    out = tmp_path / "res"
    for index in (1, 2):
        result = runner.invoke(
            app,
            [
                "run",
                *TINY,
                "--runtime",
                "ort-cpu,ort-cpu",
                "--rounds",
                "3",
                "--shard",
                f"{index}/2",
                "--shard-label",
                "nightly",
                "--out",
                str(out),
            ],
        )
        assert result.exit_code == 0, result.output
    logs = sorted(out.glob("*/*.jsonl"))
    headers = [RunLog.read(path).header() for path in logs]
    graphs = [{row["graph_id"] for row in RunLog.read(path).rows()} for path in logs]
    config, items = _items(RunRequest(suite="inference-device", ops=("gemm",), pattern="gemm_m*_n1_*", quick=True))
    assert graphs[0] | graphs[1] == {item.spec.id for item in items} and not graphs[0] & graphs[1]
    assert {h["shard"]["label"] for h in headers} == {"nightly"} and sorted(h["shard"]["index"] for h in headers) == [
        1,
        2,
    ]

    from dbench.report.results import load

    loaded = load([out])
    assert [(run.run_id, len(run.parts)) for run in loaded.runs] == [("nightly", 2)]
    assert set(loaded.kernels.run_id) == {"nightly"} and len(loaded.kernels) == 2 * len(items)

    result = runner.invoke(app, ["compare", "nightly", "--out", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    compared = json.loads(result.stdout)
    assert len(compared) == 1 and len(compared[0]["kernels"]) == len(items), "one interleaved run of every graph"
    assert compared[0]["a_runs"] == ["nightly"]

    shutil.move(str(logs[1]), tmp_path / logs[1].name)  # part 2 missing: named, and its graphs absent
    result = runner.invoke(app, ["compare", "nightly", "--out", str(out)])
    assert result.exit_code == 0 and "part 2 of 2 missing" in " ".join(result.output.split())


def test_a_resumed_part_runs_its_own_graphs(tmp_path):
    out = tmp_path / "res"
    result = runner.invoke(app, ["run", *TINY, "--rounds", "1", "--shard", "2/3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    path = next(out.glob("*/*.jsonl"))
    lines = path.read_text().splitlines(keepends=True)
    rows = [line for line in lines if '"type": "result"' in line]
    path.write_text("".join(line for line in lines if line != rows[-1]))  # as if killed before its last row
    result = runner.invoke(app, ["run", "--resume", path.stem, "--out", str(out)])
    assert result.exit_code == 0, result.output
    again = [row["graph_id"] for row in RunLog.read(path).rows()]
    assert sorted(again) == sorted(json.loads(line)["graph_id"] for line in rows), "the part's graphs, each once"


@pytest.mark.parametrize(
    "args, says",
    [
        (["--shard", "0/2"], "parts count from 1"),
        (["--shard", "3/2"], "the part must be 1 to 2"),
        (["--shard", "half"], "is not i/N"),
        (["--shard-label", "x"], "add --shard i/N"),
        (["--shard", "1/2", "--shard-label", "a b"], "--shard-label 'a b'"),
        (["--shard", "7/7"], "part 7 holds none"),
    ],
)
def test_bad_shard_options_are_one_line_exit_2(tmp_path, args, says):
    result = runner.invoke(
        app,
        [
            "run",
            "--suite",
            "inference-device",
            "--ops",
            "gemm",
            "--id",
            "gemm_m*_n1_k1*",
            "--quick",
            *args,
            "--out",
            str(tmp_path / "res"),
        ],
    )
    assert result.exit_code == 2 and says in " ".join(result.output.split()), result.output
    assert not (tmp_path / "res").exists() or not list((tmp_path / "res").rglob("*.jsonl"))


def test_the_sbatch_template_runs_the_parts_of_one_run(tmp_path):
    """scripts/dbench-array.sbatch as Slurm would run it: two array tasks, then one run in the report."""
    import os
    import subprocess
    import sys

    script = Path(__file__).parent.parent / "scripts" / "dbench-array.sbatch"
    env = {
        **os.environ,
        "SLURM_ARRAY_JOB_ID": "4242",
        "SLURM_ARRAY_TASK_COUNT": "2",
        "VENV": sys.prefix,
        "SUITE": "inference-device",
        "OPS": "gemm",
        "RESULTS": str(tmp_path / "res"),
        "EXTRA_ARGS": "--id gemm_m*_n1_k1* --quick --no-profile --rounds 1",
    }
    for task in ("1", "2"):
        done = subprocess.run(
            ["bash", str(script)],
            env={**env, "SLURM_ARRAY_TASK_ID": task},
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
    from dbench.report.results import load

    loaded = load([tmp_path / "res"])
    assert [(run.run_id, len(run.parts)) for run in loaded.runs] == [("slurm-4242", 2)]
    assert len(loaded.kernels) == len(set(loaded.kernels.graph_id)) > 2


def test_compare_across_machines_keeps_saying_so(tmp_path, monkeypatch):
    """Two machines' runs (a fleet's, or any): compare gives its ratios and says they hold the hardware."""
    out = tmp_path / "res"
    for key in ("node-a", "node-b"):
        monkeypatch.setenv("DBENCH_MACHINE_KEY", key)
        result = runner.invoke(app, ["run", *TINY, "--rounds", "3", "--out", str(out)])
        assert result.exit_code == 0, result.output
    logs = [str(next((out / key).glob("*.jsonl"))) for key in ("node-a", "node-b")]
    result = runner.invoke(app, ["compare", *logs, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "the runs are from different machines (node-a, node-b)" in " ".join(result.output.split())


def _part_log(folder: Path, run_id: str, index: int, host: dict, graphs: list[str], count: int = 3) -> Path:
    """A part's log as `dbench run --shard` writes it: its header's shard record and one row a graph."""
    header = {
        "type": "run",
        "schema_version": 3,
        "run_id": run_id,
        "kind": "kernels",
        "host": host,
        "shard": {"index": index, "count": count, "label": "lab", "split": "s1", "ids": graphs},
    }
    rows = [{"type": "result", "graph_id": g, "status": "ok"} for g in graphs]
    path = folder / f"{run_id}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [header, *rows]))
    return path


def test_merge_keeps_the_newest_copy_of_a_part_names_missing_ones_and_groups_alike_nodes(tmp_path):
    from dbench.store.shards import merge

    node = {
        "microarchitecture": "zen3",
        "isa": ["avx2"],
        "cpu_model": "EPYC",
        "cpu_affinity": 8,
        "gpus": [],
        "memory_bytes": 32 * 2**30,
    }
    logs = [
        RunLog.read(_part_log(tmp_path, "run-20261128-010000-aaaa", 1, {**node, "machine_key": "n1-x"}, ["g1"])),
        RunLog.read(_part_log(tmp_path, "run-20261128-020000-bbbb", 1, {**node, "machine_key": "n1-x"}, ["g1b"])),
        RunLog.read(_part_log(tmp_path, "run-20261128-010000-cccc", 2, {**node, "machine_key": "n2-x"}, ["g2"])),
    ]
    (run,) = merge(logs)
    assert run.run_id == "lab" and [r["graph_id"] for r in run.rows()] == ["g1b", "g2"], "the newer copy of part 1"
    said = " ".join(run.notes)
    assert "part 1/3 is in two logs; the newer, run-20261128-020000-bbbb, is used" in said
    assert "part 3 of 3 missing" in said
    assert run.machines() == ["n1-x"] and "2 nodes of one hardware" in said

    other = {**node, "cpu_model": "Xeon", "machine_key": "n3-y"}
    logs.append(RunLog.read(_part_log(tmp_path, "run-20261128-010000-dddd", 3, other, ["g3"])))
    (run,) = merge(logs)
    assert run.machines() == ["n1-x", "n2-x", "n3-y"] and "different hardware" in " ".join(run.notes)
    assert not [n for n in run.notes if "missing" in n]
