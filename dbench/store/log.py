"""The append-only run log: `results/<machine>/<run-id>.jsonl`, a header line then one line per
result, each flushed and fsynced the moment it exists so a killed run loses nothing finished.

Schema 2 adds the per-sample times (`samples_us`), the median's confidence interval and robust spread,
`first_call_us`, `runtime_median_us`, the load average when each row was written (`load_1m`), and the
machine key and load at the start in the header. Version-1 logs still open; they have no samples.

Schema 3 times every graph in rounds: a `{"type": "round"}` line is written as each round of a graph
finishes (so an interrupted run resumes mid-graph), and the result row carries the rounds' medians and
the intervals built from them. Version-2 rows have one round and an interval from samples only."""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dbench.errors import DbenchError, InputError

SCHEMA_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
RESULT_KEYS = {"allreduce": ("implementation", "dtype", "status")}
"""Per run kind, the text fields every reader of its result rows keys on; other kinds' rows are kernel
rows (dbench.store.schema.Row), with KERNEL_RESULT_KEYS (the report reads more: dbench.report.results)."""
KERNEL_RESULT_KEYS = ("graph_id", "status")


def new_run_id(kind: str = "run") -> str:
    """A sortable, unique run id: `<kind>-YYYYmmdd-HHMMSS-<4 hex>`."""
    return f"{kind}-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def ensure_writable(folder: Path) -> Path:
    """Create `folder` if needed and prove it is writable, before any work is done."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".dbench-write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise InputError(
            f"cannot write results to {folder}: {err.strerror}; choose another folder with --out"
        ) from None
    return folder


def resume_command(path: Path) -> str:
    """The command that finishes the run logged at `path` (`results/<machine>/<run>.jsonl`)."""
    out = path.parent.parent
    return f"dbench run --resume {path.stem}" + ("" if out == Path("results") else f" --out {out}")


class RunLock:
    """An advisory lock on one run log, so that two processes never append to it at once. The lock
    file beside the log holds the writer's pid, to name it when a second writer is refused."""

    def __init__(self, log: Path) -> None:
        self.run_id = log.stem
        self.path = log.with_name(f".{log.stem}.lock")
        self.fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise DbenchError(
                f"run {self.run_id} is being written by process {holder}; wait for it to finish or stop it, then resume"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self.fd)
            self.fd = None


