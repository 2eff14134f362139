"""`dbench run --shard i/N`: one of N disjoint parts of a selection, balanced by the plan's time estimate,
for schedulers that start the same command N times (a Slurm array, a Kubernetes indexed job). Every
part must compute the same split on whatever node it lands, so the split is made from the estimate
that depends on the request alone (the timing settings and each graph's FLOPs and bytes, as for a
machine with no earlier rows and no `dbench peak`), never from one node's history. A part knows its
logical run by its label, kept in its header with the split's fingerprint, so `report` and `compare`
merge the parts of one run (dbench.store.shards)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbench.errors import UsageError
from dbench.sources.item import Item

SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
MAX_PARTS = 10_000
SPLIT_THREADS = 1
"""Threads the split's estimate assumes when the request names none: every part must compute the same
split, and the default thread count is each node's own core count."""
LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
SLURM_JOB = "SLURM_ARRAY_JOB_ID"
"""Set by Slurm in every task of an array: the default label of its parts."""


@dataclass(frozen=True)
class Part:
    """This process's part of a sharded run: `index` of `count` (1-based), the logical run's label,
    and the figures each part's header keeps so the parts can be checked and merged."""

    index: int
    count: int
    label: str
    split: str
    """Fingerprint of the whole split (every graph's part): parts of one run share it."""
    estimates_s: tuple[float, ...]
    """Every part's estimated seconds under the split's estimate, in part order."""
    graphs: tuple[int, ...]
    """Every part's graph count, in part order."""
    ids: tuple[str, ...]
    """This part's graph ids: a resumed part runs these, whatever its stored request would split now
    (--budget stores sampling cut to fit, which would move the split)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "count": self.count,
            "label": self.label,
            "split": self.split,
            "estimates_s": list(self.estimates_s),
            "graphs": list(self.graphs),
            "selection_graphs": sum(self.graphs),
            "ids": list(self.ids),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Part:
        return cls(
            data["index"],
            data["count"],
            data["label"],
            data["split"],
            tuple(data["estimates_s"]),
            tuple(data["graphs"]),
            tuple(data["ids"]),
        )


def parse_shard(text: str) -> tuple[int, int]:
    """`--shard 2/8` as (2, 8); one line naming the fix when it is not i/N with 1 <= i <= N."""
    match = SHARD.match(text)
    if not match:
        raise UsageError(
            f"--shard {text!r} is not i/N; write e.g. --shard 1/4 (part 1 of 4; "
            "in a Slurm array: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT with --array=1-N)"
        )
    index, count = int(match.group(1)), int(match.group(2))
    if not 1 <= count <= MAX_PARTS:
        raise UsageError(f"--shard {text}: N must be 1 to {MAX_PARTS:,} parts")
    if not 1 <= index <= count:
        raise UsageError(
            f"--shard {text}: the part must be 1 to {count} (parts count from 1; a 0-based index such as "
            "Kubernetes' JOB_COMPLETION_INDEX needs +1)"
        )
    return index, count


def check_label(label: str | None) -> None:
    """A label names a logical run in headers and reports: a short folder-safe word."""
    if label is not None and not LABEL.match(label):
        raise UsageError(
            f"--shard-label {label!r}: use 1 to 80 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit (e.g. the job's name)"
        )


def default_label(request_fields: dict[str, Any], count: int) -> str:
    """The label of a sharded run that names none: Slurm's array job id where Slurm set it, else the
    fingerprint of the request and the number of parts (the same selection, runtime and settings split
    the same way: parts of one run)."""
    job = os.environ.get(SLURM_JOB, "").strip()
    if job and LABEL.match(f"slurm-{job}"):
        return f"slurm-{job}"
    fields = {**{k: v for k, v in request_fields.items() if k not in ("shard", "shard_label")}, "parts": count}
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return f"sel-{digest}"


def split(weights: list[tuple[str, float]], count: int) -> list[list[str]]:
    """Graph ids into `count` parts of nearly equal total weight: heaviest first, each to the lightest
    part so far (ties to the lower part; equal weights in id order), so every node computes the same
    split. Longest-processing-time first is within 4/3 of the best split, and far closer with many graphs."""
    order = sorted(weights, key=lambda w: (-w[1], w[0]))
    loads = [0.0] * count
    parts: list[list[str]] = [[] for _ in range(count)]
    for graph, weight in order:
        lightest = min(range(count), key=lambda p: (loads[p], len(parts[p]), p))
        parts[lightest].append(graph)
        loads[lightest] += weight
    return parts


def graph_weights(items: list[Item], config) -> dict[str, float]:
    """Each graph's estimated seconds over every variant, from the request alone (see the module)."""
    from dbench.orchestrator.estimate import Earlier, estimate, graph_costs

    threads = {v.runtime: v.options.threads or SPLIT_THREADS for v in config.variants}
    costs = graph_costs(items, threads, Path(), Earlier({}, None))  # no earlier row, no peak: the request alone
    keys = [(i.spec.id, v.label, v.runtime) for i in items for v in config.variants]
    jobs = estimate(costs, keys, config.timing, config.verify, bool(config.profile_runs), len(config.variants)).jobs
    weights = dict.fromkeys((i.spec.id for i in items), 0.0)
    for (graph, _, _), seconds in jobs.items():
        weights[graph] += seconds
    return weights


def shard_items(items: list[Item], config, index: int, count: int, label: str) -> tuple[list[Item], Part]:
    """This part's items, in the selection's order, and its Part record."""
    weights = graph_weights(items, config)
    parts = split(list(weights.items()), count)
    assignment = {graph: number for number, part in enumerate(parts, 1) for graph in part}
    fingerprint = hashlib.sha256(json.dumps(sorted(assignment.items())).encode()).hexdigest()[:16]
    mine = [item for item in items if assignment[item.spec.id] == index]
    estimates = tuple(round(sum(weights[g] for g in part), 1) for part in parts)
    return mine, Part(
        index,
        count,
        label,
        fingerprint,
        estimates,
        tuple(len(part) for part in parts),
        tuple(item.spec.id for item in mine),
    )


def part_of(request, config, items: list[Item], stored: dict[str, Any] | None = None) -> tuple[list[Item], Part | None]:
    """The items of the request's part (`request.shard`), or all of them when it asks for none; a part
    that holds no graph (more parts than graphs) is refused in one line. `stored`: the part a resumed
    run's header keeps, whose graphs it runs."""
    if request.shard is None:
        return items, None
    if stored is not None:
        part = Part.from_dict(stored)
        wanted = set(part.ids)
        return [item for item in items if item.spec.id in wanted], part
    index, count = parse_shard(request.shard)
    label = request.shard_label or default_label(dataclasses.asdict(request), count)
    mine, part = shard_items(items, config, index, count, label)
    if not mine:
        raise UsageError(
            f"--shard {index}/{count}: the selection has {len(items)} graphs, so part {index} holds none; "
            f"use at most {len(items)} parts"
        )
    return mine, part
