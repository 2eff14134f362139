"""What runs on a fleet machine, inside its Dask worker: the machine's own `dbench run` of the caller's
request (its key, its runtime's checks, its estimate from what the caller's folder holds for it), with
every round and row sent to the caller as it is made instead of written here. The caller's log is the
one truth: a resumed assignment carries what that log holds, so no row is made twice.

One timing job per machine: the caller sends one assignment per machine key, and the machine-wide timing
lock every timing dbench takes (dbench.orchestrator.lock) makes a second (another fleet, a stale attempt
still stopping, a local `dbench run`) wait for the first."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dbench.errors import DbenchError, InputError
from dbench.orchestrator.estimate import Earlier
from dbench.sources.item import Item
from dbench.store.history import History
from dbench.store.schema import Row

if TYPE_CHECKING:
    from dbench.orchestrator.lock import TimingLock

LOCK_WAIT_S = 120.0
"""How long an assignment waits for the machine's timing lock (a stale attempt stops at its next graph)."""
PROGRESS_EVERY_S = 0.5


class Stopped(DbenchError):
    """The caller cancelled this machine's assignment (Ctrl-C, or the caller is gone): stop at once."""


@dataclass(frozen=True)
class Assignment:
    """One machine's part of a fleet run, as the caller sends it."""

    fleet_id: str
    queue: str
    key: str
    """The machine key the caller expects this worker to have."""
    run_id: str
    attempt: int
    request: dict[str, Any]
    log_path: str
    """The log on the caller's side (named in messages, never written here)."""
    command: list[str]
    bundle_sha256: str | None = None
    earlier: Earlier | None = None
    history: History | None = None
    resume: dict[str, Any] | None = None
    """The caller's log as it stands: `header`, `rows`, `rounds` (None: a new run)."""


def message(kind: str, assignment: Assignment, body: Any) -> str:
    """One message to the caller, as JSON text (Dask's queue carries msgpack-encodable data)."""
    return json.dumps(
        {"kind": kind, "machine": assignment.key, "attempt": assignment.attempt, "body": body},
        default=str,
        allow_nan=True,
    )


class StreamLog:
    """The run log as the Runner sees it, each record sent to the caller (who writes it) the moment it
    exists; `put` returns once the scheduler holds it, so a machine that dies loses nothing sent."""

    def __init__(self, send: Callable[[str, Any], None], path: str) -> None:
        self.send = send
        self.path = Path(path)

    def append(self, row: dict[str, Any]) -> None:
        self.send("row", row)

    def append_round(self, record: dict[str, Any]) -> None:
        self.send("round", record)


def take_timing_lock(run_id: str, log_path: str, wait_s: float, waiting: Callable[[str], None]) -> TimingLock:
    """The machine-wide timing lock every dbench that times takes (dbench.orchestrator.lock), so that this
    fleet job never times beside a local `dbench run` or a second fleet: waited for up to `wait_s`, checking
    for cancellation, each wait said to the caller; a DbenchError naming the holder after that."""
    from dbench.orchestrator.lock import TimingBusy, TimingLock

    deadline = time.monotonic() + wait_s
    said = ""
    while True:
        try:
            return TimingLock(f"fleet {run_id}", str(Path(log_path).parent), "refuse").acquire()
        except TimingBusy as busy:
            holder = str(busy).split(";")[0]
            if cancelled():
                raise Stopped("stopped while waiting for the machine's timing lock") from None
            if time.monotonic() > deadline:
                raise DbenchError(
                    f"{holder} still, after {wait_s:.0f} s; run the fleet again when it is done"
                ) from None
            if holder != said:
                waiting(holder)
                said = holder
            time.sleep(0.5)


def cancelled() -> bool:
    """Whether the caller no longer wants the task running in this thread (cancelled, or released
    because the caller is gone): the worker's own record of it, read without a message."""
    from distributed import get_worker
    from distributed.worker import thread_state

    key = getattr(thread_state, "key", None)
    task = get_worker().state.tasks.get(key) if key is not None else None
    return task is None or task.state != "executing"


def place_bundle(sha256: str, data: bytes) -> Path:
    """The caller's bundle on this machine, at a path named by its content (a resumed assignment finds
    the same file); its checksum is checked, and the bundle is verified whole again when it is read."""
    if hashlib.sha256(data).hexdigest() != sha256:
        raise InputError("the bundle arrived changed (its SHA-256 differs from the caller's); run again")
    from dbench.cache.store import cache_root

    folder = cache_root() / "fleet" / "bundles"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sha256}.tar.gz"
    if not path.is_file():
        partial = path.with_suffix(f".partial-{os.getpid()}")
        partial.write_bytes(data)
        partial.replace(path)
    return path


