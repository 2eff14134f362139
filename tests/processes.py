"""Processes the tests start: each tree in a session of its own, ended by process group however the test
ends, and the session-wide check that none outlives the tests (attributed by descent and by an inherited
environment mark, never by name)."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
from collections.abc import Iterator

import psutil

SESSION_MARK = "PYTEST_DBENCH_SESSION"  # inherited by every process the tests start, so orphans are found too
TREE_MARK = "PYTEST_DBENCH_TREE"  # one value per process_tree: finds its processes wherever they were reparented


def alive(proc: psutil.Process) -> bool:
    """Running and not a zombie (an exited process its parent has not reaped yet)."""
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def marked(name: str, value: str) -> list[psutil.Process]:
    """Live processes (not pytest) whose environment has name=value; other users' processes read as None."""
    return [
        p
        for p in psutil.process_iter(["environ"])
        if p.pid != os.getpid() and (p.info["environ"] or {}).get(name) == value and alive(p)
    ]


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return [p for p in psutil.Process(pid).children(recursive=True) if alive(p)]
    except psutil.NoSuchProcess:
        return []


def end_processes(procs: list[psutil.Process]) -> None:
    """SIGKILL each process's group when it leads one other than pytest's (MPI launchers give every child a
    session of its own), else the process alone; then wait for them (reaping pytest's own children)."""
    own = os.getpgrp()
    for proc in filter(alive, procs):
        with contextlib.suppress(psutil.Error, OSError):  # it may end meanwhile
            if os.getpgid(proc.pid) == proc.pid != own:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
    psutil.wait_procs(procs, timeout=10)


@contextlib.contextmanager
def process_tree(command: list[str], env: dict[str, str] | None = None, **popen) -> Iterator[subprocess.Popen]:
    """Start `command` in a session of its own, marked in its environment; however the test ends, kill what
    is left of it by process group: its descendants and any process carrying its mark (orphans included)."""
    tree = secrets.token_hex(8)
    proc = subprocess.Popen(
        command, env={**(os.environ if env is None else env), TREE_MARK: tree}, start_new_session=True, **popen
    )
    try:
        yield proc
    finally:
        left = {p.pid: p for p in [*descendants(proc.pid), *marked(TREE_MARK, tree)]}
        if proc.poll() is None:
            left[proc.pid] = psutil.Process(proc.pid)
        end_processes(list(left.values()))
        proc.wait()


def describe_process(proc: psutil.Process) -> str:
    with contextlib.suppress(psutil.Error):
        return f"pid {proc.pid}: {' '.join(proc.cmdline())}"
    return f"pid {proc.pid} (ended while being listed)"


def run_tree(command: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """subprocess.run(command, capture_output=True, text=True, timeout=...) inside a process_tree."""
    with process_tree(command, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def leftover_processes(session: str, before: set[tuple[int, float]]) -> list[psutil.Process]:
    """Live processes the tests started: pytest's descendants and every process carrying the session mark,
    less those alive when the session began."""
    found = {p.pid: p for p in [*descendants(os.getpid()), *marked(SESSION_MARK, session)]}
    return [p for p in found.values() if (p.pid, p.create_time()) not in before]
