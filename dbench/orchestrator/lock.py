"""One timing run per machine at a time: a machine-wide advisory lock that every timing command of dbench
(`run`, `predict`, `calibrate`) takes before its log is created, and a register of who is timing.

Two `dbench run` started at once on one machine each time the other's load (rows of ±200 % and more,
both exiting 0). The lock is an flock on `timing.lock` in the lock folder (`$DBENCH_LOCK_DIR`, else
`/tmp/dbench-timing`: one folder for every user and results folder of the machine). A run that finds
it held is refused by default, naming the holder: refusing protects the run already timing, whose
numbers a second run would spoil beyond what any flag could repair, and it never hangs a script or a
CI job. `--wait` queues behind the holder; `--overlap` times beside it anyway, and then every row of
either run timed while the other was timing says so (`overlapped`).

Every timing process also registers itself (`timer-<pid>.json`: pid, user, run, results folder,
start), holder or not, so each run can see, round by round, who else is timing: the flag reaches rows
of the holder too. A registration whose process is gone (a kill) is ignored and removed."""

from __future__ import annotations

import errno
import fcntl
import getpass
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from dbench.errors import DbenchError, UsageError

LOCK_DIR_VARIABLE = "DBENCH_LOCK_DIR"
DEFAULT_LOCK_DIR = Path("/tmp/dbench-timing")
"""Machine-wide: /tmp is shared by every user and checkout of the host (TMPDIR may be per user, so it
is not used)."""
LOCK_FILE = "timing.lock"
POLICIES = ("refuse", "wait", "overlap")


class TimingBusy(DbenchError):
    """Another dbench is timing on this machine and the run was told neither to wait nor to overlap."""


def lock_dir() -> Path:
    """The lock folder: $DBENCH_LOCK_DIR (tests point it at their own folder), else /tmp/dbench-timing."""
    return Path(os.environ.get(LOCK_DIR_VARIABLE) or DEFAULT_LOCK_DIR)


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22): with the pid it names
    one process, never a later one that reuses the pid. None when the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@dataclass(frozen=True)
class Timer:
    """One registered timing process."""

    pid: int
    user: str
    what: str
    """`run run-20261128-...`, `calibrate`, ..."""
    out: str
    started: str
    holds_lock: bool
    start_ticks: str | None = None

    def alive(self) -> bool:
        return self.start_ticks is not None and _start_time(self.pid) == self.start_ticks

    def describe(self) -> str:
        return f"{self.what} (pid {self.pid}, user {self.user}, results in {self.out}, since {self.started})"

    def key(self) -> str:
        """How a row names it: the run it makes (`run-...`, `calibrate-...`), or the command and its pid."""
        parts = self.what.split()
        return parts[-1] if len(parts) == 2 else f"{self.what} (pid {self.pid})"


def _folder(path: Path) -> Path:
    """The lock folder, created world-writable with the sticky bit (as /tmp) when this process makes it."""
    try:
        path.mkdir(parents=True)
        os.chmod(path, 0o1777)
    except FileExistsError:
        pass
    except OSError as err:
        raise DbenchError(
            f"cannot create the timing lock folder {path}: {err.strerror}; set {LOCK_DIR_VARIABLE} "
            "to a folder every dbench user of this machine can write"
        ) from None
    return path


def timers(folder: Path | None = None) -> list[Timer]:
    """Every live registered timing process (stale registrations of killed processes are removed)."""
    folder = folder or lock_dir()
    found = []
    for path in sorted(folder.glob("timer-*.json")) if folder.is_dir() else []:
        try:
            timer = Timer(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue  # being written, or not ours
        if timer.alive():
            found.append(timer)
        else:
            try:
                path.unlink()
            except OSError:
                pass  # another user's: left for them
    return found


@dataclass
class TimingLock:
    """This process's hold on the machine's timing (or its registration beside a holder, `--overlap`)."""

    what: str
    out: str
    policy: str = "refuse"
    folder: Path = field(default_factory=lock_dir)
    fd: int | None = None
    registration: Path | None = None
    waited_s: float = 0.0
    beside: list[Timer] = field(default_factory=list)
    """The timers found holding the machine when this one started beside them (`overlap`)."""

    def acquire(self, on_wait: Callable[[str], None] | None = None) -> TimingLock:
        """Take the lock, or wait for it, or register beside its holder, as the policy says; TimingBusy
        (one line naming the holder and the two ways on) when refused."""
        if self.policy not in POLICIES:
            raise UsageError(f"unknown timing-lock policy {self.policy!r}; valid: {', '.join(POLICIES)}")
        folder = _folder(self.folder)
        fd = self._open(folder / LOCK_FILE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holders = [t for t in timers(folder) if t.pid != os.getpid()] or [
                Timer(0, "?", "another dbench", "?", "?", True)
            ]
            if self.policy == "refuse":
                os.close(fd)
                raise TimingBusy(
                    f"another dbench is timing on this machine: {holders[0].describe()}; its numbers and "
                    "this run's would both carry the other's load. Wait for it with --wait, or time beside it "
                    "anyway with --overlap (every row then says so)"
                ) from None
            if self.policy == "overlap":
                os.close(fd)
                self.beside = holders
                self._register(holds_lock=False)
                return self
            if on_wait:
                on_wait(f"waiting for {holders[0].describe()} to finish (--wait)")
            start = time.monotonic()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
            self.waited_s = time.monotonic() - start
        self.fd = fd
        self._register(holds_lock=True)
        return self

    @staticmethod
    def _open(path: Path) -> int:
        """The lock file, made writable for every user when this process creates it; read-only where
        another user's file allows no more (flock needs no write access)."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:
            return os.open(path, os.O_RDONLY)
        try:
            os.fchmod(fd, 0o666)
        except OSError as err:
            if err.errno not in (errno.EPERM, errno.EACCES):
                raise
        return fd

    def _register(self, holds_lock: bool) -> None:
        pid = os.getpid()
        record = {
            "pid": pid,
            "user": _user(),
            "what": self.what,
            "out": self.out,
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "holds_lock": holds_lock,
            "start_ticks": _start_time(pid),
        }
        path = self.folder / f"timer-{pid}.json"
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps(record))
        os.chmod(partial, 0o644)
        partial.replace(path)
        self.registration = path

    def rename(self, what: str) -> None:
        """Name the run in the registration once its id exists (the lock is taken before the log)."""
        self.what = what
        if self.registration is not None:
            record = json.loads(self.registration.read_text())
            record["what"] = what
            partial = self.registration.with_suffix(".tmp")
            partial.write_text(json.dumps(record))
            partial.replace(self.registration)

    def others(self) -> list[Timer]:
        """The other processes timing on this machine now."""
        return [t for t in timers(self.folder) if t.pid != os.getpid()]

    def header(self) -> dict:
        """What the run header records of the lock."""
        if self.fd is None:
            return {"policy": self.policy, "held": False, "beside": [t.describe() for t in self.beside]}
        return {"policy": self.policy, "held": True, "waited_s": round(self.waited_s, 1)}

    def release(self) -> None:
        if self.registration is not None:
            self.registration.unlink(missing_ok=True)
            self.registration = None
        if self.fd is not None:
            os.close(self.fd)  # closing the last descriptor releases the flock
            self.fd = None

    def __enter__(self) -> TimingLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry (a container): the uid says enough
        return str(os.getuid())
