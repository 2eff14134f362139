"""While a worker times, the `dbench run` parent sleeps: on a terminal its progress bar is drawn when the
run tells it something, not by a refresh thread waking 10 times a second on the cores being timed."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import write_csv


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def activity(pid: int) -> tuple[int, int]:
    """A process's CPU ticks (user + system) and context switches, all its threads together."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    switches = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            lines = (task / "status").read_text().splitlines()
        except OSError:
            continue
        switches += sum(int(line.split()[1]) for line in lines if "ctxt_switches" in line)
    return int(fields[11]) + int(fields[12]), switches


def drain(fd: int) -> None:
    """Read the terminal's output until it closes."""
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass
    os.close(fd)


@pytest.mark.slow
def test_the_parent_on_a_terminal_sleeps_while_a_round_times(tmp_path):
    kernels = write_csv(tmp_path / "k.csv", "m,n,k,a_t,b_t", "64,64,64,0,0")
    command = [sys.executable, "-m", "dbench", "run", "--kernels", str(kernels), "--runtime", "ort-cpu"]
    command += ["--rounds", "1", "--min-time", "8", "--max-time", "8", "--no-verify", "--profile-runs", "0"]
    command += ["--threads", "1", "--out", str(tmp_path / "out")]
    leader, follower = pty.openpty()  # a terminal: the progress bar is on
    run = subprocess.Popen(
        command, stdout=follower, stderr=follower, start_new_session=True, env={**os.environ, "TERM": "xterm"}
    )
    os.close(follower)
    threading.Thread(target=drain, args=(leader,), daemon=True).start()  # a full terminal would block the parent
    try:
        deadline = time.monotonic() + 60
        while not (workers := children(run.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert workers, "the run started no worker"
        time.sleep(4)  # the worker has made its inputs and prepared: it is timing (8 s)
        before = activity(run.pid)
        time.sleep(2)
        after = activity(run.pid)
        assert run.poll() is None, "the run ended before the window"
        assert after == before, f"the parent ran while the worker timed: ticks, switches {before} -> {after}"
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(10)
