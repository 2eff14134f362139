"""The caller's side of a fleet run: check the request, find the cluster's machines, send each its
assignment, write every round and row it sends into `<out>/<machine key>/<run-id>.jsonl` as it arrives
(a row already there is never written twice), watch for machines that leave and come back, and end
with each machine's state. The fleet's own record, `<out>/fleets/<fleet-id>.json`, names its machines
and their runs, so `--resume FLEET-ID` finishes what is left. No terminal output: the caller passes an
observer."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dbench.errors import DbenchError, InputError, UsageError
from dbench.fleet.engine import check_address, connect, require_distributed
from dbench.fleet.machines import Member, members, one_per_machine, refusal
from dbench.fleet.task import Assignment, Stopped, run_assignment
from dbench.orchestrator.request import RunRequest, check_combinations, check_numbers, check_resume, check_shard
from dbench.outcome import PASSING, Status
from dbench.store.log import RunLog, ensure_writable, new_run_id

POLL_S = 0.5
"""How often the cluster's membership is read (a machine that leaves is seen within this)."""
WAIT_S = 120.0
"""How long, once every other machine is done, the fleet waits for machines that left to come back."""
FAILING_EXIT_CODE = 3
INCOMPLETE_EXIT_CODE = 1
ENDED = ("finished", "failed", "refused", "stopped", "lost")


@dataclass
class Machine:
    """One machine of the fleet, as the caller follows it."""

    key: str
    run_id: str
    path: Path
    member: Member | None = None
    status: str = "waiting"
    """waiting | running | dropped (left; may come back) | finished | failed | refused | stopped
    | lost (never came back)"""
    message: str = ""
    attempt: int = 0
    future: Any = None
    log: RunLog | None = None
    finished: set[tuple[str, str]] = field(default_factory=set)
    rounds: set[tuple[str, str, int]] = field(default_factory=set)
    statuses: Counter = field(default_factory=Counter)
    rows_total: int = 0
    jobs_s: float = 0.0
    spent_s: float = 0.0
    graph: str = ""
    plan: str = ""
    drops: int = 0
    duplicates: int = 0
    dropped_at: float | None = None
    started_at: float | None = None
    wall_s: float = 0.0
    send_s: float = 0.0
    """Seconds the machine's run spent handing messages to the scheduler (the fleet's cost to its timing)."""
    messages: int = 0
    exports_note: str = ""

    @property
    def rows_done(self) -> int:
        return len(self.finished)


class FleetObserver(Protocol):
    """What follows a fleet run as it goes (the terminal's display; tests)."""

    def on_machine(self, machine: Machine) -> None:
        """A machine changed state (started, left, came back, finished, failed...)."""

    def on_progress(self, machine: Machine) -> None:
        """A machine's progress moved (graphs done, the estimate's seconds spent, the graph it times)."""

    def on_row(self, machine: Machine, row: dict[str, Any]) -> None:
        """A row of the machine is in its log."""


@dataclass
class FleetPlan:
    """A checked fleet run, connected to its cluster, with its record written."""

    fleet_id: str
    address: str
    request: RunRequest
    out_dir: Path
    client: Any
    machines: dict[str, Machine]
    wait_s: float
    wanted: set[tuple[str, str]]
    """(graph id, runtime) pairs the estimate looks up in each machine's earlier rows."""
    bundle: tuple[str, bytes] | None = None
    bundle_path: str | None = None
    command: list[str] = field(default_factory=lambda: list(sys.argv))
    notes: list[str] = field(default_factory=list)

    @property
    def record_path(self) -> Path:
        return self.out_dir / "fleets" / f"{self.fleet_id}.json"

    def write_record(self) -> None:
        """The fleet's record: request, cluster, bundle and every machine's run and state (replaced whole)."""
        record = {
            "fleet_id": self.fleet_id,
            "address": self.address,
            "request": dataclasses.asdict(self.request),
            "bundle": {"path": self.bundle_path, "sha256": self.bundle[0]} if self.bundle else None,
            "command": self.command,
            "machines": {
                m.key: {
                    "run_id": m.run_id,
                    "log": str(m.path),
                    "status": m.status,
                    "message": m.message,
                    "rows": m.rows_done,
                    "wall_s": m.wall_s,
                    "send_s": m.send_s,
                    "messages": m.messages,
                }
                for m in self.machines.values()
            },
        }
        path = ensure_writable(self.record_path.parent) / self.record_path.name
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(record, indent=1, default=str))
        partial.replace(path)


