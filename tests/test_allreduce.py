"""All-reduce module without MPI: sizes, options, the check pattern and exact checker, the ring's chunks,
the memory estimate, the result row and report, and the launcher's pure parts."""

from __future__ import annotations

import csv
import io
import json
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from dbench.allreduce import data
from dbench.allreduce.data import Verdict, check
from dbench.allreduce.devices import Host
from dbench.allreduce.fits import check_fits
from dbench.allreduce.implementations import Implementation, chunk_bounds
from dbench.allreduce.launch import find_mpiexec, flavour, launcher_flags, verdict
from dbench.allreduce.options import (
    AUTO_MAX,
    AUTO_MIN,
    Arguments,
    deepbench_sizes,
    parse_count,
    resolve,
    size_list,
    sweep,
)
from dbench.allreduce.rank import RankStatus
from dbench.allreduce.results import Outcome, report, summarize
from dbench.errors import DbenchError, UsageError
from dbench.store.log import RunLog
from tests.processes import run_tree

# ---------------------------------------------------------------- sizes and options


def test_deepbench_sizes_are_the_shipped_list_with_its_repeats():
    text = resources.files("dbench").joinpath("catalog", "data", "allreduce.csv").read_text()
    rows = list(csv.DictReader(text.splitlines()))
    sizes = deepbench_sizes()
    assert [s.elements for s in sizes] == [int(r["size_floats"]) for r in rows]
    assert [s.elements * 4 for s in sizes] == [int(r["size_bytes"]) for r in rows]
    assert [s.upstream_repeats for s in sizes] == [int(r["num_repeats"]) for r in rows]
    assert len(sizes) == 7 and 4096 * 4096 + 1 in [s.elements for s in sizes]  # NOTES.md: the header's odd size


def test_counts_take_binary_suffixes_and_lists_keep_order():
    assert [parse_count(t, "x") for t in ("1000", "4K", "16m", "1G")] == [1000, 4096, 16 * 2**20, 2**30]
    assert [s.elements for s in size_list("5, 4K,5,1000003")] == [5, 4096, 1000003]
    for bad in ("0", "-3", "1.5M", "4X", ""):
        with pytest.raises(UsageError):
            parse_count(bad, "--sizes")


