"""All-reduce under a real mpiexec (the mpich wheel) with 2 and 3 ranks on this machine: exact results at
odd sizes and rank counts, the table, the stored rows, and the failure paths (no hang, the rank named)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dbench.allreduce.launch import find_mpiexec
from tests.processes import run_tree

pytestmark = pytest.mark.slow  # each test starts mpiexec and ranks: seconds, not milliseconds
TIMEOUT = 120  # a hang fails the test instead of blocking the suite
COLUMNS = [
    "elements",
    "bytes",
    "dtype",
    "ranks",
    "implementation",
    "device",
    "in_place",
    "iters",
    "warmup",
    "time_min_us",
    "time_mean_us",
    "time_max_us",
    "algbw_gbps",
    "busbw_gbps",
    "deepbench_gbps",
    "wrong",
    "hash",
    "hash_agree",
    "repeat_identical",
    "status",
]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DBENCH_") and k != "COLUMNS"}
    return {**env, **extra}


def dbench_allreduce(*args: str, **env: str) -> subprocess.CompletedProcess:
    """`dbench allreduce ...` as a user runs it (the same command through python -m dbench.allreduce)."""
    return run_tree([sys.executable, "-m", "dbench.allreduce", *args], TIMEOUT, _env(**env))


def _run_files(out: Path) -> tuple[dict, pd.DataFrame]:
    logs = sorted(out.glob("*/allreduce-*.jsonl"))
    assert len(logs) == 1, logs
    header = json.loads(logs[0].read_text().splitlines()[0])
    for suffix in (".parquet", ".csv"):
        assert logs[0].with_suffix(suffix).exists()
    frame = pd.read_parquet(logs[0].with_suffix(".parquet"))
    assert pd.read_csv(logs[0].with_suffix(".csv")).shape == frame.shape
    rows = [json.loads(line) for line in logs[0].read_text().splitlines()[1:] if '"type": "result"' in line]
    assert len(rows) == len(frame)
    return header, frame


def _assert_exact(frame: pd.DataFrame, sizes: list[int], impls: list[str], ranks: int) -> None:
    assert set(COLUMNS) <= set(frame.columns)
    assert len(frame) == len(sizes) * len(impls) * 2
    assert sorted(frame.elements.unique()) == sorted(sizes)
    assert set(frame.implementation) == set(impls) and set(frame.in_place) == {False, True}
    assert (frame.status == "ok").all() and (frame.wrong == 0).all() and frame.hash_agree.all()
    assert (frame.ranks == ranks).all() and (frame.time_min_us <= frame.time_mean_us).all()
    assert (frame.time_mean_us <= frame.time_max_us).all() and (frame.time_min_us > 0).all()
    # exact sums are the same bytes whatever the algorithm: every implementation and placement agrees
    assert (frame.groupby("elements").hash.nunique() == 1).all()


@pytest.mark.slow
def test_two_ranks_deepbench_odd_size_exact_table_and_rows(tmp_path):
    sizes = [1000, 16777217]  # DeepBench's odd size (4096^2 + 1)
    done = dbench_allreduce(
        "--np", "2", "--sizes", ",".join(map(str, sizes)), "--iters", "2", "--warmup", "1", "--out", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    for text in (
        "all-reduce sum, float32, 2 ranks, MPICH",
        "mean µs",
        "algbw GB/s",
        "busbw GB/s",
        "DeepBench GB/s",
        "#wrong",
        "best of all implementations",
        "16777217",
        "exact",
    ):
        assert text in done.stdout
    header, frame = _run_files(tmp_path)
    _assert_exact(frame, sizes, ["mpi", "ring"], 2)
    assert header["kind"] == "allreduce" and header["hostnames"] == [header["host"]["hostname"]] * 2
    assert header["mpi"]["vendor"] == "MPICH" and header["mpi"]["mpi4py"] and header["mpi"]["library_version"]
    assert header["options"]["sizes"] == sizes and "--np" in header["command"]
    assert header["mpiexec"][:3] == [str(find_mpiexec()), "-n", "2"]
    assert (frame.bytes == frame.elements * 4).all()
    assert frame.busbw_gbps.tolist() == pytest.approx(frame.algbw_gbps.tolist())  # 2(n-1)/n = 1 at n = 2
    assert frame.deepbench_gbps.tolist() == pytest.approx((frame.algbw_gbps * 2).tolist())


@pytest.mark.slow
def test_three_ranks_odd_sizes_repeatable(tmp_path):
    sizes = [1, 5, 1000003]  # fewer elements than ranks, and sizes not divisible by 3
    done = dbench_allreduce(
        "--np",
        "3",
        "--sizes",
        ",".join(map(str, sizes)),
        "--iters",
        "3",
        "--warmup",
        "1",
        "--check-repeat",
        "--out",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert "3 ranks" in done.stdout
    if (os.cpu_count() or 1) < 3:
        assert "more ranks than cores" in done.stdout
    _, frame = _run_files(tmp_path)
    _assert_exact(frame, sizes, ["mpi", "ring"], 3)
    assert frame.repeat_identical.all()
    assert frame.busbw_gbps.tolist() == pytest.approx((frame.algbw_gbps * 4 / 3).tolist())


@pytest.mark.parametrize("dtype, itemsize", [("float64", 8), ("int32", 4)])
def test_other_dtypes_are_exact(tmp_path, dtype, itemsize):
    done = dbench_allreduce(
        "--np",
        "2",
        "--dtype",
        dtype,
        "--impl",
        "ring",
        "-b",
        "4K",
        "-e",
        "64K",
        "-f",
        "4",
        "--iters",
        "2",
        "--out",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    _, frame = _run_files(tmp_path)
    sizes = [n // itemsize for n in (4096, 16384, 65536)]
    _assert_exact(frame, sizes, ["ring"], 2)
    assert (frame.dtype == dtype).all() and (frame.bytes == frame.elements * itemsize).all()


def test_plain_mpiexec_runs_the_module(tmp_path):
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    done = run_tree(
        [
            mpiexec,
            "-n",
            "3",
            sys.executable,
            "-m",
            "dbench.allreduce",
            "--sizes",
            "1000,30001",
            "--iters",
            "2",
            "--out",
            str(tmp_path),
        ],
        TIMEOUT,
        _env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("all-reduce sum, float32, 3 ranks") == 1  # rank 0 prints, the others do not
    header, frame = _run_files(tmp_path)
    _assert_exact(frame, [1000, 30001], ["mpi", "ring"], 3)
    assert len(header["hostnames"]) == 3 and header["mpiexec"] is None


def test_one_rank_is_an_error():
    done = dbench_allreduce("--np", "1")
    assert done.returncode == 2 and "all-reduce needs at least two ranks" in done.stderr
    alone = dbench_allreduce("--sizes", "10")  # not under mpiexec: a singleton MPI job of one rank
    assert alone.returncode == 2 and "all-reduce needs at least two ranks" in alone.stderr


def test_missing_mpiexec_is_one_line():
    done = dbench_allreduce("--np", "2", DBENCH_MPIEXEC="/nonexistent/mpiexec")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "pip install 'dbench[mpi]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_size_too_large_for_memory_is_refused_before_allocation(tmp_path):
    import psutil

    huge = psutil.virtual_memory().total // 4  # one float32 buffer per rank as large as the machine's memory
    done = dbench_allreduce("--np", "2", "--sizes", str(huge), "--out", str(tmp_path))
    assert done.returncode == 1 and "GB of host memory" in done.stderr and "choose smaller --sizes" in done.stderr
    assert done.stderr.count("error:") == 1 and "Traceback" not in done.stderr


def test_a_mismatch_is_stored_and_exits_3(tmp_path):
    """Rank 1 counts one wrong element per check: every row is a mismatch, stored, and the exit status is 3
    (any row not ok), distinct from 1 (the run could not finish)."""
    done = dbench_allreduce(
        "--np",
        "2",
        "--sizes",
        "1000",
        "--iters",
        "2",
        "--impl",
        "mpi",
        "--out",
        str(tmp_path),
        DBENCH_ALLREDUCE_FAIL_RANK="1:wrong",
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "2 of 2 results are not exact" in done.stderr
    _, frame = _run_files(tmp_path)
    assert (frame.status == "mismatch").all() and (frame.wrong == 1).all()


def test_a_rank_that_raises_ends_the_job_and_is_named(tmp_path):
    """Rank 1 raises while ranks 0 and 2 wait in a collective: no hang, rank 1 named from its status file."""
    done = dbench_allreduce(
        "--np", "3", "--sizes", "1000", "--iters", "2", "--out", str(tmp_path), DBENCH_ALLREDUCE_FAIL_RANK="1"
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: rank 1 (pid") and "failed: RuntimeError" in last


def test_a_killed_rank_ends_the_job_and_the_report_claims_no_cause(tmp_path):
    """Rank 1 is SIGKILLed: no hang; mpiexec then kills ranks 0 and 2 with the same signal and may report
    any of them first, so the message gives its report and every unfinished rank, without blaming one."""
    done = dbench_allreduce(
        "--np", "3", "--sizes", "1000", "--iters", "2", "--out", str(tmp_path), DBENCH_ALLREDUCE_FAIL_RANK="1:kill"
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "died with exit code 9" in last
    if "did not finish" in last:  # several ranks unfinished: no rank is blamed
        assert last.startswith("error: mpiexec reported: ") and "ranks 0, 1, 2 did not finish" in last
    else:  # only the killed rank was unfinished: it is named
        assert last.startswith("error: rank 1 (pid")


def _gpus() -> int:
    """NVIDIA GPUs CuPy sees; skips the test with the reason where there are none."""
    cupy = pytest.importorskip("cupy", reason="nccl needs CuPy: pip install 'dbench[gpu]'")
    try:
        gpus = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as error:
        pytest.skip(f"no usable NVIDIA GPU: {error}")
    if gpus == 0:
        pytest.skip("no NVIDIA GPU")
    return gpus


@pytest.mark.gpu
def test_nccl_on_gpus_is_exact(tmp_path):
    if _gpus() < 2:
        pytest.skip("one GPU: NCCL refuses two ranks on one device (test_nccl_ranks_sharing_a_gpu_are_refused)")
    done = dbench_allreduce(
        "--np",
        "2",
        "--impl",
        "nccl,mpi",
        "--sizes",
        "1000,1000003",
        "--iters",
        "3",
        "--check-repeat",
        "--out",
        str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    _, frame = _run_files(tmp_path)
    _assert_exact(frame, [1000, 1000003], ["nccl", "mpi"], 2)
    assert set(frame.device) == {"gpu", "cpu"} and frame.repeat_identical.all()


@pytest.mark.gpu
def test_nccl_ranks_sharing_a_gpu_are_refused_in_one_line(tmp_path):
    """Two ranks on one GPU: NCCL itself says only NCCL_ERROR_INVALID_USAGE (seen on an H200); dbench says why."""
    gpus = _gpus()
    done = dbench_allreduce(
        "--np", str(gpus + 1), "--impl", "nccl", "--sizes", "1000", "--iters", "2", "--out", str(tmp_path)
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "nccl needs a GPU of its own for each rank" in done.stderr.strip().splitlines()[-1], done.stderr


def test_cuda_awareness_is_read_from_the_loaded_mpi_library():
    """The query behind `--device gpu` finds MPIX_Query_cuda_support in the mpich wheel (no GPU support: False)."""
    code = (
        "from mpi4py import MPI; from dbench.allreduce.implementations import mpi_cuda_support; "
        "print(mpi_cuda_support())"
    )
    done = run_tree([sys.executable, "-c", code], TIMEOUT, _env())
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stdout + done.stderr