@dataclass
class FleetResult:
    """A fleet run as it ended: every machine's state, rows and log."""

    fleet_id: str
    machines: list[Machine]
    record: Path
    resume_command: str
    interrupted: bool = False
    """Ended by Ctrl-C or SIGTERM (exit 130)."""

    @property
    def exit_code(self) -> int:
        """1 when a machine did not finish (left and never came back, failed, refused, stopped), else 3 when
        any row is mismatch, failed, crashed, timeout or oom, else 0."""
        if any(m.status != "finished" for m in self.machines):
            return INCOMPLETE_EXIT_CODE
        failing = any(Status(s) not in PASSING for m in self.machines for s in m.statuses)
        return FAILING_EXIT_CODE if failing else 0


def check_request(request: RunRequest) -> None:
    """What the caller can check for every machine: the selection's combinations, the shard, the numbers
    (thread counts and scenario ranges depend on each machine's cores: each machine checks them), and
    the sources a fleet can send (the catalog, or a bundle: a file every machine gets the same bytes of)."""
    if request.kernels:
        raise UsageError(
            "--fleet sends graphs to every machine as a bundle: make one with dbench export --kernels FILE "
            "--out b.tar.gz, then give --graphs b.tar.gz"
        )
    if request.graphs and not Path(request.graphs).is_file():
        raise UsageError(
            f"--fleet sends a bundle archive to every machine, and --graphs {request.graphs} is a folder; "
            "make one with dbench export ... --out bundle.tar.gz"
        )
    if request.shard is not None:
        raise UsageError(
            "--shard splits a selection over the copies a scheduler starts, and --fleet runs the whole "
            "selection on every machine; drop one of them"
        )
    check_numbers(dataclasses.replace(request, threads=None))
    check_shard(request)
    check_combinations(request)


def _items(request: RunRequest) -> set[tuple[str, str]]:
    """The (graph id, runtime) pairs of the request, built here as every machine will (a bundle is verified
    whole); a selection that names no graph is refused before any machine starts."""
    from dbench.runtimes.registry import runtime_class
    from dbench.sources.resolve import build_items

    runtimes = request.runtimes()
    if not all(runtimes):
        raise UsageError(f"--runtime {request.runtime!r} names no runtime between its commas; see dbench runtimes")
    classes = {name: runtime_class(name) for name in runtimes}
    items = build_items(request, classes[runtimes[0]].int8_form)
    return {(item.spec.id, name) for item in items for name in runtimes}


def _bundle(request: RunRequest) -> tuple[str, bytes] | None:
    if not request.graphs:
        return None
    data = Path(request.graphs).read_bytes()
    return hashlib.sha256(data).hexdigest(), data


def read_record(out_dir: Path, fleet_id: str) -> dict[str, Any]:
    path = out_dir / "fleets" / f"{fleet_id}.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"unknown fleet {fleet_id!r}: no {path}; see the fleets in {out_dir / 'fleets'}") from None
    except (OSError, json.JSONDecodeError) as err:
        raise InputError(f"{path} cannot be read ({err}); it is not a fleet record this dbench wrote") from None


