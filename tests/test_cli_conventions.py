"""What every dbench command shares: a bad option is one line and exit 2, as every other bad input;
help shows readable placeholders (SECONDS, RUNTIME), never a Python type; `--np` has an upper bound."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.foreign_flags import foreign_flags, foreign_hint
from tests.processes import run_tree

runner = CliRunner()
COMMANDS = ["list", "gen", "export", "runtimes", "run", "compare", "report", "peak", "env", "allreduce"]
PYTHON_TYPE = re.compile(r"<(bool|str|int|float|path|Path|list\[[^>]*\]|tuple\[[^>]*\])>")


def one_line(result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


@pytest.mark.parametrize(
    "args,needle",
    [
        (["run", "--timeout", "abc"], "'--timeout'"),
        (["run", "--no-such-option"], "No such option: --no-such-option"),
        (["rnu"], "Did you mean 'run'"),
        (["compare"], "Missing argument 'RUN...'"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2(args, needle):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    line = one_line(result)
    assert needle in line and line.endswith("--help"), line


@pytest.mark.parametrize(
    "args,hint",
    [
        (["run", "-niter", "100"], "benchmark_app's -niter is --iterations N"),  # click reads it as -n "iter"
        (["run", "-hint", "throughput"], "benchmark_app's -hint is --streams N for throughput"),
        (["run", "--fp16"], "trtexec's --fp16 is --precision fp16"),
        (["run", "--onnx=model.onnx"], "trtexec's --onnx is --model FILE.onnx (with --runtime tensorrt)"),
        (["peak", "-e", "cuda"], "onnxruntime_perf_test's -e is --runtime ort-cpu|ort-cuda|ort-trt"),
    ],
)
def test_another_tools_flag_is_translated_in_the_same_line(args, hint):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    line = one_line(result)
    assert f"coming from another tool? {hint}" in line and line.endswith("(docs/cli.md)"), line


def test_a_flag_the_command_has_is_never_translated():
    """-b is both benchmark_app's batch and dbench's: no hint; nor for an option of no other tool."""
    assert foreign_hint(["-m", "x.onnx"], own={"-m"}) is None
    assert foreign_hint(["--no-such-option"], own=set()) is None
    result = runner.invoke(app, ["run", "--batch", "x", "--no-such-option"])
    assert "coming from another tool" not in result.output


def test_the_translations_are_the_docs_table_and_name_real_options():
    """Every translated flag is in docs/cli.md's table of its tool, and every dbench option it names exists."""
    docs = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    options = {
        name
        for command in ("run", "compare")
        for name in re.findall(
            r"(--[a-z][a-z0-9-]*)", runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
        )
    }
    for flag in foreign_flags():
        (section,) = re.findall(rf"^### [^\n]*\b{flag.tool}\n(.*?)(?=^#|\Z)", docs, flags=re.M | re.S)
        assert f"| `{flag.flag}" in section or f", `{flag.flag}" in section, flag
        named = set(re.findall(r"(--[a-z][a-z0-9-]*)", flag.dbench))
        assert (named or flag.dbench.startswith("nothing: ")) and named <= options, (flag, named - options)


