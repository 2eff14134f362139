"""Run logs under faults and sharing: read-only commands change no byte, repairs lose none, a second
writer is refused, and a failed write says how to finish the run (with its --out)."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.store.log import RunLog, resume_command
from tests.helpers import rerun_of, write_csv

runner = CliRunner()
FAST = ("--quick", "--profile-runs", "2")


@pytest.fixture
def finished_run(tmp_path) -> Path:
    """The log of a finished three-GEMM run."""
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,8,32,0,0", "32,8,32,0,0", "48,8,32,0,0")
    result = runner.invoke(app, ["run", "--kernels", str(kernels), *FAST, "--out", str(tmp_path / "res")])
    assert result.exit_code == 0, result.output
    (log,) = (tmp_path / "res").glob("*/*.jsonl")
    return log


def torn(log: Path, tail: bytes) -> bytes:
    """Cut the log's last row in half (a kill mid-write) and return the bytes now on disk."""
    lines = log.read_bytes().splitlines(keepends=True)
    data = b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2] + tail
    log.write_bytes(data)
    return data


def test_compare_changes_no_byte_of_its_inputs(finished_run):
    before = torn(finished_run, b"")
    copy = rerun_of(finished_run, finished_run.with_name("copy.jsonl"))
    copied = copy.read_bytes()
    result = runner.invoke(app, ["compare", str(finished_run), str(copy)])
    assert result.exit_code == 0, result.output
    assert finished_run.read_bytes() == before and copy.read_bytes() == copied


def test_resume_sets_a_torn_last_line_aside_instead_of_dropping_it(finished_run):
    data = torn(finished_run, b"")
    end = data.rfind(b"\n") + 1
    result = runner.invoke(app, ["run", "--resume", finished_run.stem, "--out", str(finished_run.parent.parent)])
    assert result.exit_code == 0, result.output
    (aside,) = finished_run.parent.glob(f"{finished_run.stem}.torn-*")
    assert aside.read_bytes() == data[end:]
    assert finished_run.read_bytes().startswith(data[:end])
    rows = [json.loads(line) for line in finished_run.read_text().splitlines()[1:] if '"type": "result"' in line]
    assert len(rows) == 3 and len({r["graph_id"] for r in rows}) == 3


def test_resume_of_a_log_with_a_torn_header_is_refused_and_changes_nothing(tmp_path):
    log = tmp_path / "res" / "m" / "run-x.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes(b'{"type": "run", "schema_vers')
    result = runner.invoke(app, ["run", "--resume", "run-x", "--out", str(tmp_path / "res")])
    assert result.exit_code == 2 and "no complete run header" in result.output
    assert "Traceback" not in result.output and log.read_bytes() == b'{"type": "run", "schema_vers'


def test_a_second_writer_is_refused_with_the_holders_pid(finished_run):
    code = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from dbench.store.log import RunLog
        log = RunLog.resume(Path({str(finished_run)!r}))
        print("locked", flush=True)
        time.sleep(60)
    """)
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = finished_run.read_bytes()
        result = runner.invoke(app, ["run", "--resume", finished_run.stem, "--out", str(finished_run.parent.parent)])
        assert result.exit_code == 1 and f"is being written by process {holder.pid}" in result.output
        assert finished_run.read_bytes() == before
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    with RunLog.resume(finished_run) as log:  # the holder's death released the lock
        assert log.lock is not None


def test_the_lock_is_released_and_its_file_removed_when_the_run_ends(finished_run):
    assert not list(finished_run.parent.glob(".*.lock"))


def test_resume_command_keeps_a_results_folder_other_than_the_default(tmp_path):
    assert resume_command(Path("results/m/run-1.jsonl")) == "dbench run --resume run-1"
    assert (
        resume_command(tmp_path / "out" / "m" / "run-1.jsonl") == f"dbench run --resume run-1 --out {tmp_path / 'out'}"
    )


@pytest.mark.slow
def test_a_failed_write_mid_run_names_the_cause_and_the_resume_command(tmp_path):
    """A file-size limit makes the log's writes fail part-way (as a full disk does): one line, and
    the printed command finishes the run."""
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", *[f"{16 * i},8,32,0,0" for i in range(1, 9)])
    out = tmp_path / "res"

    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (12_000, 12_000))

    # No profiling: its JSON (in the temporary folder, a few kB per warm-up run) would hit the limit first.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dbench",
            "run",
            "--kernels",
            str(kernels),
            "--quick",
            "--profile-runs",
            "0",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit_file_size,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "cannot write to" in done.stderr and f"--out {out}" in done.stderr
    command = done.stderr.split("finish with: ")[1].split()
    result = runner.invoke(app, command[1:])
    assert result.exit_code == 0, result.output
    (log,) = out.glob("*/*.jsonl")
    assert (
        len({json.loads(line)["graph_id"] for line in log.read_text().splitlines()[1:] if '"type": "result"' in line})
        == 8
    )


def test_a_header_without_a_request_is_one_line(finished_run):
    lines = finished_run.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    del header["request"]
    finished_run.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    result = runner.invoke(app, ["run", "--resume", finished_run.stem, "--out", str(finished_run.parent.parent)])
    assert result.exit_code == 2 and "does not hold a request this dbench can resume" in result.output
    assert "Traceback" not in result.output


def test_huge_user_kernels_are_exported_after_their_oom_rows(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "100000000,100000000,100000000,0,0", "16,8,32,0,0")
    out = tmp_path / "res"
    result = runner.invoke(app, ["run", "--kernels", str(kernels), *FAST, "--out", str(out)])
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    (log,) = out.glob("*/*.jsonl")
    assert log.with_suffix(".parquet").exists() and log.with_suffix(".csv").exists()
    statuses = {
        json.loads(line)["kernel_id"]: json.loads(line)["status"]
        for line in log.read_text().splitlines()[1:]
        if '"type": "result"' in line
    }
    assert statuses == {"gemm_m100000000_n100000000_k100000000_nn": "oom", "gemm_m16_n8_k32_nn": "ok"}


def test_kernel_file_with_a_byte_order_mark_reads(tmp_path):
    path = tmp_path / "k.csv"
    path.write_bytes("\ufeffm,n,k,a_t,b_t\n16,8,32,0,0\n".encode())
    result = runner.invoke(app, ["list", "--kernels", str(path), "--format", "csv"])
    assert result.exit_code == 0 and "gemm_m16_n8_k32_nn" in result.output


def test_kernel_file_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "k.csv"
    path.write_bytes("m,n,k,a_t,b_t\n16,8,32,0,0 \xe9\n".encode("latin-1"))
    result = runner.invoke(app, ["list", "--kernels", str(path)])
    assert result.exit_code == 2 and "is not UTF-8 text" in result.output and "Traceback" not in result.output
