"""`dbench list` and `dbench gen` through typer's CliRunner: output, idempotence, manifest, bad input."""

from __future__ import annotations

import csv
import io
import json

import onnx
import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.gen.manifest import read_manifest, sha256
from tests.helpers import write_csv

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_several_ids_repeated_or_comma_separated_select_all_of_them():
    """`--id a --id b` once kept only b without a word; repeated and comma-separated globs now add up."""
    ids = ("gemm_m64_n1_k1216_nn", "gemm_m35_n700_k2048_nn", "conv_w7_h7_c512_n1_k512_s3_r3_pw1_ph1_sw1_sh1")
    for args in (
        ["--id", ids[0], "--id", ids[1], "--id", ids[2]],
        ["--id", ",".join(ids)],
        ["--id", ids[0], "--id", ",".join(ids[1:])],
    ):
        result = runner.invoke(app, ["list", "--format", "json", *args])
        assert result.exit_code == 0, result.output
        assert sorted(k["id"] for k in json.loads(result.output)) == sorted(ids), args


def test_list_csv_and_json():
    result = invoke("list", "--suite", "inference-device", "--ops", "gemm", "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 13 and rows[0]["id"].startswith("gemm_")
    result = invoke("list", "--suite", "train", "--ops", "conv", "--format", "json")
    data = json.loads(result.stdout)
    assert sum(r["copies"] for r in data) == 94


def test_list_table_reconciles_counts():
    result = invoke("list", "--suite", "inference-server", "--ops", "conv")
    assert result.exit_code == 0
    assert "103 kernels (107 upstream rows" in result.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (("list", "--suite", "bogus"), "valid suites: train, inference"),
        (("list", "--ops", "fft"), "valid ops: gemm, conv"),
        (("list", "--id", "nomatch_*"), "no kernel matches --suite all --id 'nomatch_*' in the DeepBench catalog"),
        (("gen", "--precision", "fp8"), "valid precisions: fp32, fp16, bf16, int8"),
    ],
)
def test_bad_choices_are_one_line_exit_2(args, needle):
    result = invoke(*args)
    assert result.exit_code == 2
    assert needle in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "option,value,needle",
    [
        ("--gemm-form", "mm", "unknown gemm form 'mm'; valid: gemm, matmul"),
        ("--rnn-form", "scan", "unknown rnn form 'scan'; valid: op, recurrence"),
        ("--int8-form", "fake", "unknown int8 form 'fake'; valid: qlinear, qdq, integer"),
        ("--gru-activation", "sigmoid", "unknown GRU activation 'sigmoid'; valid: tanh, relu"),
    ],
)
@pytest.mark.parametrize("command", ["gen", "run"])
def test_bad_form_is_one_line_exit_2_before_any_folder(command, option, value, needle, tmp_path):
    out = tmp_path / "out"
    result = invoke(command, "--ops", "gemm", option, value, "--out", str(out))
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not out.exists()


def test_gen_writes_graphs_and_manifest_idempotently(tmp_path):
    args = ("gen", "--suite", "inference-device", "--ops", "gemm,conv", "--out", str(tmp_path))
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    folder = tmp_path / "inference-device"
    entries = read_manifest(folder)
    assert len(entries) == 28
    snapshot = {p.name: p.read_bytes() for p in folder.iterdir()}
    for entry in entries:
        data = (folder / entry.file).read_bytes()
        assert sha256(data) == entry.sha256
        assert entry.spec.inputs and all(t.role in ("activation", "weight") for t in entry.spec.inputs)
        onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    mtimes = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.onnx")}
    second = invoke(*args)
    assert "28 unchanged" in second.stdout
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == snapshot
    assert {p.name: p.stat().st_mtime_ns for p in folder.glob("*.onnx")} == mtimes
    forced = invoke(*args, "--force")
    assert "28 written" in forced.stdout
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == snapshot


def test_gen_train_conv_has_three_passes(tmp_path):
    result = invoke("gen", "--suite", "train", "--ops", "conv", "--id", "conv_w7_h7_c832_*", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    passes = sorted(e.spec.pass_name for e in read_manifest(tmp_path / "train"))
    assert passes and passes == sorted(["bwd_data", "bwd_filter", "fwd"] * (len(passes) // 3))


def test_gen_from_user_kernel_file(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "32,4,16,1,1")
    result = invoke("gen", "--kernels", str(kernels), "--precision", "fp16", "--out", str(tmp_path / "g"))
    assert result.exit_code == 0, result.output
    (entry,) = read_manifest(tmp_path / "g" / "all")
    assert entry.spec.id == "gemm_m32_n4_k16_tt.fwd.gemm.fp16"


def test_gen_bad_kernel_file_is_one_line(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "32,4,-1,0,0")
    result = invoke("gen", "--kernels", str(kernels), "--out", str(tmp_path / "g"))
    assert result.exit_code == 2
    assert f"{kernels}: row 2, column 'k'" in result.output and "Traceback" not in result.output


def test_gen_unwritable_out(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = invoke("gen", "--suite", "inference-device", "--out", str(blocker))
    assert result.exit_code == 2
    assert "cannot write graphs to" in result.output and "--out" in result.output
