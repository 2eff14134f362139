"""The unit cache of `dbench predict`: a unit graph (or the empty graph) timed once on this machine is not
timed again for the next model, or the next prediction of the same model, unless asked (`--fresh`).

An entry is found by a key over everything a unit's time depends on: its graph's content up to node and
tensor names and weight values (dbench.units.same.signature, the opsets included), its inputs' and
outputs' shapes, types, roles and draw ranges, its precision, the runtime, its version, its options
(threads included) and the weights mode, the timing, verification and profiling settings, this machine's
key, dbench's version and the log's schema, and for an evicted twin the bytes its eviction reads (the
model's traffic: an evicted timing serves only a model with the same eviction). An entry holds the
rounds' outcomes as measured (statistics, verdict, profile), so a reused row is combined from them as the
first run's row was, and it names the run that timed it. Only complete rows that ran ok or disputed, and
were timed without another dbench timing beside them, are kept. Entries live beside the run logs
(`results/<machine>/unit-cache/<key>.json`), each written whole under a temporary name and renamed."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbench import __version__
from dbench.gen.graph import EVICT_ATTR
from dbench.orchestrator.runner import RunConfig, Variant, another_round, outcome_from_record, weights_for
from dbench.outcome import Outcome
from dbench.sources.item import Item
from dbench.store.log import SCHEMA_VERSION, RunLog
from dbench.units.prediction import EMPTY, PREDICT_ATTR, REUSED, UNIT

CACHE_FOLDER = "unit-cache"
ENTRY_FORMAT = 1
KEPT_STATUSES = ("ok", "disputed")


@dataclass(frozen=True)
class Entry:
    """One cached unit: the run and graph that timed it, and its rounds' outcome records as logged."""

    run_id: str
    graph_id: str
    rounds: list[dict[str, Any]]

    def outcomes(self) -> list[Outcome]:
        return [outcome_from_record(record) for record in self.rounds]


def unit_key(item: Item, variant: Variant, config: RunConfig, runtime_version: str, machine: str) -> str | None:
    """The cache key of a prediction's unit or empty graph under this configuration (None: not cacheable,
    as the whole model, or a unit that could not be made a graph)."""
    info = item.spec.attrs.get(PREDICT_ATTR) or {}
    if item.unsupported or info.get("role") not in (UNIT, EMPTY) or not info.get("content"):
        return None
    spec = item.spec

    def tensors(specs) -> list:
        return [[list(t.shape), t.dtype, t.role, t.low, t.high, t.zeros] for t in specs]

    what = {
        "format": ENTRY_FORMAT,
        "dbench": __version__,
        "schema": SCHEMA_VERSION,
        "machine": machine,
        "content": info["content"],
        "role": info["role"],
        "inputs": tensors(spec.inputs),
        "outputs": tensors(spec.outputs),
        "precision": spec.precision,
        "evict_bytes": spec.attrs.get(EVICT_ATTR, 0),
        "runtime": variant.runtime,
        "runtime_version": runtime_version,
        "options": dataclasses.asdict(variant.options),
        "weights": weights_for(spec, config.weights),
        "timing": config.timing_of(spec.id).to_dict(),
        "verify": config.verify,
        "profile_runs": config.profile_runs,
    }
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


class UnitCache:
    """The entries of one machine's results folder, by key."""

    def __init__(self, folder: Path) -> None:
        self.root = Path(folder) / CACHE_FOLDER

    def get(self, key: str, timing) -> Entry | None:
        """The entry under `key`, if it is whole and its rounds are all the timing gives (else a miss)."""
        try:
            data = json.loads((self.root / f"{key}.json").read_text())
            entry = Entry(data["run_id"], data["graph_id"], data["rounds"])
            outcomes = entry.outcomes()
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not outcomes or another_round(outcomes, timing):
            return None
        return entry

    def put(self, key: str, entry: Entry) -> None:
        """Write an entry whole (a temporary file renamed into place; a reader never sees half of one)."""
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".{key}.{secrets.token_hex(4)}.tmp"
        tmp.write_text(json.dumps(dataclasses.asdict(entry)) + "\n")
        os.replace(tmp, self.root / f"{key}.json")


def reused_item(item: Item, entry: Entry) -> Item:
    """The item tagged with the run that timed it, so its row says it was reused."""
    info = {**item.spec.attrs[PREDICT_ATTR], REUSED: entry.run_id}
    spec = dataclasses.replace(item.spec, attrs={**item.spec.attrs, PREDICT_ATTR: info})
    return Item(spec, item.load, item.contract, item.unsupported)


def keep_timed(cache: UnitCache, keys: dict[str, str], log: RunLog, run_id: str) -> int:
    """Store the units this run timed (keys: graph id -> cache key) whose rows are complete, ok or disputed,
    timed alone and not themselves reused; returns how many were stored."""
    rows = {r["graph_id"]: r for r in log.rows()}
    rounds: dict[str, list[dict[str, Any]]] = {}
    for record in log.rounds():
        rounds.setdefault(record["graph_id"], []).append(record)
    stored = 0
    for graph_id, key in keys.items():
        row = rows.get(graph_id)
        if row is None or row.get("status") not in KEPT_STATUSES or row.get("overlapped"):
            continue
        if REUSED in ((row.get("attrs") or {}).get(PREDICT_ATTR) or {}):
            continue
        records = sorted(rounds.get(graph_id, []), key=lambda r: r["round"])
        if len(records) != row.get("rounds"):
            continue
        cache.put(key, Entry(run_id, graph_id, [r["outcome"] for r in records]))
        stored += 1
    return stored
