"""`dbench run` refuses bad input before anything is written: each case is a command line, its exit
code and a phrase its one-line message must contain; no traceback, no run log, input files unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.gen.manifest import write_manifest
from tests.helpers import write_csv

runner = CliRunner()

CASES = [
    # numeric ranges
    (["--timeout", "0"], 2, "--timeout 0 must be a positive number of seconds"),
    (["--timeout", "-5"], 2, "--timeout -5 must be a positive"),
    (["--threads", "100000"], 2, "--threads 100000 is out of range; use 1 to"),
    (["--threads", "-1"], 2, "--threads -1 is out of range"),
    (["--runtime", "openvino", "--threads", "-1"], 2, "--threads -1 is out of range"),
    (["--min-time", "-1"], 2, "--min-time -1 must be a positive"),
    (["--min-time", "1", "--max-time", "0.5"], 2, "--max-time 0.5 is below --min-time 1"),
    (["--warmup", "-1"], 2, "--warmup -1 must be 0 or more"),
    (["--profile-runs", "-3"], 2, "--profile-runs -3 must be 0"),
    (["--memory-limit", "0"], 2, "--memory-limit 0 must be a positive number of GiB"),
    (["--memory-limit", "-1"], 2, "--memory-limit -1 must be a positive"),
    (["--rounds", "0"], 2, "--rounds 0 is out of range; use 1 to 100"),
    (["--iterations", "0"], 2, "--iterations 0 must be 1 to 10,000,000 calls per graph"),
    (["--warmup-calls", "-1"], 2, "--warmup-calls -1 must be 0 to 10,000,000"),
    (["--percentiles", "50,abc"], 2, "--percentiles '50,abc': 'abc' is not a number"),
    (["--percentiles", "50,101"], 2, "--percentiles 50,101 must be 1 to 20 numbers from 0 to 100"),
    (["--percentiles", "nan"], 2, "--percentiles nan must be 1 to 20 numbers"),
    # variants
    (
        ["--runtime", "ort-cpu,ort-cpu,ort-cpu,ort-cpu"],
        2,
        "--runtime names ort-cpu 4 times; name a runtime once, or up to 3 times for an A/A run",
    ),
    (["--runtime", "ort-cpu,"], 2, "names no runtime between its commas"),
    (["--runtime", "ort-cpu,tvm"], 2, "unknown runtime 'tvm'"),
    (["--threads", "1,1"], 2, "--threads names 1 twice"),
    (["--threads", "1,x"], 2, "--threads '1,x': 'x' is not a whole number"),
    (["--threads", "1,0"], 2, "--threads 0 is out of range"),
    (["--resolve", "5"], 2, "--resolve '5' is not a change; write a percentage or a fraction"),
    (["--resolve", "0%"], 2, "--resolve 0 is out of range; give a change from 0.1% to 100%"),
    (["--resolve", "5%", "--quick"], 2, "which --quick does not allow"),
    (["--resolve", "5%", "--iterations", "10"], 2, "which --iterations does not allow"),
    (["--resolve", "5%", "--rounds", "2"], 2, "--rounds 2 is below the 3 rounds --resolve gives every graph"),
    # enumerations
    (["--weights", "maybe"], 2, "unknown weights mode 'maybe'; valid: auto, const, input"),
    (["--gemm-form", "mm"], 2, "unknown gemm form 'mm'; valid: gemm, matmul"),
    (["--graph-opt", "max"], 2, "unknown graph optimisation level 'max'; valid: disable, basic"),
    (["--option", "NOEQUALS"], 2, "is not KEY=VALUE"),
    # empty selections
    (["--kernels", "{K}", "--id", "nomatch_*"], 2, "no kernel matches --suite all --id 'nomatch_*'"),
    (["--kernels", "{K}", "--id", "[gemm"], 2, "no kernel matches"),
    (["--kernels", "{K}", "--app", "NoSuchApp"], 2, "no kernel matches --suite all --app NoSuchApp"),
    (["--ops", ""], 2, "'--ops' / '-o': is empty"),
    (["--kernels", "{K}", "--suite", "train"], 2, "no kernel matches --suite train"),
    (["--kernels", "{H}"], 2, "holds no kernel rows"),
    (["--suite", "user"], 2, "--suite user selects the rows of --kernels"),
    (["--id", "nomatch_*"], 2, "no kernel matches --suite inference --id 'nomatch_*' in the DeepBench catalog"),
    (["--graphs", "{G}"], 2, "lists no graphs"),
    # conflicting options
    (
        ["--kernels", "{K}", "--graphs", "{G}", "--precision", "bf16"],
        2,
        "--graphs runs the folder's graphs as generated, so --kernels, --precision",
    ),
    (["--graphs", "{G}", "--gemm-form", "matmul"], 2, "so --gemm-form cannot apply"),
    (
        ["--resume", "run-x", "--runtime", "openvino", "--suite", "train"],
        2,
        "--resume takes the selection, runtime and timing from the run; drop --suite, --runtime",
    ),
    (["--resume", "run-x", "--min-time", "0.3"], 2, "drop --min-time"),
    # options a runtime does not honour, or values it would refuse for every graph
    (
        ["--option", "NOPE=1"],
        2,
        "--option NOPE is not a CPUExecutionProvider option; known: qdq_matmulnbits_accuracy_level, use_arena",
    ),
    (["--device", "GPU7"], 2, "--device is not supported by runtime ort-cpu"),
    (["--runtime", "openvino", "--option", "NOPE=1"], 2, "--option NOPE is not an OpenVINO property"),
    (
        ["--runtime", "openvino", "--option", "NUM_STREAMS=banana"],
        2,
        "--option NUM_STREAMS=banana is not valid; use AUTO or NUMA or a non-negative integer",
    ),
    (["--runtime", "openvino", "--graph-opt", "basic"], 2, "--graph-opt is not supported by runtime openvino"),
    (["--runtime", "openvino", "--device", "GPU7"], 2, "--device 'GPU7' is not an OpenVINO device name"),
    (["--runtime", "tvm"], 2, "unknown runtime 'tvm'; known runtimes: ort-cpu"),
]


def _command(args: list[str], tmp_path: Path) -> list[str]:
    """The command line with {K} a one-kernel CSV, {H} a header-only CSV, {G} a folder whose manifest lists
    no graphs."""
    folder = tmp_path / "g"
    folder.mkdir()
    write_manifest(folder, [])
    files = {
        "{K}": write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0"),
        "{H}": write_csv(tmp_path / "h.csv", "m,n,k,a_t,b_t"),
        "{G}": folder,
    }
    return ["run", "--out", str(tmp_path / "res"), *(str(files.get(a, a)) for a in args)]


@pytest.mark.parametrize("args,code,phrase", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_run_input_is_one_line_before_anything_is_written(args, code, phrase, tmp_path):
    command = _command(args, tmp_path)
    inputs = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    result = runner.invoke(app, command)
    assert result.exit_code == code, result.output
    assert phrase in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    assert not list(tmp_path.glob("res/*/*.jsonl")), "no run log for input that cannot run"
    assert {p: p.read_bytes() for p in inputs} == inputs, "input files are left as they were"


def test_gen_refuses_an_unknown_gemm_form_before_writing(tmp_path):
    result = runner.invoke(app, ["gen", "--gemm-form", "mm", "--out", str(tmp_path / "g")])
    assert result.exit_code == 2 and "unknown gemm form 'mm'; valid: gemm, matmul" in result.output
    assert not (tmp_path / "g").exists(), "no folder is left for input that cannot run"


GEN_CASES = [
    (["--id", "nomatch_*"], 2, "no kernel matches --suite inference --id 'nomatch_*' in the DeepBench catalog"),
    (["--ops", ""], 2, "'--ops' / '-o': is empty"),
    (["--suite", "nosuch"], 2, "unknown suite 'nosuch'"),
    (["--precision", "fp8"], 2, "unknown precision 'fp8'"),
    (["--rnn-form", "unrolled"], 2, "unknown rnn form 'unrolled'"),
]


@pytest.mark.parametrize("args,code,phrase", GEN_CASES, ids=[" ".join(c[0]) for c in GEN_CASES])
def test_bad_gen_input_is_one_line_and_writes_no_folder(args, code, phrase, tmp_path):
    result = runner.invoke(app, ["gen", "--out", str(tmp_path / "g"), *args])
    assert result.exit_code == code, result.output
    assert phrase in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output and not (tmp_path / "g").exists()


@pytest.mark.parametrize(
    "field,value,phrase",
    [
        ("flops", "many", "flops must be a non-negative integer, not 'many'"),
        (
            "inputs",
            [{"name": "A", "shape": "abc", "dtype": "float32", "role": "weight"}],
            "input A: shape must be a list",
        ),
        ("suites", "inference", "suites must be a list of text"),
        ("precision", 32, "precision must be text"),
    ],
)
def test_manifest_field_of_the_wrong_type_is_one_line_before_any_log(field, value, phrase, tmp_path):
    """A hand-edited manifest used to reach the worker and end in a traceback after the log existed."""
    import json

    assert (
        runner.invoke(
            app, ["gen", "--suite", "inference-device", "--ops", "gemm", "--out", str(tmp_path / "g")]
        ).exit_code
        == 0
    )
    manifest = tmp_path / "g" / "inference-device" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["graphs"][0][field] = value
    manifest.write_text(json.dumps(data))
    result = runner.invoke(app, ["run", "--graphs", str(manifest.parent), "--out", str(tmp_path / "res")])
    assert result.exit_code == 2 and phrase in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output and not (tmp_path / "res").exists()


def test_missing_manifest_hint_names_the_suite_the_folder_stands_for(tmp_path):
    from dbench.errors import DbenchError
    from dbench.gen.manifest import read_manifest

    with pytest.raises(DbenchError, match=rf"dbench gen --suite train --out {tmp_path}`"):
        read_manifest(tmp_path / "train")
