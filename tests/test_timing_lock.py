"""One timing run per machine at a time (dbench.orchestrator.lock): a second timing dbench is refused by
default, naming the first; --wait queues behind it; --overlap times beside it and flags every row timed
meanwhile, in both runs, through to compare and the report. Every test here uses its own lock folder
(DBENCH_LOCK_DIR, set by conftest), and every holder is a child process killed on every exit path, so no
test can wait on another checkout's run or leave a holder behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dbench.cli import app
from dbench.orchestrator.lock import LOCK_DIR_VARIABLE, TimingBusy, TimingLock, lock_dir, timers
from tests.helpers import write_csv

runner = CliRunner()


@contextmanager
def holder(seconds: float = 60.0, what: str = "run run-20261128-000000-beef"):
    """A process that holds the machine's timing lock (in this test's folder) until it is killed."""
    code = textwrap.dedent(f"""
        import time
        from dbench.orchestrator.lock import TimingLock
        lock = TimingLock({what!r}, "/somewhere/results").acquire()
        print("locked", flush=True)
        time.sleep({seconds})
        lock.release()
    """)
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert process.stdout.readline().strip() == "locked"
        yield process
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


@pytest.fixture
def tiny_kernels(tmp_path) -> Path:
    return write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "16,16,16,0,0")


def test_the_lock_folder_is_the_environments(timing_lock):
    assert lock_dir() == timing_lock and os.environ[LOCK_DIR_VARIABLE] == str(timing_lock)


def test_a_second_timer_is_refused_naming_the_first_and_both_ways_on():
    with holder() as process:
        with pytest.raises(TimingBusy) as refused:
            TimingLock("run run-x", "/here").acquire()
        message = str(refused.value)
        assert f"pid {process.pid}" in message and "run-20261128-000000-beef" in message
        assert "--wait" in message and "--overlap" in message
    assert not [t for t in timers() if t.pid == process.pid]  # a killed holder's registration is gone


def test_overlap_registers_beside_the_holder_and_sees_it():
    with holder() as process:
        with TimingLock("run run-y", "/here", "overlap").acquire() as beside:
            assert beside.header()["held"] is False and "run-20261128-000000-beef" in beside.header()["beside"][0]
            assert [t.key() for t in beside.others()] == ["run-20261128-000000-beef"]
            assert {t.pid for t in timers()} == {process.pid, os.getpid()}
    assert [t.pid for t in timers()] == [process.pid] or not timers()


def test_wait_queues_behind_the_holder_and_then_holds_the_lock():
    said = []
    with holder(seconds=1.5):
        start = time.monotonic()
        with TimingLock("run run-z", "/here", "wait").acquire(said.append) as waited:
            assert time.monotonic() - start >= 1.0 and waited.header()["held"] and waited.waited_s >= 1.0
            assert said and "waiting for run run-20261128-000000-beef" in said[0]


def test_a_registration_of_a_dead_process_is_ignored_and_removed(timing_lock):
    stale = timing_lock / "timer-999999999.json"
    stale.write_text(
        json.dumps(
            {
                "pid": 999999999,
                "user": "x",
                "what": "run run-old",
                "out": "/x",
                "started": "t",
                "holds_lock": True,
                "start_ticks": "1",
            }
        )
    )
    assert timers() == [] and not stale.exists()
    with TimingLock("run run-new", "/here").acquire() as lock:  # the lock itself is free: no holder alive
        assert lock.header()["held"]


def test_dbench_run_is_refused_before_writing_anything_while_another_times(tmp_path, tiny_kernels):
    with holder():
        result = runner.invoke(app, ["run", "--kernels", str(tiny_kernels), "--quick", "--out", str(tmp_path / "res")])
    assert result.exit_code == 1 and "another dbench is timing on this machine" in result.output
    assert "Traceback" not in result.output and not list((tmp_path / "res").glob("*/*.jsonl"))


def test_wait_and_overlap_together_are_refused(tmp_path, tiny_kernels):
    result = runner.invoke(app, ["run", "--kernels", str(tiny_kernels), "--wait", "--overlap", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "contradict" in result.output


def test_rows_timed_beside_another_run_say_so_through_compare_and_report(tmp_path, tiny_kernels):
    out = tmp_path / "res"
    with holder():
        beside = runner.invoke(app, ["run", "--kernels", str(tiny_kernels), "--quick", "--overlap", "--out", str(out)])
        assert beside.exit_code == 0, beside.output
        assert "timing beside another dbench (--overlap)" in beside.output
        assert "rows were timed while another dbench was timing" in beside.output
    alone = runner.invoke(app, ["run", "--kernels", str(tiny_kernels), "--quick", "--out", str(out)])
    assert alone.exit_code == 0, alone.output
    first, second = sorted(out.glob("*/*.jsonl"))
    rows = [json.loads(line) for line in first.read_text().splitlines() if '"type": "result"' in line]
    assert rows and all(r["overlapped"] == ["run-20261128-000000-beef"] for r in rows)
    header = json.loads(first.read_text().splitlines()[0])
    assert header["timing_lock"]["held"] is False
    assert all(
        json.loads(line).get("overlapped") is None
        for line in second.read_text().splitlines()
        if '"type": "result"' in line
    )
    compared = runner.invoke(app, ["compare", str(first), str(second)])
    assert "were timed while another dbench was timing" in compared.output
    assert "started beside another dbench" in compared.output
