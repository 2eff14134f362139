"""Every option and argument of every command, found in the typer app (so an option added tomorrow is
walked too), given the values a new user's typo makes: nan, inf, negative, empty, huge and the wrong type
for numbers; empty and huge for text and paths. None is a measurement, so each must be refused with exit
2 and one `error:` line naming the option, no traceback, nothing written. Text such as `nan` or `-1` can
be a real name (a folder called nan), so it may also be accepted, but never with a traceback.

Each command runs with a cheap valid base (a tiny kernel file, --quick, two tiny run logs...), in a
folder of its own that is the working directory, so an accepted value does quick real work there."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from dbench.cli import app
from tests.helpers import write_csv
from tests.model_builders import mlp, save

runner = CliRunner()
NUMBER_VALUES = {"nan": "nan", "inf": "inf", "negative": "-1", "empty": "", "huge": "1e300", "wrong type": "soon"}
INT_HUGE = "9" * 30
TEXT_VALUES = {"empty": "", "huge": "x" * 5000}
NAME_LIKE = {"nan": "nan", "negative": "-1"}
"""Text that can be a real name: accepted or refused, never a traceback."""
SLOW_WHEN_ACCEPTED = {
    ("peak", "--out"): "a folder called nan or -1 is a real folder: peak would measure this "
    "machine's ceilings for half a minute each",
    ("calibrate", "--out"): "a folder called nan or -1 is a real folder: calibrate would measure for its "
    "20 s budget each",
}
"""Name-like values that are rightly accepted and would then do minutes of real work: not run."""


@dataclass(frozen=True)
class Case:
    command: str
    option: str  # the option's long name, or the argument's metavar
    names: tuple[str, ...]  # every name it answers to (-b and --minbytes)
    kind: str  # the value's kind (a key of NUMBER_VALUES, TEXT_VALUES or NAME_LIKE)
    value: str
    must_refuse: bool


def _types(param) -> tuple:
    """The Python types a parameter takes (typer 0.2x keeps its annotation; older typer, click's type name)."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None:
        return (descriptor.annotation, *get_args(descriptor.annotation))
    return {"integer": (int,), "float": (float,)}.get(getattr(param.type, "name", ""), (str,))


def _is_number(param) -> bool:
    return any(t in (int, float) for t in _types(param))


def _is_int(param) -> bool:
    return int in _types(param)


def _name(param) -> str:
    longs = [o for o in param.opts if o.startswith("--")]
    return longs[0] if longs else (param.metavar or param.name)


def _names(param) -> tuple[str, ...]:
    return tuple(param.opts) if param.param_type_name == "option" else (_name(param),)


def catalogue() -> list[Case]:
    """Every value-taking parameter of every command (flags and hidden options left out) x its bad values."""
    cases = []
    for command_name, command in typer.main.get_command(app).commands.items():
        for param in command.params:
            if getattr(param, "is_flag", False) or getattr(param, "hidden", False):
                continue
            if _is_number(param):
                values = {**NUMBER_VALUES, **({"huge": INT_HUGE} if _is_int(param) else {})}
                cases += [
                    Case(command_name, _name(param), _names(param), kind, value, True) for kind, value in values.items()
                ]
            else:
                cases += [
                    Case(command_name, _name(param), _names(param), kind, value, True)
                    for kind, value in TEXT_VALUES.items()
                ]
                cases += [
                    Case(command_name, _name(param), _names(param), kind, value, False)
                    for kind, value in NAME_LIKE.items()
                ]
    return cases


def _param(case: Case):
    reason = SLOW_WHEN_ACCEPTED.get((case.command, case.option))
    marks = [pytest.mark.skip(reason=reason)] if reason and not case.must_refuse else []
    return pytest.param(case, id=f"{case.command} {case.option} {case.kind}", marks=marks)


CASES = catalogue()


def test_the_catalogue_covers_every_command_with_options():
    commands = {case.command for case in CASES}
    assert {"list", "gen", "export", "run", "compare", "report", "peak", "allreduce", "predict"} <= commands
    assert len(CASES) > 300


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """Files the bases name: a one-GEMM kernel file, a tiny model and two tiny finished runs."""
    folder = tmp_path_factory.mktemp("inputs")
    kernels = write_csv(folder / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0")
    save(mlp(np.random.default_rng(0)), folder, "mlp")
    for _ in range(2):
        result = runner.invoke(
            app,
            [
                "run",
                "--kernels",
                str(kernels),
                "--quick",
                "--min-time",
                "0.01",
                "--profile-runs",
                "0",
                "--threads",
                "1",
                "--out",
                str(folder / "results"),
            ],
        )
        assert result.exit_code == 0, result.output
    return folder


def base(command: str, inputs: Path) -> tuple[list[str], dict[str, str | None]]:
    """A cheap valid call: its positional arguments and its options (None: a flag)."""
    kernels = str(inputs / "k.csv")
    runs = sorted(p.stem for p in (inputs / "results").glob("*/*.jsonl"))
    return {
        "list": ([], {"--kernels": kernels}),
        "gen": ([], {"--kernels": kernels, "--out": "graphs"}),
        "export": ([], {"--kernels": kernels, "--out": "b.tar.gz"}),
        "run": (
            [],
            {
                "--kernels": kernels,
                "--quick": None,
                "--min-time": "0.01",
                "--profile-runs": "0",
                "--threads": "1",
                "--out": "results",
            },
        ),
        "compare": (runs, {"--out": str(inputs / "results")}),
        "predict": (
            [str(inputs / "mlp.onnx")],
            {"--dim": "batch=1", "--quick": None, "--min-time": "0.01", "--threads": "1", "--out": "results"},
        ),
        "report": ([str(inputs / "results")], {"--out": "report"}),
        "peak": ([], {"--runtime": "ort-cpu", "--out": "results"}),
        "calibrate": ([], {"--budget": "20s", "--id": "gemm_m64_n1_k1216_nn", "--out": "results"}),
        "allreduce": ([], {"--np": "2", "--sizes": "8", "--iters": "2", "--impl": "mpi", "--out": "results"}),
        "fleet": (["tcp://127.0.0.1:9"], {}),
    }.get(command, ([], {}))


def argv(case: Case, inputs: Path) -> list[str]:
    arguments, options = base(case.command, inputs)
    if not case.option.startswith("-"):  # an argument: the bad value replaces its base value
        command = typer.main.get_command(app).commands[case.command]
        names = [p.metavar or p.name for p in command.params if p.param_type_name == "argument"]
        arguments = list(arguments)
        arguments[names.index(case.option)] = case.value
    else:
        options = {**options, case.option: case.value}
    flat = [item for name, value in options.items() for item in ([name] if value is None else [name, value])]
    return [case.command, *flat, "--", *arguments] if arguments else [case.command, *flat]


@pytest.mark.slow
@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_a_bad_value_is_refused_in_one_line(case, inputs, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    result = runner.invoke(app, argv(case, inputs), env={"COLUMNS": "200"})
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{case.command} {case.option} {case.value[:20]!r} raised {result.exception!r}:\n{result.output[-3000:]}"
    )
    if result.exit_code == 0 and not case.must_refuse:
        return  # a real name (a folder called nan), accepted
    assert result.exit_code == 2, (
        f"{case.command} {case.option} {case.value[:20]!r} exited {result.exit_code}:\n{result.output[-3000:]}"
    )
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error: "), result.output[-3000:]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, result.output[-3000:]
    named = any(name in errors[0] for name in case.names) or (case.value and case.value[:40] in errors[0])
    assert named, f"the error names neither {case.option} nor its value: {errors[0][:300]}"
    if case.must_refuse:
        assert list(os.scandir(work)) == [], f"a refused {case.option} wrote {os.listdir(work)}"