def plan_fleet(
    request: RunRequest, address: str, out_dir: Path, resume: str | None, wait_s: float = WAIT_S
) -> FleetPlan:
    """Check the request (or take it from the fleet's record on --resume), connect, and list the machines:
    one per machine key; a machine that cannot serve this caller is refused with its reason."""
    require_distributed()
    check_address(address)
    if not (wait_s >= 0 and wait_s <= 86400):
        raise UsageError(f"--fleet-wait {wait_s:g} must be 0 to 86400 seconds")
    record = None
    if resume is not None:
        check_resume(request)
        record = read_record(out_dir, resume)
        request = RunRequest.from_dict(record["request"], out_dir / "fleets" / f"{resume}.json")
        if record.get("bundle"):
            request = dataclasses.replace(request, graphs=record["bundle"]["path"])
    check_request(request)
    wanted = _items(request)
    bundle = _bundle(request)
    if record and record.get("bundle") and bundle and bundle[0] != record["bundle"]["sha256"]:
        raise InputError(
            f"{request.graphs} changed since the fleet began (its SHA-256 differs); put the bundle back as "
            "it was to resume, or start a new fleet"
        )
    ensure_writable(out_dir)
    client = connect(address)
    try:
        found = members(client, {})
        chosen = one_per_machine(found)
        fleet_id = resume or new_run_id("fleet")
        machines: dict[str, Machine] = {}
        if record is None:
            if not chosen:
                problems = sorted({m.problem for m in found.values() if m.problem})
                raise InputError(
                    f"the cluster at {address} has no worker that can serve"
                    + (f" ({problems[0]})" if problems else "")
                    + f"; join a machine with: dask worker {address} --nthreads 1"
                )
            for key, member in sorted(chosen.items()):
                run_id = new_run_id()
                machines[key] = Machine(key, run_id, out_dir / key / f"{run_id}.jsonl", member)
                if why := refusal(member):
                    machines[key].status, machines[key].message = "refused", why
        else:
            for key, entry in record["machines"].items():
                machines[key] = _resumed(key, entry, chosen.get(key))
        plan = FleetPlan(
            fleet_id,
            address,
            request,
            out_dir,
            client,
            machines,
            wait_s,
            wanted,
            bundle,
            request.graphs if bundle else None,
        )
        if record is not None:
            plan.command = record.get("command", plan.command)
            extra = sorted(set(chosen) - set(machines))
            if extra:
                plan.notes.append(
                    f"{len(extra)} machine(s) joined after the fleet began and are not part of it: {', '.join(extra)}"
                )
        plan.write_record()
        return plan
    except BaseException:
        for machine in locals().get("machines", {}).values():
            if machine.log is not None:
                machine.log.close()
        client.close()
        raise


def _resumed(key: str, entry: dict[str, Any], member: Member | None) -> Machine:
    """A machine of a resumed fleet: its log reopened (locked; a torn last line set aside) with what it
    holds; finished when every row is there; dropped (waiting to come back) when it is not in the cluster."""
    path = Path(entry["log"])
    machine = Machine(key, entry["run_id"], path, member)
    if path.is_file():
        machine.log = RunLog.resume(path)
        _load(machine)
        header = machine.log.header()
        machine.rows_total = header.get("graphs", 0) * max(1, len(header.get("variants", [])))
        if machine.rows_total and machine.rows_done >= machine.rows_total:
            machine.status = "finished"
            machine.log.close()
            return machine
    if member is None:
        machine.status, machine.dropped_at = "dropped", time.monotonic()
        machine.message = "not in the cluster now"
    elif why := refusal(member):
        machine.status, machine.message = "refused", why
    return machine


def _load(machine: Machine) -> None:
    """What a machine's log already holds: rows, rounds, statuses."""
    for row in machine.log.rows():
        machine.finished.add((row["graph_id"], row.get("variant") or ""))
        machine.statuses[row["status"]] += 1
    for record in machine.log.rounds():
        machine.rounds.add((record["graph_id"], record.get("variant") or "", record.get("round", 0)))


