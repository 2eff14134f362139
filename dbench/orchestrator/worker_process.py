"""The parent's handle on the worker process: start it in its own process group, hand it a job, wait
with a timeout, and tell a crash (signal), a hang (timeout) and an out-of-memory kill apart (only with
evidence: the cgroup's oom_kill counter); a dead worker is replaced on the next job."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

from dbench.outcome import Outcome, Phase, Status
from dbench.worker.job import Job

CGROUP_ROOT = Path("/sys/fs/cgroup")


def oom_kills() -> int | None:
    """How many processes of this process's memory cgroup the kernel's OOM killer has killed
    (cgroup v2 memory.events, or v1 memory.oom_control); None where neither can be read."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    candidates = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            candidates.append(CGROUP_ROOT / path.lstrip("/") / "memory.events")
        elif "memory" in controllers.split(","):
            candidates.append(CGROUP_ROOT / "memory" / path.lstrip("/") / "memory.oom_control")
    for candidate in candidates:
        try:
            for line in candidate.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            continue
    return None


class WorkerProcess:
    """One persistent worker: `python -m dbench.worker` on a socketpair, in its own process group (so
    it is killed as a group, never by a signal meant for the parent's terminal), told to die with its
    parent (PR_SET_PDEATHSIG); it starts clean of the parent's state."""

    def __init__(self, memory_limit: int | None = None, cpus: tuple[int, ...] | None = None) -> None:
        self.memory_limit = memory_limit
        self.cpus = cpus
        self.process: subprocess.Popen | None = None
        self.connection: Connection | None = None

    def _start(self) -> None:
        parent, child = socket.socketpair()
        command = [
            sys.executable,
            "-m",
            "dbench.worker",
            str(child.fileno()),
            str(os.getpid()),
            str(self.memory_limit or 0),
        ]
        if self.cpus:
            command.append(",".join(map(str, self.cpus)))
        self.process = subprocess.Popen(
            command, pass_fds=[child.fileno()], stdin=subprocess.DEVNULL, start_new_session=True
        )
        child.close()
        self.connection = Connection(parent.detach())

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def submit(self, job: Job, timeout: float, on_phase: Callable[[str], None] = lambda name: None) -> Outcome:
        """The worker's Outcome for `job`, or the parent's when it died or made no progress for `timeout`
        seconds: each phase the worker reports (told to `on_phase`) restarts the clock, so a server GRU
        verified for minutes is not mistaken for a hang, while a stuck phase still is."""
        if not self.alive():
            self._start()
        kills_before = oom_kills()
        phase = "starting"
        try:
            self.connection.send(job)
            while self.connection.poll(timeout):
                message = self.connection.recv()
                if not isinstance(message, Phase):
                    return message
                phase = message.name
                on_phase(phase)
        except (EOFError, OSError):
            return self._death(kills_before)  # the pipe closed: the worker is dead or dying
        self.stop()
        return Outcome(
            Status.TIMEOUT, f"no progress for {timeout:g} s while {phase}; the worker was killed and replaced"
        )

    def _death(self, kills_before: int | None) -> Outcome:
        try:
            code = self.process.wait(30)
        except subprocess.TimeoutExpired:  # closed its end but lingers: treat as hung
            self.stop()
            return Outcome(Status.CRASHED, "the worker closed its connection but did not exit; killed and replaced")
        self.process = None
        self.connection.close()
        self.connection = None
        if code is None or code >= 0:
            return Outcome(Status.CRASHED, f"worker exited with code {code}")
        name = signal.Signals(-code).name
        if -code != signal.SIGKILL:
            return Outcome(Status.CRASHED, f"worker died with signal {name}")
        kills_after = oom_kills()
        if kills_before is not None and kills_after is not None and kills_after > kills_before:
            return Outcome(
                Status.OOM,
                f"worker killed by {name}: the kernel's out-of-memory killer "
                f"(cgroup oom_kill {kills_before} -> {kills_after})",
            )
        return Outcome(Status.CRASHED, f"worker killed by {name} from outside dbench (no out-of-memory record found)")

    def _kill(self) -> None:
        """SIGKILL the worker's process group (the worker and anything it started), then reap it."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(5)

    def stop(self) -> None:
        """Kill the worker now (used on timeout, Ctrl-C and any error in the run loop)."""
        if self.process is not None:
            self._kill()
            self.process = None
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def close(self) -> None:
        """Let the worker finish cleanly (it exits when the pipe closes), else kill its group."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None
        if self.process is not None:
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self._kill()
            self.process = None
