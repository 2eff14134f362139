"""The append-only run log: `results/<machine>/<run-id>.jsonl`, a header line then one line per
result, each flushed and fsynced the moment it exists so a killed run loses nothing finished.

Schema 2 adds the per-sample times (`samples_us`), the median's confidence interval and robust spread,
`first_call_us`, `runtime_median_us`, the load average when each row was written (`load_1m`), and the
machine key and load at the start in the header. Version-1 logs still open; they have no samples."""

from __future__ import annotations

import json
import os
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from dbench.errors import DbenchError

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)


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
        raise DbenchError(f"cannot write results to {folder}: {err.strerror}; choose another folder with --out") from None
    return folder


class RunLog:
    """One run's JSONL log. Lines are {"type": "run", ...} (first) and {"type": "result", ...}."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, folder: Path, run_id: str, header: dict[str, Any]) -> "RunLog":
        ensure_writable(folder)
        log = cls(folder / f"{run_id}.jsonl")
        if log.path.exists():
            raise DbenchError(f"run {run_id} already exists at {log.path}; use --resume {run_id} to complete it")
        log._write({"type": "run", "schema_version": SCHEMA_VERSION, "run_id": run_id, **header})
        return log

    @classmethod
    def open(cls, path: Path) -> "RunLog":
        """An existing log, its torn last line (from a kill mid-write) cut off so appends stay valid."""
        log = cls(path)
        log._repair()
        version = log.header().get("schema_version")
        if version not in READABLE_VERSIONS:
            raise DbenchError(f"{path} has schema version {version}; this dbench reads versions "
                              f"{', '.join(map(str, READABLE_VERSIONS))}: use a dbench that writes version {version}")
        return log

    def _repair(self) -> None:
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end != len(data):
            with self.path.open("r+b") as fh:
                fh.truncate(end)

    def _write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, default=str, allow_nan=True) + "\n"
        with self.path.open("a") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def append(self, row: dict[str, Any]) -> None:
        self._write({"type": "result", **row})

    def _records(self) -> Iterator[dict[str, Any]]:
        with self.path.open() as fh:
            for number, line in enumerate(fh, start=1):
                if not line.endswith("\n"):
                    return  # torn last line of a killed run
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as err:
                    raise DbenchError(f"{self.path}, line {number} is not valid JSON ({err.msg}); the log is corrupt") from None

    def header(self) -> dict[str, Any]:
        for record in self._records():
            if record.get("type") == "run":
                return record
            break
        raise DbenchError(f"{self.path} has no run header; it is not a dbench run log")

    def rows(self) -> list[dict[str, Any]]:
        return [r for r in self._records() if r.get("type") == "result"]


def find_run(results: Path, run_id: str) -> Path:
    """The log of `run_id` under `results/` (any machine folder), or a clear error."""
    matches = sorted(results.glob(f"*/{run_id}.jsonl")) + sorted(results.glob(f"{run_id}.jsonl"))
    if not matches:
        raise DbenchError(f"unknown run {run_id!r}: no {run_id}.jsonl under {results}; see the file names in {results}/<machine>/")
    return matches[0]
