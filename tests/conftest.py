"""Fixtures shared by every test (helpers that are plain functions live in tests/helpers.py)."""

from __future__ import annotations

import os
import secrets
import signal
from pathlib import Path

import pytest

MARKER = "DBENCH_TEST_SESSION"
"""Set in the test process's environment, so every process a test starts carries it, orphans included."""


@pytest.fixture
def seed() -> int:
    """A fresh seed per test run (printed on failure through the test id's locals)."""
    return secrets.randbits(31)


def marked_processes(token: str) -> list[int]:
    """Processes other than this one whose environment holds MARKER=token."""
    needle = f"{MARKER}={token}".encode()
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        pid = int(environ.parent.name)
        try:
            if pid != os.getpid() and needle in environ.read_bytes().split(b"\0"):
                state = (environ.parent / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(pid)
        except OSError:
            continue
    return found


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind():
    """After the whole session, no process started by a test (workers, mpiexec, ranks) is alive;
    any found are killed and the session errors, naming them."""
    token = secrets.token_hex(8)
    os.environ[MARKER] = token
    yield
    survivors = marked_processes(token) if Path("/proc").is_dir() else []
    for pid in survivors:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not survivors, f"processes started by the tests outlived them: {survivors}"
