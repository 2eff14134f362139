"""Fixtures shared by every test (plain helpers live in tests/helpers.py, process helpers in
tests/processes.py)."""

from __future__ import annotations

import os
import secrets
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import SESSION_MARK, descendants, describe_process, end_processes, leftover_processes
from tests.workdir import files_under, left_behind


def pytest_configure(config: pytest.Config) -> None:
    """A pytest-xdist worker gets COLUMNS=80 and LINES=24 from execnet, which a plain run does not have:
    rich would then wrap dbench's tables at 80 columns in one and not the other. Each worker runs as a
    plain pytest process does. A shell starts a background job with Ctrl-C ignored, and the processes
    the tests start would inherit that: the tests that press Ctrl-C need it to arrive, as it does for a user."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for name in ("COLUMNS", "LINES"):
            os.environ.pop(name, None)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def seed() -> int:
    """A fresh seed per test run (printed on failure through the test id's locals)."""
    return secrets.randbits(31)


CACHE_VARIABLES = ("DBENCH_CACHE_DIR", "XDG_CACHE_HOME")
LOCK_VARIABLE = "DBENCH_LOCK_DIR"


@pytest.fixture(scope="session", autouse=True)
def session_timing_lock(tmp_path_factory) -> Iterator[Path]:
    """The machine-wide timing lock (dbench.orchestrator.lock) is the tests' own for the whole session: other
    checkouts' test runs and benchmarks time on this machine at the same time, and a run refused (or worse,
    waiting) because of them would fail or hang a test. Session- and module-scoped fixtures use this folder;
    each test gets a fresh one of its own (`timing_lock`)."""
    saved = os.environ.get(LOCK_VARIABLE)
    root = tmp_path_factory.mktemp("session-lock")
    os.environ[LOCK_VARIABLE] = str(root)
    yield root
    if saved is None:
        os.environ.pop(LOCK_VARIABLE, None)
    else:
        os.environ[LOCK_VARIABLE] = saved


@pytest.fixture(autouse=True)
def timing_lock(tmp_path_factory, monkeypatch) -> Path:
    """Every test (and every dbench it starts) takes the timing lock in a folder of its own, so no test
    waits for, is refused by, or flags rows because of, anything outside it."""
    root = tmp_path_factory.mktemp("lock")
    monkeypatch.setenv(LOCK_VARIABLE, str(root))
    return root


@pytest.fixture(scope="session", autouse=True)
def session_reference_cache(tmp_path_factory) -> Iterator[Path]:
    """Session- and module-scoped fixtures run dbench too (report_fixtures' runs): for the whole session
    the reference cache is a temporary folder, and afterwards the user's own cache must be as it was (a
    test that reached it fails the session, naming what it wrote)."""
    from dbench.cache.store import cache_root

    users = cache_root()
    before = set(users.rglob("*")) if users.exists() else set()
    saved = {name: os.environ.get(name) for name in CACHE_VARIABLES}
    root = tmp_path_factory.mktemp("session-cache")
    os.environ["DBENCH_CACHE_DIR"], os.environ["XDG_CACHE_HOME"] = str(root / "dbench"), str(root / "xdg")
    yield root / "dbench"
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    written = sorted(str(p) for p in (set(users.rglob("*")) if users.exists() else set()) - before)
    if written:
        pytest.fail(
            f"the tests wrote into the user's reference cache {users}:\n" + "\n".join(written[:20]), pytrace=False
        )


@pytest.fixture(autouse=True)
def reference_cache(tmp_path_factory, monkeypatch) -> Path:
    """Every test (and every process it starts) uses a fresh reference cache of its own, never the
    user's ~/.cache: DBENCH_CACHE_DIR and XDG_CACHE_HOME point into the test's temporary folders."""
    root = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("DBENCH_CACHE_DIR", str(root / "dbench"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(root / "xdg"))
    return root / "dbench"


@pytest.fixture(scope="session", autouse=True)
def no_leftover_processes() -> Iterator[None]:
    """After the whole session, no process started by the tests may be alive: kill any and fail loudly.
    Processes are attributed by descent and by an inherited mark, never by name: other people's test runs
    on this machine start mpiexec and workers too, and must not be killed."""
    session = secrets.token_hex(8)
    before = {(p.pid, p.create_time()) for p in descendants(os.getpid())}
    os.environ[SESSION_MARK] = session
    yield
    os.environ.pop(SESSION_MARK)
    left = leftover_processes(session, before)
    described = [describe_process(p) for p in left]
    end_processes(left)
    if described:
        pytest.fail("the tests left these processes running (now killed):\n" + "\n".join(described), pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def no_files_left_in_the_working_directory() -> Iterator[None]:
    """After the whole session, the working directory holds exactly the files it held before: a run or a
    test that writes there (a profile, a results folder) fails the session, naming what it left."""
    root = Path.cwd()
    before = files_under(root)
    yield
    left = left_behind(before, root)
    if left:
        shown = "\n".join(left[:20]) + (f"\n... and {len(left) - 20} more" if len(left) > 20 else "")
        pytest.fail(
            f"the tests left these files in the working directory {root} (write to tmp_path instead):\n{shown}",
            pytrace=False,
        )
