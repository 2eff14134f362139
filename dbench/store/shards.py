"""The parts of a sharded run (`dbench run --shard i/N`, each its own log) as one logical run, for
`report` and `compare`. A part's header holds `shard`: its index, the count, the label every part of the
run shares and the split's fingerprint (dbench.orchestrator.shard). Parts merge when they share label,
count and split; a part named twice keeps its newest log; a missing part is named. Parts that ran on
several nodes of one hardware (the same CPU, cores, memory, ISA and GPUs: a Slurm partition) show as
one machine, the first part's; parts on different hardware stay apart by machine, with a note."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbench.errors import DbenchError
from dbench.store.log import RunLog

HARDWARE = ("microarchitecture", "isa", "cpu_model", "cpu_affinity", "gpus")
"""The host fields that must agree for nodes to count as one machine (memory is compared in GiB)."""


def part_of(header: dict[str, Any]) -> dict[str, Any] | None:
    """A part's `shard` record, or None for a run that is not a part."""
    shard = header.get("shard")
    return shard if isinstance(shard, dict) and shard.get("label") else None


def logical_id(header: dict[str, Any]) -> str:
    """The run a log belongs to: its shard label for a part, else its own run id."""
    part = part_of(header)
    return part["label"] if part else header["run_id"]


def machine_of(header: dict[str, Any]) -> str:
    """A run's machine key (version-1 runs have only the host name)."""
    host = header.get("host", {})
    return host.get("machine_key") or f"{host.get('machine', '?')} (host name only)"


def _hardware(header: dict[str, Any]) -> tuple:
    host = header.get("host", {})
    return (*(str(host.get(name)) for name in HARDWARE), round((host.get("memory_bytes") or 0) / 2**30))


def same_hardware(headers: list[dict[str, Any]]) -> bool:
    """Whether the runs' machines agree on everything but their names (nodes of one kind)."""
    return len({_hardware(h) for h in headers}) <= 1


@dataclass
class LogicalRun:
    """A plain run (one log) or the parts of a sharded run, read as one run: its id (the label for a
    sharded run), its logs in part order, and what a reader must know of how they were merged."""

    run_id: str
    logs: list[RunLog]
    notes: list[str] = field(default_factory=list)

    @property
    def sharded(self) -> bool:
        return part_of(self.logs[0].header()) is not None

    @property
    def path(self) -> Path:
        return self.logs[0].path

    def header(self) -> dict[str, Any]:
        """The first log's header, named by the logical run, with the part runs listed."""
        first = self.logs[0].header()
        if not self.sharded:
            return first
        return {**first, "run_id": self.run_id, "parts": [log.header()["run_id"] for log in self.logs]}

    def rows(self) -> list[dict[str, Any]]:
        return [row for log in self.logs for row in log.rows()]

    def machines(self) -> list[str]:
        """The machine its rows count under: one for a plain run or parts on one kind of hardware."""
        headers = [log.header() for log in self.logs]
        keys = list(dict.fromkeys(machine_of(h) for h in headers))
        return keys[:1] if same_hardware(headers) else keys

    def machine_of_log(self, log: RunLog) -> str:
        """The machine a part's rows count under (see `machines`)."""
        return self.machines()[0] if len(self.machines()) == 1 else machine_of(log.header())


def merge(logs: list[RunLog]) -> list[LogicalRun]:
    """The logical runs of `logs`, in first-seen order: each plain run alone, the parts of a sharded
    run together (see the module)."""
    groups: dict[tuple, list[RunLog]] = {}
    for log in logs:
        header = log.header()
        part = part_of(header)
        key = ("part", part["label"], part["count"], part.get("split")) if part else ("run", header["run_id"], log.path)
        groups.setdefault(key, []).append(log)
    labels: dict[str, int] = {}
    for key in groups:
        if key[0] == "part":
            labels[key[1]] = labels.get(key[1], 0) + 1
    merged = []
    for key, members in groups.items():
        if key[0] == "run":
            merged.append(LogicalRun(key[1], members))
            continue
        label, count = key[1], key[2]
        name = label if labels[label] == 1 else f"{label}~{key[3]}"
        merged.append(_parts(name, count, members, labels[label] > 1))
    return merged


def _parts(name: str, count: int, members: list[RunLog], split_twice: bool) -> LogicalRun:
    """One sharded run from its part logs: the newest log of each index, in index order, with notes."""
    by_index: dict[int, RunLog] = {}
    notes = []
    for log in sorted(members, key=lambda m: m.header()["run_id"]):
        index = part_of(log.header())["index"]
        if index in by_index:
            notes.append(
                f"run {name}: part {index}/{count} is in two logs; the newer, {log.header()['run_id']}, is used "
                f"and {by_index[index].header()['run_id']} left out"
            )
        by_index[index] = log
    missing = [str(i) for i in range(1, count + 1) if i not in by_index]
    logs = [by_index[i] for i in sorted(by_index)]
    if missing:
        notes.append(
            f"run {name}: part{'s' if len(missing) > 1 else ''} {', '.join(missing)} of {count} missing, so "
            "their graphs have no rows here; run them with the same command and --shard i/N"
        )
    if split_twice:
        notes.append(
            f"run {name}: its parts were split in more than one way (the selection or settings differed "
            "between parts); each split is a run of its own"
        )
    run = LogicalRun(name, logs, notes)
    machines = list(dict.fromkeys(machine_of(log.header()) for log in logs))
    if len(machines) > 1:
        if len(run.machines()) == 1:
            notes.append(
                f"run {name}: its parts ran on {len(machines)} nodes of one hardware ({', '.join(machines)}); "
                f"shown as one machine, {machines[0]}"
            )
        else:
            notes.append(f"run {name}: its parts ran on different hardware ({', '.join(machines)}); shown per machine")
    return run


def find_parts(results: Path, label: str) -> list[Path]:
    """The logs under `results/<machine>/` whose header names `label` as their sharded run."""
    found = []
    for path in sorted(results.glob("*/*.jsonl")):
        try:
            with path.open("rb") as fh:
                first = fh.readline()
        except OSError:
            continue
        if b'"shard"' not in first or label.encode() not in first:
            continue
        try:
            header = RunLog.read(path).header()
        except DbenchError:  # not a log this dbench reads: it cannot be a part
            continue
        if (part := part_of(header)) and part["label"] == label:
            found.append(path)
    return found