class Fleet:
    """Drives a planned fleet to its end (see the module)."""

    def __init__(self, plan: FleetPlan, observer: FleetObserver) -> None:
        from distributed import Queue

        self.plan, self.observer = plan, observer
        self.client = plan.client
        self.queue = Queue(f"dbench-{plan.fleet_id}", client=self.client)
        self.known: dict[str, Member] = {m.member.address: m.member for m in plan.machines.values() if m.member}

    def run(self) -> FleetResult:
        plan = self.plan
        interrupted = False
        try:
            for machine in plan.machines.values():
                if machine.status == "waiting":
                    self._submit(machine)
                self.observer.on_machine(machine)
            self._loop()
        except KeyboardInterrupt:
            interrupted = True
            self._drain(0)
            for machine in plan.machines.values():
                if machine.status in ("running", "waiting", "dropped"):
                    self._end(machine, "stopped", "stopped by Ctrl-C or SIGTERM")
        finally:
            self._close()
        return FleetResult(
            plan.fleet_id, list(plan.machines.values()), plan.record_path, self.resume_command(), interrupted
        )

    def resume_command(self) -> str:
        out = "" if self.plan.out_dir == Path("results") else f" --out {self.plan.out_dir}"
        return f"dbench run --fleet {self.plan.address} --resume {self.plan.fleet_id}{out}"

    def _loop(self) -> None:
        idle_since: float | None = None
        while True:
            self._drain(POLL_S)
            self._check_futures()
            self._check_members()
            running = [m for m in self.plan.machines.values() if m.status == "running"]
            dropped = [m for m in self.plan.machines.values() if m.status == "dropped"]
            if running:
                idle_since = None
                continue
            if not dropped:
                return
            idle_since = idle_since or time.monotonic()
            latest = max([idle_since, *(m.dropped_at or 0.0 for m in dropped)])
            if time.monotonic() - latest >= self.plan.wait_s:
                for machine in dropped:
                    self._end(machine, "lost", f"left the cluster and did not come back within {self.plan.wait_s:g} s")
                return

    def _submit(self, machine: Machine) -> None:
        """Send the machine its assignment: new, or resumed from what its log holds."""
        from dbench.orchestrator.estimate import Earlier
        from dbench.store.history import HISTORY_RUNS, read_history

        plan = self.plan
        folder = plan.out_dir / machine.key
        runs = HISTORY_RUNS if plan.request.history is None else plan.request.history
        resume = None
        if machine.log is not None:
            resume = {"header": machine.log.header(), "rows": machine.log.rows(), "rounds": machine.log.rounds()}
        request = dataclasses.replace(plan.request, graphs=None) if plan.bundle else plan.request
        machine.attempt += 1
        assignment = Assignment(
            plan.fleet_id,
            self.queue.name,
            machine.key,
            machine.run_id,
            machine.attempt,
            dataclasses.asdict(request),
            str(machine.path),
            plan.command,
            plan.bundle[0] if plan.bundle else None,
            Earlier.read(folder, plan.wanted),
            read_history(folder, machine.run_id, runs) if runs else None,
            resume,
        )
        address = machine.member.address
        data = self.client.scatter(plan.bundle[1], workers=[address], hash=False) if plan.bundle else None
        machine.future = self.client.submit(
            run_assignment,
            assignment,
            data,
            workers=[address],
            allow_other_workers=False,
            pure=False,
            key=f"dbench-{plan.fleet_id}-{machine.key}-{machine.attempt}",
        )
        machine.status, machine.message, machine.dropped_at = "running", "", None
        machine.started_at = machine.started_at or time.monotonic()
        plan.write_record()

    def _drain(self, block_s: float) -> None:
        """Every message the machines sent, in order; waits up to `block_s` for the first."""
        messages = []
        if block_s > 0:
            try:
                messages.append(self.queue.get(timeout=block_s))
            except (TimeoutError, asyncio.TimeoutError):
                return
        messages += self.queue.get(batch=True)
        for text in messages:
            self._handle(json.loads(text))

    def _handle(self, message: dict[str, Any]) -> None:
        machine = self.plan.machines.get(message["machine"])
        if machine is None or message["attempt"] != machine.attempt:
            return  # a stale attempt's word: the current one's log state is what counts
        kind, body = message["kind"], message["body"]
        if kind == "header":
            machine.log = RunLog.create(self.plan.out_dir / machine.key, machine.run_id, body)
            self.plan.write_record()
        elif kind == "plan":
            machine.rows_total, machine.plan = body["rows_total"], body["describe"]
            machine.spent_s, machine.jobs_s = 0.0, body["jobs_s"]
            self.observer.on_machine(machine)
        elif kind == "round":
            key = (body["graph_id"], body.get("variant") or "", body.get("round", 0))
            if key not in machine.rounds and machine.log is not None:
                machine.log.append_round(body)
                machine.rounds.add(key)
        elif kind == "row":
            key = (body["graph_id"], body.get("variant") or "")
            if key in machine.finished or machine.log is None:
                machine.duplicates += 1
                return
            machine.log.append(body)
            machine.finished.add(key)
            machine.statuses[body["status"]] += 1
            self.observer.on_row(machine, body)
        elif kind == "progress":
            machine.spent_s, machine.graph = body["spent_s"], body["graph"]
            self.observer.on_progress(machine)
        elif kind == "waiting":
            machine.graph = f"waiting for {body['lock']}"
            self.observer.on_progress(machine)

    def _check_futures(self) -> None:
        for machine in self.plan.machines.values():
            if machine.status != "running" or machine.future.status == "pending":
                continue
            self._drain(0)  # everything sent before the task ended is in the queue
            if machine.future.status == "finished":
                summary = machine.future.result()
                machine.wall_s += summary["wall_s"]
                machine.send_s += summary["send_s"]
                machine.messages += summary["messages"]
                self._end(machine, "finished", "")
            elif machine.future.status == "error":
                error = machine.future.exception()
                if isinstance(error, Stopped):
                    self._end(machine, "stopped", str(error))
                elif isinstance(error, DbenchError):
                    self._end(machine, "failed", str(error))
                else:
                    self._drop(machine, f"its worker failed: {type(error).__name__}: {error}")

    def _check_members(self) -> None:
        """Machines whose worker left are dropped; a dropped machine whose key is back resumes."""
        found = members(self.client, self.known)
        self.known = found
        chosen = one_per_machine(found)
        for machine in self.plan.machines.values():
            if machine.status == "running" and machine.member.address not in found:
                self._drain(0)
                self._drop(machine, "its worker left the cluster")
            elif machine.status == "dropped" and machine.key in chosen:
                machine.member = chosen[machine.key]
                if why := refusal(machine.member):
                    self._end(machine, "refused", why)
                    continue
                self._submit(machine)
                self.observer.on_machine(machine)

    def _drop(self, machine: Machine, why: str) -> None:
        machine.future.cancel()
        machine.status, machine.message, machine.dropped_at = "dropped", why, time.monotonic()
        machine.drops += 1
        self.plan.write_record()
        self.observer.on_machine(machine)

    def _end(self, machine: Machine, status: str, message: str) -> None:
        """A machine's end: its log exported (Parquet and CSV beside it) when finished, and released."""
        from dbench.store.export import export_run

        if machine.future is not None and status != "finished":
            machine.future.cancel()
        machine.status, machine.message = status, message
        if machine.log is not None:
            if status == "finished":
                machine.exports_note = export_run(machine.log)[1]
            machine.log.close()
        self.plan.write_record()
        self.observer.on_machine(machine)

    def _close(self) -> None:
        for machine in self.plan.machines.values():
            if machine.future is not None and machine.status != "finished":
                machine.future.cancel()
            if machine.log is not None:
                machine.log.close()
        self.plan.write_record()
        try:
            self.queue.close()
        finally:
            self.client.close()


def execute_fleet(plan: FleetPlan, observer: FleetObserver) -> FleetResult:
    """Run a planned fleet to its end (every machine finished, failed, refused, stopped, or gone for
    longer than --fleet-wait) and return each machine's state."""
    return Fleet(plan, observer).run()