class RunLog:
    """One run's JSONL log. Lines are {"type": "run", ...} (first), {"type": "round", ...} and
    {"type": "result", ...}.
    `read` opens it for reading only; `create` and `resume` open it for appending, under a lock,
    until `close`."""

    def __init__(self, path: Path, lock: RunLock | None = None) -> None:
        self.path = path
        self.lock = lock

    @classmethod
    def create(cls, folder: Path, run_id: str, header: dict[str, Any]) -> RunLog:
        ensure_writable(folder)
        path = folder / f"{run_id}.jsonl"
        if path.exists():
            raise DbenchError(f"run {run_id} already exists at {path}; finish it with: {resume_command(path)}")
        log = cls(path, RunLock(path))
        log.lock.acquire()
        log._write({"type": "run", "schema_version": SCHEMA_VERSION, "run_id": run_id, **header})
        return log

    @classmethod
    def read(cls, path: Path) -> RunLog:
        """An existing log, for reading only: nothing in the file is changed (a torn last line from a
        kill mid-write is skipped by `rows`)."""
        log = cls(path)
        version = log.header().get("schema_version")
        if version not in READABLE_VERSIONS:
            raise InputError(
                f"{path} has schema version {version}; this dbench reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))}: use a dbench that writes version {version}"
            )
        return log

    @classmethod
    def resume(cls, path: Path) -> RunLog:
        """An existing log, locked for appending. A torn last line (a kill mid-write) is moved to a
        `.torn` file beside the log before the appends go on, so no byte is lost."""
        log = cls.read(path)
        log.lock = RunLock(path)
        log.lock.acquire()
        try:
            log._set_torn_tail_aside()
        except BaseException:
            log.close()
            raise
        return log

    def _set_torn_tail_aside(self) -> None:
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end == len(data):
            return
        aside = self.path.with_suffix(f".torn-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}")
        aside.write_bytes(data[end:])
        with self.path.open("r+b") as fh:
            fh.truncate(end)

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the lock of a log opened for appending."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def _write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, default=str, allow_nan=True) + "\n"
        try:
            with self.path.open("a") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as err:
            raise DbenchError(
                f"cannot write to {self.path}: {err.strerror}; every finished row is kept: fix that, "
                f"then finish with: {resume_command(self.path)}"
            ) from None

    def append(self, row: dict[str, Any]) -> None:
        self._write({"type": "result", **row})

    def append_round(self, record: dict[str, Any]) -> None:
        """One round of one graph, as soon as it is measured (a row is written after its last round)."""
        self._write({"type": "round", **record})

    def _records(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Each complete line's number and record."""
        with self.path.open("rb") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.endswith(b"\n"):
                    return  # torn last line of a killed run
                try:
                    record = json.loads(line)
                except (UnicodeDecodeError, json.JSONDecodeError) as err:
                    reason = err.msg if isinstance(err, json.JSONDecodeError) else "not UTF-8 text"
                    raise InputError(
                        f"{self.path}, line {number} is not valid JSON ({reason}); the log is corrupt"
                    ) from None
                if not isinstance(record, dict):
                    raise InputError(f"{self.path}, line {number} is not a JSON object; the log is corrupt")
                yield number, record

    def header(self) -> dict[str, Any]:
        for _, record in self._records():
            if record.get("type") == "run":
                return record
            break
        raise InputError(
            f"{self.path} has no complete run header; it is not a dbench run log, or its run was "
            "killed before it began: start a new run"
        )

    def rows(self) -> list[dict[str, Any]]:
        """The result rows, each holding its kind's key fields as text (a hand-edited or foreign line is
        named, not fed to the tables)."""
        keys = RESULT_KEYS.get(self.header().get("kind"), KERNEL_RESULT_KEYS)
        rows = []
        for number, record in self._records():
            if record.get("type") != "result":
                continue
            missing = [key for key in keys if not isinstance(record.get(key), str)]
            if missing:
                raise InputError(
                    f"{self.path}, line {number} is a result row without {', '.join(map(repr, missing))} "
                    "as text; the log is corrupt (edited by hand?): restore it, or run again"
                )
            rows.append(record)
        return rows

    def torn(self) -> bool:
        """Whether the log ends in a torn line (its run was killed mid-write): `rows` leaves that row out."""
        with self.path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return False
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) != b"\n"

    def torn_note(self) -> str | None:
        """One line saying the log is incomplete and how to complete it, or None."""
        if not self.torn():
            return None
        return (
            f"{self.path} ends in a torn line (its run was killed mid-write): that row is left out; "
            f"{resume_command(self.path)} completes the run"
        )

    def rounds(self) -> list[dict[str, Any]]:
        """The round records, in the order they were measured."""
        return [r for _, r in self._records() if r.get("type") == "round"]


def find_run(results: Path, run_id: str) -> Path:
    """The log of `run_id` under `results/` (any machine folder), or a clear error."""
    if not run_id.strip():
        raise InputError(
            f"an empty run id names no run; give the id a run printed (run-YYYYmmdd-HHMMSS-xxxx), "
            f"as in the file names under {results}/<machine>/"
        )
    matches = sorted(results.glob(f"*/{run_id}.jsonl")) + sorted(results.glob(f"{run_id}.jsonl"))
    if not matches:
        raise InputError(
            f"unknown run {run_id!r}: no {run_id}.jsonl under {results}; see the file names in {results}/<machine>/"
        )
    return matches[0]
