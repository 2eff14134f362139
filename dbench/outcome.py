"""What one graph's measurement came to, on both sides of the process boundary: the row's `Status`,
the worker's `Outcome` and its `Phase` reports. A low module (standard library only), so the worker
that makes outcomes and the store that turns them into rows both import it and neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dbench.stats.records import RoundStats


class Status(str, Enum):
    """A row's verdict; the value is what the log stores."""

    OK = "ok"
    UNSUPPORTED = "unsupported"
    MISMATCH = "mismatch"
    DISPUTED = "disputed"
    FAILED = "failed"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    OOM = "oom"

    def __str__(self) -> str:
        return self.value


PASSING = frozenset({Status.OK, Status.UNSUPPORTED, Status.DISPUTED})
"""Statuses of an honest run: measured and verified, refused by the runtime with its reason, or
measured with the reference overruled (two independent runtimes agree with each other against it:
the time is valid and the row says which implementations agreed)."""
MEASURED = frozenset({Status.OK, Status.DISPUTED})
"""Statuses whose time stands: a disputed graph was measured like an ok one (only its reference was
overruled), so it gets every round an ok graph gets."""


@dataclass
class Outcome:
    """What the worker measured for one Job: status, message, statistics, verdict, profile, memory.
    `aborts_run`: the runtime cannot start as configured, so no later job can run either."""

    status: Status
    message: str = ""
    stats: RoundStats | None = None
    """What the round measured (a worker's outcome is one round)."""
    figures: dict[str, Any] | None = None
    """A graph's row figures over all its rounds: made by the parent when it combines them (dbench.stats.summary,
    dbench.stats.throughput); None in a round's outcome."""
    verification: dict[str, Any] | None = None
    nodes: list[dict[str, Any]] = field(default_factory=list)
    peak_rss_bytes: int | None = None
    memory_bytes: int | None = None
    device_memory_bytes: int | None = None
    device_median_us: float | None = None
    device_graph_median_us: float | None = None
    gpu_state: dict[str, Any] | None = None
    runtime_options: dict[str, Any] | None = None
    inputs_s: float | None = None
    prepare_s: float | None = None
    verify_s: float | None = None
    profile_s: float | None = None
    profile_call_us: float | None = None
    """The profiling pass's own time per call, on the clock that brackets its node times."""
    aborts_run: bool = False
    executed_form: str = ""
    """An attention graph's form as the runtime executed it (dbench.worker.attention_form); empty otherwise."""


@dataclass(frozen=True)
class Phase:
    """Sent by the worker before an Outcome as each phase of a job begins, so that a kernel that takes
    minutes shows what it is doing; each one restarts the parent's `--timeout` clock."""

    name: str


def failure_outcome(err: Exception) -> Outcome:
    """The outcome of a job whose runtime raised `err`: unsupported, oom or failed with its message; an
    error no adapter classified says its type and first line (a worker answers, it does not raise)."""
    from dbench.errors import DbenchError, OutOfMemory, UnsupportedError

    if isinstance(err, UnsupportedError):
        return Outcome(Status.UNSUPPORTED, str(err))
    if isinstance(err, (OutOfMemory, MemoryError)):
        return Outcome(Status.OOM, str(err) or type(err).__name__)
    if isinstance(err, DbenchError):
        return Outcome(Status.FAILED, str(err))
    text = str(err).strip()
    return Outcome(Status.FAILED, f"{type(err).__name__}: {text.splitlines()[0] if text else ''}")
