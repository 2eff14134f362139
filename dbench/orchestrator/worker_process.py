"""The parent's side of the worker: start it, hand it a job, wait with a timeout, and tell a crash
(signal), a hang (timeout) and an out-of-memory kill apart; a dead worker is replaced on the next job."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from dbench.worker.main import Job


@dataclass(frozen=True)
class Failure:
    """Why a job produced no outcome: status crashed | timeout | oom, and the details."""

    status: str
    message: str


class Worker:
    """One persistent worker process: `python -m dbench.worker` on a socketpair, so it starts
    clean of the parent's state and never re-imports the caller's main module."""

    def __init__(self, memory_limit: int | None = None) -> None:
        self.memory_limit = memory_limit
        self.process = None
        self.connection = None

    def _start(self) -> None:
        parent, child = socket.socketpair()
        command = [sys.executable, "-m", "dbench.worker", str(child.fileno())]
        if self.memory_limit:
            command.append(str(self.memory_limit))
        self.process = subprocess.Popen(command, pass_fds=[child.fileno()], stdin=subprocess.DEVNULL)
        child.close()
        self.connection = Connection(parent.detach())

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def submit(self, job: Job, timeout: float) -> dict[str, Any] | Failure:
        """The worker's outcome for `job`, or a Failure when it died or exceeded `timeout` seconds."""
        if not self.alive():
            self._start()
        try:
            self.connection.send(job)
            if self.connection.poll(timeout):
                return self.connection.recv()
        except (EOFError, OSError):
            return self._death()  # the pipe closed: the worker is dead or dying
        self.stop()
        return Failure("timeout", f"no result within {timeout:g} s; the worker was killed and replaced")

    def _death(self) -> Failure:
        try:
            code = self.process.wait(30)
        except subprocess.TimeoutExpired:  # closed its end but lingers: treat as hung
            self.stop()
            return Failure("crashed", "the worker closed its connection but did not exit; killed and replaced")
        self.process = None
        self.connection.close()
        self.connection = None
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            if -code == signal.SIGKILL:
                return Failure("oom", f"worker killed by {name} (the kernel's out-of-memory killer, most likely)")
            return Failure("crashed", f"worker died with signal {name}")
        return Failure("crashed", f"worker exited with code {code}")

    def stop(self) -> None:
        """Kill the worker now (used on timeout and Ctrl-C)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(5)
            self.process = None
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def close(self) -> None:
        """Let the worker finish cleanly (it exits when the pipe closes)."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None
        if self.process is not None:
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
            self.process = None