def test_sweep_follows_nccl_tests_begin_end_factor_in_bytes():
    assert [s.elements for s in sweep("8", "64", 2, 4)] == [2, 4, 8, 16]
    assert [s.elements for s in sweep("1K", "1M", 4, 8)] == [2**10 * 4**k // 8 for k in range(6)]
    with pytest.raises(UsageError, match="larger"):
        sweep("1M", "1K", 2, 4)
    with pytest.raises(UsageError, match="one element"):
        sweep("2", "8", 2, 4)
    with pytest.raises(UsageError, match="stepfactor"):
        sweep("8", "64", 1, 4)


@pytest.mark.parametrize(
    "args, message",
    [
        (Arguments(dtype="float16"), "--dtype"),
        (Arguments(impl="mpi,foo"), "--impl"),
        (Arguments(impl=","), "--impl is empty"),
        (Arguments(device="tpu"), "--device"),
        (Arguments(sizes="10", begin="8"), "not both"),
        (Arguments(sizes="10", iters="deepbench"), "only for --sizes deepbench"),
        (Arguments(iters="0"), "--iters"),
        (Arguments(warmup=-1), "--warmup"),
    ],
)
def test_bad_options_are_one_line_usage_errors(args, message):
    with pytest.raises(UsageError, match=message):
        resolve(args)


def test_iterations_auto_deepbench_and_fixed():
    auto = resolve(Arguments())
    counts = [auto.iterations(s) for s in auto.sizes]
    assert all(AUTO_MIN <= c <= AUTO_MAX for c in counts) and counts == sorted(counts, reverse=True)
    assert all(auto.warmup_calls(s) >= 2 for s in auto.sizes)
    upstream = resolve(Arguments(iters="deepbench"))
    assert [upstream.iterations(s) for s in upstream.sizes] == [s.upstream_repeats for s in deepbench_sizes()]
    fixed = resolve(Arguments(sizes="7", iters="3", warmup=0))
    assert fixed.iterations(fixed.sizes[0]) == 3 and fixed.warmup_calls(fixed.sizes[0]) == 0
    sweep_opts = resolve(Arguments(begin="8", end="32", dtype="float64"))
    assert [s.elements for s in sweep_opts.sizes] == [1, 2, 4]


# ---------------------------------------------------------------- inputs and the exact check


class LocalSum(Implementation):
    """A reference all-reduce of `ranks` simulated ranks in one process: the true sum of their inputs."""

    name = "local"

    def __init__(self, ranks: int, dtype: str, drop: int | None = None, touch: bool = True) -> None:
        super().__init__(None, Host())
        self.ranks, self.dtype, self.drop, self.touch = ranks, dtype, drop, touch

    def run(self, send, recv) -> None:
        if not self.touch:
            return
        total = np.zeros(recv.size, dtype=np.float64)
        one = np.empty(recv.size, dtype=self.dtype)
        for r in range(self.ranks):
            data.fill(one, data.rank_pattern(r, self.dtype))
            total += one
        recv[...] = total.astype(self.dtype)
        if self.drop is not None:
            recv[self.drop] += 1


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_inputs_are_integers_whose_sum_is_exact(dtype, seed):
    rng = np.random.default_rng(seed)
    ranks, n = int(rng.integers(2, 33)), int(rng.integers(1, 3 * data.PERIOD))
    inputs = np.empty((ranks, n), dtype=dtype)
    for r in range(ranks):
        data.fill(inputs[r], data.rank_pattern(r, dtype))
    assert np.array_equal(inputs, np.round(inputs)) and np.abs(inputs).max() <= data.LIMIT
    assert len({inputs[r].tobytes() for r in range(ranks)}) == ranks  # every rank sends different data
    exact = inputs.astype(np.float64).sum(axis=0)
    result = np.empty(n, dtype=dtype)
    data.fill(result, data.expected_pattern(ranks, dtype))
    assert np.array_equal(result.astype(np.float64), exact)


@pytest.mark.parametrize("in_place", [False, True])
def test_check_counts_wrong_elements_and_hashes(in_place, seed):
    rng = np.random.default_rng(seed)
    ranks, n = int(rng.integers(2, 9)), int(rng.integers(2, 2 * data.PERIOD))
    values, expected = data.rank_pattern(0, "float32"), data.expected_pattern(ranks, "float32")
    send, recv = np.empty(n, np.float32), np.empty(n, np.float32)
    good = check(LocalSum(ranks, "float32"), Host(), send, recv, in_place, values, expected, repeat=True)
    assert good.wrong == 0 and good.repeatable is True
    assert good.digest == data.digest(recv)
    wrong_at = int(rng.integers(0, n))
    bad = check(LocalSum(ranks, "float32", drop=wrong_at), Host(), send, recv, in_place, values, expected, repeat=False)
    assert bad.wrong == 1 and bad.digest != good.digest and bad.repeatable is None


def test_check_catches_an_output_left_untouched():
    n, ranks = 1000, 2
    values, expected = data.rank_pattern(0, "int32"), data.expected_pattern(ranks, "int32")
    send, recv = np.empty(n, np.int32), np.empty(n, np.int32)
    data.fill(recv, expected)  # a correct result from an earlier call must not let a lazy one pass
    lazy = check(LocalSum(ranks, "int32", touch=False), Host(), send, recv, False, values, expected, repeat=False)
    assert lazy.wrong == n


@pytest.mark.parametrize("elements, ranks", [(16777217, 3), (1000003, 2), (5, 3), (1, 3), (2, 2), (12, 4)])
def test_ring_chunks_cover_the_message_once_and_differ_by_at_most_one(elements, ranks):
    bounds = chunk_bounds(elements, ranks)
    assert len(bounds) == ranks and bounds[0][0] == 0 and bounds[-1][1] == elements
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    lengths = [b - a for a, b in bounds]
    assert max(lengths) - min(lengths) <= 1 and min(lengths) >= 0


# ---------------------------------------------------------------- memory, rows, report


def test_a_size_that_cannot_fit_is_refused_before_allocation():
    import psutil

    class Fake(Implementation):
        name = "fake"

        def run(self, send, recv) -> None:  # never called: the estimate comes first
            raise AssertionError

    elements = psutil.virtual_memory().total // 4  # one float32 buffer as large as the whole memory
    with pytest.raises(DbenchError, match="GB of host memory.*choose smaller --sizes"):
        check_fits(elements, 4, [Fake(None, Host())], {"cpu": Host()}, local_ranks=2)
    check_fits(1000, 4, [Fake(None, Host())], {"cpu": Host()}, local_ranks=2)


def _verdict(wrong=0, digest="d", repeatable=None):
    return Verdict(wrong, digest, repeatable)


def test_summary_bandwidths_and_status():
    outcomes = [Outcome(0.002, _verdict()), Outcome(0.004, _verdict()), Outcome(0.003, _verdict())]
    r = summarize(
        outcomes,
        elements=3000,
        itemsize=4,
        dtype="float32",
        implementation="mpi",
        device="cpu",
        in_place=False,
        iters=5,
        warmup=2,
    )
    assert (r.time_min_us, r.time_max_us) == pytest.approx((2000, 4000)) and r.time_mean_us == pytest.approx(3000)
    assert r.algbw_gbps == pytest.approx(12000 / 0.003 / 1e9)
    assert r.busbw_gbps == pytest.approx(r.algbw_gbps * 4 / 3)
    assert r.deepbench_gbps == pytest.approx(r.algbw_gbps * 3)
    assert r.status == "ok" and r.hash_agree
    kinds = {
        "wrong": [Outcome(1, _verdict(wrong=2)), Outcome(1, _verdict())],
        "ranks differ": [Outcome(1, _verdict(digest="a")), Outcome(1, _verdict(digest="b"))],
        "not repeatable": [Outcome(1, _verdict(repeatable=False)), Outcome(1, _verdict(repeatable=True))],
    }
    for outcomes in kinds.values():
        r = summarize(
            outcomes,
            elements=10,
            itemsize=4,
            dtype="float32",
            implementation="ring",
            device="cpu",
            in_place=True,
            iters=1,
            warmup=0,
        )
        assert r.status == "mismatch"


def test_report_saves_prints_and_fails_on_a_wrong_result(tmp_path, capsys):
    good = summarize(
        [Outcome(1e-3, _verdict()), Outcome(1e-3, _verdict())],
        elements=100,
        itemsize=4,
        dtype="float32",
        implementation="mpi",
        device="cpu",
        in_place=False,
        iters=1,
        warmup=0,
    )
    bad = summarize(
        [Outcome(2e-3, _verdict(wrong=3)), Outcome(2e-3, _verdict())],
        elements=100,
        itemsize=4,
        dtype="float32",
        implementation="ring",
        device="cpu",
        in_place=True,
        iters=1,
        warmup=0,
    )
    log = RunLog.create(tmp_path, "allreduce-test", {"kind": "allreduce"})
    for r in (good, bad):
        log.append(r.row())
    message = report(log, [good, bad], "MPICH 5.0", crowded=True)
    assert message and "1 of 2" in message and "3 wrong" in message
    printed = capsys.readouterr().out
    assert "WRONG" in printed and "best of all implementations" in printed and "no exact result" not in printed
    assert "more ranks than cores" in printed
    assert log.path.with_suffix(".parquet").exists() and log.path.with_suffix(".csv").exists()
    assert report(log, [good], "MPICH 5.0") is None
    assert report(log, [bad], "MPICH 5.0") and "no exact result" in capsys.readouterr().out


def test_the_table_puts_out_of_place_and_in_place_side_by_side():
    """As nccl-tests prints them: one line per size and implementation, each placement's time, bandwidths and
    #wrong in its own columns; the check names the placement that failed."""
    from rich.console import Console

    from dbench.allreduce.results import results_table

    def row(impl, elements, in_place, seconds, wrong=0):
        return summarize(
            [Outcome(seconds, _verdict(wrong=wrong)), Outcome(seconds, _verdict())],
            elements=elements,
            itemsize=4,
            dtype="float32",
            implementation=impl,
            device="cpu",
            in_place=in_place,
            iters=3,
            warmup=1,
        )

    results = [
        row("mpi", 1000, False, 1e-3),
        row("mpi", 1000, True, 2e-3, wrong=1),
        row("ring", 1000, False, 3e-3),
        row("ring", 1000, True, 4e-3),
    ]
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(results_table(results, "MPICH 5.0"))
    lines = console.export_text().splitlines()
    body = [line.split() for line in lines if line.split() and line.split()[0] == "1000"]
    # elements, bytes (2 words), impl, iters, then out of place: time, algbw, busbw, #wrong; then in place
    assert [cells[3] for cells in body] == ["mpi", "ring"]  # one line per size and implementation
    assert body[0][5:7] == ["1000.0", f"{4000 / 1e-3 / 1e9:.3g}"] and body[0][9] == "2000.0"
    assert body[1][5] == "3000.0" and body[1][9] == "4000.0" and body[1][-1] == "exact"
    assert "in place: WRONG" in " ".join(lines) and "out of place: WRONG" not in " ".join(lines)
    header = " ".join(lines[:4])
    assert "out of place" in header and "in place" in header and "cpu buffers" in header
    assert max(len(line) for line in lines) <= 120


# ---------------------------------------------------------------- launcher pieces


def test_open_mpi_gets_oversubscribe_and_root_flags_mpich_none():
    assert launcher_flags("openmpi", as_root=True) == ["--oversubscribe", "--allow-run-as-root"]
    assert launcher_flags("openmpi", as_root=False) == ["--oversubscribe"]
    assert launcher_flags("mpich", as_root=True) == []


def test_this_environment_has_the_mpich_wheel_mpiexec():
    mpiexec = find_mpiexec()
    assert mpiexec == Path(sys.executable).parent / "mpiexec"  # the `mpi` extra's wheel, beside this Python
    assert flavour(mpiexec) == "mpich"


def test_a_missing_mpiexec_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("DBENCH_MPIEXEC", str(tmp_path / "no-such-mpiexec"))
    with pytest.raises(DbenchError, match=r"pip install 'dbench\[mpi\]'"):
        find_mpiexec()


def test_verdict_names_the_failed_rank_and_passes_exit_codes():
    done = {r: RankStatus(r, 100 + r, "h", "done", 0) for r in range(3)}
    assert verdict(done, 3, 0, "") == 0
    assert verdict({**done, 1: RankStatus(1, 101, "h", "done", 1)}, 3, 0, "") == 1
    failed = {**done, 2: RankStatus(2, 102, "h", "failed", 1, "RuntimeError: boom")}
    with pytest.raises(DbenchError, match="rank 2 .*failed: RuntimeError: boom"):
        verdict(failed, 3, 1, "")
    running = {r: RankStatus(r, 100 + r, "h", "running") for r in range(3)}
    hydra = "=   PID 101 RUNNING AT h\n=   EXIT CODE: 9\n"
    with pytest.raises(DbenchError, match="rank 1 .*exit code 9"):
        verdict(running, 3, 9, hydra)
    with pytest.raises(DbenchError, match="ranks 0, 1, 2 did not finish"):
        verdict(running, 3, 9, "")


def test_the_module_imports_neither_onnx_nor_mpi4py_nor_a_runtime():
    """Every module of dbench.allreduce (but __main__, which runs the command) imported in a fresh interpreter."""
    code = (
        "import importlib, pkgutil, sys, dbench.allreduce as package; "
        "names = [m.name for m in pkgutil.iter_modules(package.__path__, 'dbench.allreduce.') if m.name != "
        "'dbench.allreduce.__main__']; "
        "[importlib.import_module(n) for n in names]; "
        "bad = [m for m in ('onnx', 'mpi4py', 'onnxruntime', 'openvino', 'tensorrt', 'cupy', 'dbench.gen') "
        "if m in sys.modules]; print(len(names), bad); sys.exit(1 if bad or len(names) < 8 else 0)"
    )
    done = run_tree([sys.executable, "-c", code], 60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_command_registers_on_a_typer_app(tmp_path):
    import typer
    from typer.testing import CliRunner

    from dbench.allreduce.cli import command

    app = typer.Typer()
    app.callback()(lambda: None)
    app.command("allreduce")(command)
    runner = CliRunner()
    helped = runner.invoke(app, ["allreduce", "--help"])
    assert helped.exit_code == 0 and "--np" in helped.output and "--status-dir" not in helped.output
    assert "Exit status: 0 every result is exact; 3 any result is a mismatch" in " ".join(helped.output.split())
    one = runner.invoke(app, ["allreduce", "--np", "1"])
    assert one.exit_code == 2 and "all-reduce needs at least two ranks" in one.output


def test_status_and_launch_records_round_trip(tmp_path):
    from dbench.allreduce.rank import LAUNCH_FILE, read_launch, read_statuses, write_status

    write_status(tmp_path, 3, "done", 1)
    (tmp_path / LAUNCH_FILE).write_text(json.dumps({"command": ["dbench", "allreduce"]}))
    status = read_statuses(tmp_path)[3]
    assert (status.state, status.code, status.rank) == ("done", 1, 3)
    assert read_launch(tmp_path)["command"] == ["dbench", "allreduce"] and read_launch(None) == {}