class MachineObserver:
    """The Runner's observer on a fleet machine: progress to the caller (graphs done, the estimate's
    seconds spent, the current round and graph), at most every PROGRESS_EVERY_S but at once for a row,
    and a stop as soon as the caller cancelled."""

    def __init__(self, send: Callable[[str, Any], None], jobs: dict[tuple[str, str, int], float], done: int) -> None:
        self.send, self.jobs, self.done = send, jobs, done
        self.spent, self.current, self.round, self.last = 0.0, None, 0, 0.0

    def _progress(self, graph: str = "", force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            self.send("progress", {"rows": self.done, "spent_s": self.spent, "round": self.round, "graph": graph})

    def _finish_job(self) -> None:
        if self.current is not None:
            self.spent += self.jobs.get(self.current, 0.0)
            self.current = None

    def on_round(self, number: int, rounds: int, jobs: int) -> None:
        self._finish_job()
        self.round = number

    def on_start(self, item: Item, variant: str) -> None:
        if cancelled():
            raise Stopped("the caller stopped this machine's run")
        self._finish_job()
        self.current = (item.spec.id, variant, self.round - 1)
        self._progress(item.spec.id)

    def on_phase(self, item: Item, phase: str) -> None:
        pass

    def on_row(self, row: Row) -> None:
        self.done += 1
        self._progress(row.graph_id, force=True)


def run_assignment(assignment: Assignment, bundle: bytes | None = None) -> dict[str, Any]:
    """Run this machine's part: check the key, take the machine's lock, plan as `dbench run` would (or
    resume from the caller's log), time, and send every round and row; returns the run's counts and
    what sending cost it (messages, seconds spent waiting for the scheduler to take them)."""
    from distributed import Queue

    from dbench.store.metadata import machine_name

    key = machine_name()
    if key != assignment.key:
        raise DbenchError(f"this worker is machine {key}, not {assignment.key}; the cluster changed meanwhile")
    queue = Queue(assignment.queue)
    sent = {"messages": 0, "seconds": 0.0}

    def send(kind: str, body: Any) -> None:
        start = time.perf_counter()
        queue.put(message(kind, assignment, body))
        sent["messages"] += 1
        sent["seconds"] += time.perf_counter() - start

    lock = take_timing_lock(
        assignment.run_id, assignment.log_path, LOCK_WAIT_S, lambda holder: send("waiting", {"lock": holder})
    )
    try:
        return {**_run(assignment, bundle, send, lock), "messages": sent["messages"], "send_s": sent["seconds"]}
    finally:
        lock.release()


def _run(
    assignment: Assignment, bundle: bytes | None, send: Callable[[str, Any], None], lock: TimingLock
) -> dict[str, Any]:
    from dbench.orchestrator.request import RunRequest, validate
    from dbench.orchestrator.run import fit_request, plan_estimate, run_header
    from dbench.orchestrator.runner import Runner, RunState
    from dbench.orchestrator.shard import part_of
    from dbench.sources.resolve import build_items, source_kind

    started = time.monotonic()
    path = Path(assignment.log_path)
    request = RunRequest.from_dict(assignment.request, path)
    if assignment.bundle_sha256 is not None:
        request = dataclasses.replace(request, graphs=str(place_bundle(assignment.bundle_sha256, bundle or b"")))
    if assignment.resume is None:
        request = request.compare_rounds()
    classes = validate(request)
    config = request.config()
    items = build_items(request, classes[config.variants[0].runtime].int8_form)
    resume = assignment.resume
    items, part = part_of(request, config, items, resume["header"].get("shard") if resume else None)
    notes: list[str] = []
    if resume is not None:
        state = RunState.from_log(resume["rows"], resume["rounds"], config.variants[0].label)
    else:
        state = RunState()
        if request.budget is not None:
            request, notes = fit_request(request, config, items, path.parent, assignment.earlier)
            config = request.config()
    estimate = plan_estimate(items, config, path.parent, state, assignment.earlier)
    if resume is None:
        extra = {
            "kind": source_kind(request.graphs).run_kind,
            "fleet": {"id": assignment.fleet_id},
            **({"shard": part.to_dict()} if part else {}),
        }
        send("header", run_header(request, config, classes, items, estimate, extra, notes, assignment.command, lock))
    rows_total = len(items) * len(config.variants)
    send(
        "plan",
        {
            "rows_total": rows_total,
            "rows_done": len(state.finished),
            "estimate_s": estimate.total_s,
            "jobs_s": sum(estimate.jobs.values()),
            "describe": estimate.describe(),
            "notes": notes,
        },
    )
    runner = Runner(config, classes, StreamLog(send, assignment.log_path), assignment.run_id, assignment.history, lock)
    made = runner.run(items, state, MachineObserver(send, estimate.jobs, len(state.finished)))
    return {"rows": len(made), "rows_total": rows_total, "wall_s": time.monotonic() - started}