@pytest.mark.parametrize(
    "args,line",
    [
        (
            ["run", "--runtime", "ort-cpu", "--runtime", "openvino"],
            "--runtime was given twice: give it once (several values are comma-separated: --runtime A,B)",
        ),
        (["run", "-t", "1", "--threads=2"], "--threads was given twice (as -t and --threads): give it once"),
        (["compare", "a", "--format", "csv", "--format", "json"], "--format was given twice: give it once; see "),
    ],
)
def test_a_single_valued_option_given_twice_is_refused(args, line, tmp_path):
    """click would keep the last value without a word: `--runtime ort-cpu --runtime openvino` timed openvino alone."""
    result = runner.invoke(app, [*args, "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert line in one_line(result)
    assert not list(tmp_path.iterdir()), "nothing is written"


def test_options_that_take_several_values_may_repeat(tmp_path):
    """--ops, --id and --option accumulate; a value after `--` is not an option."""
    result = runner.invoke(app, ["list", "--ops", "gemm", "--ops", "conv", "--id", "gemm_m35_*", "--id", "conv_w7_*"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(
        app, ["run", "--id", "nomatch", "--option", "a=1", "--option", "b=2", "--out", str(tmp_path)]
    )
    assert "given twice" not in result.output


def test_a_bad_option_is_one_line_from_the_installed_command_too():
    done = subprocess.run(
        [sys.executable, "-m", "dbench", "run", "--min-time", "soon"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ") and "'--min-time'" in done.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_placeholders_people_read(command):
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert not PYTHON_TYPE.findall(result.output), result.output
    flags = [line for line in result.output.splitlines() if re.search(r"^│[\s*]*--help\b", line)]
    assert flags and all(re.search(r"--help\s+Show this message", line) for line in flags), flags


def test_run_help_names_the_value_each_option_takes():
    text = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    for option, shown in [
        ("--min-time", "SECONDS"),
        ("--runtime", "RUNTIME[,RUNTIME]"),
        ("--memory-limit", "GiB"),
        ("--option", "KEY=VALUE"),
        ("--resume", "RUN-ID"),
    ]:
        assert re.search(rf"{option}\s+(-\w\s+)?{re.escape(shown)}\s", text), (option, shown)
    assert re.search(r"--quick\s+Smoke run", text)  # a flag: no placeholder between it and its help


def test_allreduce_refuses_more_ranks_than_the_host_can_hold(tmp_path):
    """In a process tree with a deadline: accepted, 1000 ranks on this host would never finish."""
    command = [sys.executable, "-m", "dbench", "allreduce", "--np", "1000", "--sizes", "8", "--out", str(tmp_path)]
    try:
        done = run_tree(command, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("--np 1000 was accepted: mpiexec started 1000 ranks (killed after 60 s)")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "--np 1000 puts more than 4 ranks on each" in done.stderr
    assert not list(tmp_path.iterdir())


def _widest(env_columns: str | None, *args: str) -> int:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if env_columns:
        env["COLUMNS"] = env_columns
    done = subprocess.run([sys.executable, "-m", "dbench", *args], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return max(len(line) for line in done.stdout.splitlines())


def test_piped_output_follows_columns_and_is_not_200_wide():
    """Off a terminal (a pipe here): COLUMNS is obeyed, and without it tables stop at PIPE_WIDTH."""
    from dbench.terminal import PIPE_WIDTH

    assert _widest("80", "runtimes") <= 80
    assert _widest("180", "runtimes") > PIPE_WIDTH  # the reasons fill what they are given
    assert _widest(None, "runtimes") <= PIPE_WIDTH < 200
    assert (
        _widest(None, "list", "--suite", "inference-device", "--ops", "gemm") < PIPE_WIDTH
    )  # natural width, no padding


BLOCK = """import importlib.abc, sys
BLOCKED = sys.argv[1].split(',')
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in BLOCKED:
            raise ModuleNotFoundError(f'No module named {name!r}', name=name)
sys.meta_path.insert(0, Block())
from dbench.cli import main
sys.argv = ['dbench', *sys.argv[2:]]
main()
"""


def test_report_without_its_extra_is_one_line_before_any_work(tmp_path):
    """The README's first command installs no matplotlib: report names the extra, exit 2, writes nothing."""
    results = tmp_path / "results"
    (results / "m").mkdir(parents=True)
    (results / "m" / "run-x.jsonl").write_text('{"type": "run", "schema_version": 2, "run_id": "run-x"}\n')
    for blocked in ("matplotlib,openpyxl", "pandas"):
        done = subprocess.run(
            [sys.executable, "-c", BLOCK, blocked, "report", str(results), "--out", str(tmp_path / "rep")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
        assert done.stderr.count("\n") == 1 and "pip install 'dbench[report]'" in done.stderr, done.stderr
        assert all(name in done.stderr for name in blocked.split(","))
        assert not (tmp_path / "rep").exists()
