"""`--batch 1,8,32`: catalog kernels swept over their batch dimension (GEMM and sparse N, conv n, RNN
batch) by list, gen, export and run alike; the sizes are kept in the run header, so --resume rebuilds the
same graphs; beside a gen folder or a model they are refused, as any generation option."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dbench.catalog import load_catalog
from dbench.catalog.batch import BATCH_FIELD, parse_batches, with_batches
from dbench.cli import app
from dbench.errors import UsageError
from dbench.gen.options import GenOptions
from dbench.gen.plan import build, plan
from tests.helpers import write_csv

runner = CliRunner()


def test_every_family_has_a_batch_field_and_it_is_the_one_swept():
    catalog = load_catalog()
    for family, field in BATCH_FIELD.items():
        kernel = next(k for k in catalog if k.family == family)
        swept = with_batches([kernel], (1, 3))
        assert [getattr(k, field) for k in swept] == [1, 3]
        others = {f: v for f, v in kernel.params().items() if f != field}
        assert all({f: v for f, v in k.params().items() if f != field} == others for k in swept)


def test_the_batch_reaches_the_graphs_inputs():
    """Built through the same path as a run: the activation's batch dimension is the swept size."""
    conv = next(k for k in load_catalog() if k.family == "conv" and "inference_device" in k.suites)
    requests = plan([conv], ("inference_device",), GenOptions(batch=(3,)))
    graph = build(requests[0])
    activation = next(i for i in graph.spec.inputs if i.role == "activation")
    assert activation.shape[0] == 3 and graph.spec.params["n"] == 3


def test_parse_batches():
    assert parse_batches(["1,8", "32", "8"]) == (1, 8, 32)
    for bad in ("0", "-1", "x", "1.5", "", "99999999"):
        with pytest.raises(UsageError, match="is not a batch size"):
            parse_batches([bad])


def test_list_sweeps_and_merges_what_becomes_identical(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0", "16,4,32,0,0")
    result = runner.invoke(app, ["list", "--kernels", str(kernels), "--batch", "1,2", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert [r["id"] for r in json.loads(result.output)] == ["gemm_m16_n1_k32_nn", "gemm_m16_n2_k32_nn"]


def test_run_times_each_size_and_resume_keeps_them(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "cell,hidden,batch,timesteps", "lstm,8,4,3")
    out = tmp_path / "res"
    args = [
        "run",
        "--kernels",
        str(kernels),
        "--batch",
        "1,2",
        "--quick",
        "--min-time",
        "0.02",
        "--profile-runs",
        "0",
        "--threads",
        "1",
        "--out",
        str(out),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (log,) = out.glob("*/*.jsonl")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines[0]["request"]["gen"]["batch"] == [1, 2]
    rows = [r for r in lines[1:] if r["type"] == "result"]
    assert sorted(r["params"]["batch"] for r in rows) == [1, 2] and all(r["verified"] for r in rows)
    first_row = next(i for i, r in enumerate(lines) if r["type"] == "result")
    log.write_text("\n".join(log.read_text().splitlines()[: first_row + 1]) + "\n")  # as if killed after the first row
    resumed = runner.invoke(app, ["run", "--resume", log.stem, "--out", str(out)])
    assert resumed.exit_code == 0, resumed.output
    rows = [r for r in map(json.loads, log.read_text().splitlines()[1:]) if r["type"] == "result"]
    assert sorted(r["params"]["batch"] for r in rows) == [1, 2]


def test_batch_beside_a_folder_or_a_model_is_refused(tmp_path):
    from tests import model_builders as mb

    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0")
    assert runner.invoke(app, ["gen", "--kernels", str(kernels), "--out", str(tmp_path / "g")]).exit_code == 0
    folder = runner.invoke(
        app, ["run", "--graphs", str(tmp_path / "g" / "all"), "--batch", "2", "--out", str(tmp_path / "r")]
    )
    assert folder.exit_code == 2 and "--batch cannot apply" in folder.output
    model = mb.save(mb.mlp(np.random.default_rng(0)), tmp_path, "mlp")
    listed = runner.invoke(app, ["list", "--from-model", str(model), "--dim", "batch=1", "--batch", "2"])
    assert listed.exit_code == 2 and "drop --batch" in listed.output
    assert not (tmp_path / "r").exists()
