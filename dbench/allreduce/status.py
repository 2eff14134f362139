"""Per-rank status files: how the launcher tells which rank failed, and how, after mpiexec returns."""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path

LAUNCH_FILE = "launch.json"


@dataclass(frozen=True)
class RankStatus:
    """One rank's state: running (started, not finished), done (with its exit code) or failed (crashed)."""

    rank: int
    pid: int
    host: str
    state: str
    code: int = 0
    error: str = ""


def write_status(folder: Path | None, rank: int, state: str, code: int = 0, error: str = "") -> None:
    """Atomically (re)write rank `rank`'s status file in `folder`; no-op when not started by the launcher."""
    if folder is None:
        return
    status = RankStatus(rank, os.getpid(), socket.gethostname(), state, code, error)
    path = folder / f"rank-{rank}.json"
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(asdict(status)))
    os.replace(temporary, path)


def read_statuses(folder: Path) -> dict[int, RankStatus]:
    """Every status file in `folder`, by rank."""
    statuses = [RankStatus(**json.loads(p.read_text())) for p in folder.glob("rank-*.json")]
    return {s.rank: s for s in statuses}


def read_launch(folder: Path | None) -> dict:
    """What the launcher recorded about itself (its command line, the mpiexec command), if anything."""
    if folder is None or not (folder / LAUNCH_FILE).exists():
        return {}
    return json.loads((folder / LAUNCH_FILE).read_text())
