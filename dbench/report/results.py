"""Result files (run logs, or folders holding them) read into pandas: one frame of kernel rows over
every run, machine and runtime (latency rows), one of throughput rows and one of server rows (never
mixed with latency rows), one frame of all-reduce rows, and each run's header for the Specs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dbench.errors import InputError
from dbench.report.phases import family_section
from dbench.store.compare import warnings_of
from dbench.store.log import RunLog
from dbench.store.shards import merge

CALIBRATE_KIND = "calibrate"
"""The run header's kind of a `dbench calibrate` run (dbench.orchestrator.run.CALIBRATE_KIND)."""

KERNEL_COLUMNS = (
    "graph_id",
    "kernel_id",
    "family",
    "op",
    "pass",
    "form",
    "precision",
    "precision_executed",
    "precision_fallback",
    "runtime",
    "runtime_version",
    "device",
    "status",
    "message",
    "verified",
    "median_us",
    "p10_us",
    "p90_us",
    "p99_us",
    "ci_low_us",
    "ci_high_us",
    "ci_rel",
    "cv",
    "spread",
    "unstable",
    "samples",
    "first_call_us",
    "runtime_median_us",
    "tflops",
    "gbps",
    "intensity",
    "flops",
    "min_bytes",
    "samples_us",
    "variant",
    "rounds",
    "round_medians_us",
    "rerun_rel",
    "interval_note",
    "drift_sd",
    "drift_df",
    "rerun_low_us",
    "rerun_high_us",
    "history_factor",
    "overlapped",
    "injected_slowdown",
    "resolve_target",
    "resolved",
    "resolve_half",
    "runtime_options",
    "weights",
)
REPORT_KEYS = ("kernel_id", "pass", "form", "runtime")
"""Text fields the report keys a kernel row on, beyond the log's own (dbench.store.log.KERNEL_RESULT_KEYS)."""
LOAD_COLUMNS = (
    "graph_id",
    "kernel_id",
    "family",
    "pass",
    "form",
    "precision",
    "precision_executed",
    "runtime",
    "variant",
    "status",
    "message",
    "verified",
    "mode",
    "streams",
    "streams_executed",
    "threads_per_stream",
    "inferences",
    "inferences_per_s",
    "inferences_per_s_low",
    "inferences_per_s_high",
    "throughput_tflops",
    "time_per_inference_us",
    "rerun_rel",
    "rounds",
    "unstable",
    "interval_note",
    "latency_p50_us",
    "latency_p90_us",
    "latency_p99_us",
    "rate",
    "arrival_rate",
    "utilization",
    "round_utilization",
    "latency_p99_low_us",
    "latency_p99_high_us",
    "latency_p99_ci_low_us",
    "latency_p99_ci_high_us",
    "latency_p99_above",
    "latency_bound_us",
    "over_bound",
    "search",
    "flops",
)
"""The columns of throughput and server rows a report shows (their own: no latency-row figure)."""


@dataclass(frozen=True)
class Run:
    """One run's identity and the header fields a report shows (Specs sheet)."""

    run_id: str
    kind: str
    machine: str
    path: Path
    header: dict[str, Any]
    schema_version: int
    parts: tuple[str, ...] = ()
    """The run ids of a sharded run's parts (empty for a plain run)."""

    @property
    def has_samples(self) -> bool:
        return self.schema_version >= 2


@dataclass
class Results:
    """Everything a report is built from."""

    kernels: pd.DataFrame
    allreduce: pd.DataFrame
    runs: list[Run] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    """The latency rows as logged (whole models and their kernels are matched on them)."""
    throughput: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Throughput rows (requests in flight kept busy), latest run first for a duplicate."""
    server: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Server-scenario rows."""
    notes: list[str] = field(default_factory=list)
    """Facts the reader must know, e.g. runs without samples."""
    calibrations: dict[str, list] = field(default_factory=dict)
    """Machine key -> its calibration entries (dbench.store.calibration), found beside its runs' logs."""


def machine_key(header: dict[str, Any]) -> str:
    """The run's machine key; a version-1 run has only its host name, marked as such."""
    host = header.get("host", {})
    return host.get("machine_key") or f"{host.get('machine') or host.get('hostname') or 'unknown'}~host-only"


def log_paths(paths: list[Path]) -> list[Path]:
    """Every run log named or inside the folders named (recursively), each once, in name order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(path.rglob("*.jsonl"))
        elif path.is_file() and path.suffix == ".jsonl":
            found.append(path)
        elif path.exists():
            raise InputError(
                f"{path} is not a run log (.jsonl) or a folder of them; give files written by dbench run or allreduce"
            )
        else:
            raise InputError(f"{path} does not exist; give run logs (.jsonl) or results folders")
    unique = list(dict.fromkeys(p.resolve() for p in found))
    if not unique:
        raise InputError(
            f"no run logs (.jsonl) in {', '.join(map(str, paths))}; run dbench run first or name the results folder"
        )
    return unique


def load(paths: list[Path]) -> Results:
    """Read every run log under `paths`; kernel rows get the run's machine key and run id."""
    kernel_rows: list[dict[str, Any]] = []
    allreduce_rows: list[dict[str, Any]] = []
    runs: list[Run] = []
    notes: list[str] = []
    calibrations: dict[str, list] = {}
    logs = [RunLog.read(path) for path in log_paths(paths)]
    # A calibration's A/A run of copies is not a result: its figures are the calibration, read per machine below.
    logs = [log for log in logs if log.header().get("kind") != CALIBRATE_KIND]
    for logical in merge(logs):  # a sharded run's parts as one run
        notes += logical.notes
        for log in logical.logs:
            header = log.header()
            kind = header.get("kind", "kernels")
            machine = logical.machine_of_log(log) if logical.sharded else machine_key(header)
            if machine not in calibrations:
                calibrations[machine] = _calibration(log.path.parent, machine)
            whole = logical.header()
            run = Run(
                logical.run_id, kind, machine, log.path, whole, header["schema_version"], tuple(whole.get("parts", ()))
            )
            if not any(r.run_id == run.run_id and r.machine == machine for r in runs):  # a part's machine once
                runs.append(run)
            if not run.has_samples and kind == "kernels":
                notes.append(
                    f"{header['run_id']} is a schema-1 run: no per-sample times, so its intervals come from the "
                    "stored statistics"
                )
            notes += warnings_of(log) if kind != "allreduce" else filter(None, [log.torn_note()])  # a torn log named
            target = allreduce_rows if kind == "allreduce" else kernel_rows
            for row in log.rows():
                if kind != "allreduce" and (missing := [k for k in REPORT_KEYS if not isinstance(row.get(k), str)]):
                    raise InputError(
                        f"{log.path}: the row of {row['graph_id']} has no {', '.join(map(repr, missing))} as "
                        "text; the log is corrupt (edited by hand?): restore it, or run again"
                    )
                target.append(
                    {
                        **row,
                        "run_id": logical.run_id,
                        "machine": machine,
                        "taken_at": header.get("host", {}).get("taken_at", ""),
                    }
                )
    by_mode = {
        mode: [r for r in kernel_rows if (r.get("mode") or "latency") == mode]
        for mode in ("latency", "throughput", "server")
    }
    return Results(
        _kernel_frame(by_mode["latency"]),
        pd.DataFrame(allreduce_rows),
        runs,
        by_mode["latency"],
        throughput=_load_frame(by_mode["throughput"]),
        server=_load_frame(by_mode["server"]),
        notes=notes,
        calibrations={m: e for m, e in calibrations.items() if e},
    )


def _calibration(folder: Path, machine: str) -> list:
    """The calibration entries stored beside a machine's logs (a file that is not one is left out: the
    report still stands without it)."""
    from dbench.store.calibration import read_calibration

    try:
        return read_calibration(folder)
    except InputError:
        return []


def counts(frame: pd.DataFrame) -> pd.Series:
    """Rows whose time counts: ok and verified, or disputed (two runtimes agree against the reference)."""
    return ((frame["status"] == "ok") & (frame["verified"] == True)) | (frame["status"] == "disputed")  # noqa: E712 (None is not True)


def _kernel_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Kernel rows with the report's columns (missing ones None), a transformer row's family named with its
    phase (dbench.report.phases); the latest run wins a duplicate."""
    frame = pd.DataFrame(
        [
            {
                **{c: r.get(c) for c in KERNEL_COLUMNS},
                "family": family_section(r.get("family"), r.get("suites")),
                "run_id": r["run_id"],
                "machine": r["machine"],
                "taken_at": r["taken_at"],
            }
            for r in rows
        ]
    )
    if frame.empty:
        return frame
    frame["kernel"] = frame["kernel_id"] + "." + frame["pass"].astype(str) + "." + frame["form"].astype(str)
    frame["variant"] = [v or r for v, r in zip(frame["variant"], frame["runtime"])]  # rows before variants: the runtime
    frame["counts"] = counts(frame)
    frame = frame.sort_values("taken_at", kind="stable")
    frame["configuration"] = [
        configuration_of(v, o, w) for v, o, w in zip(frame.runtime_version, frame.runtime_options, frame.weights)
    ]
    keys = ["machine", "variant", "precision", "kernel"]
    spread = _runs_spread(frame, [*keys, "configuration"])
    every = (
        frame.groupby(keys, sort=False).configuration.agg(lambda c: "; ".join(sorted(set(c)))).rename("configurations")
    )
    latest = (
        frame.drop_duplicates(keys, keep="last").reset_index(drop=True).merge(every.reset_index(), on=keys, how="left")
    )
    return latest.merge(spread, on=[*keys, "configuration"], how="left") if not spread.empty else latest.assign(runs=1)


def configuration_of(version, options, weights) -> str:
    """What must match for two runs' rows of one column group to be runs of one configuration: the runtime's
    version, its thread count and the weights mode (a group is labelled by its variant alone)."""
    threads = options.get("threads") if isinstance(options, dict) else None
    return f"{version} · {threads} threads · weights {weights}"


def _runs_spread(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per configuration and kernel measured by several runs: how many verified runs, the lowest and highest
    of their medians, the SD of their log medians, and their ids in time order (the report shows the latest
    and says so)."""
    counted = frame[frame.counts]
    records = []
    for key, rows in counted.groupby(keys, sort=False):
        medians = np.log(rows.median_us.astype(float).to_numpy())
        records.append(
            {
                **dict(zip(keys, key)),
                "runs": len(rows),
                "runs_low_us": float(rows.median_us.min()),
                "runs_high_us": float(rows.median_us.max()),
                "runs_sd": float(np.std(medians, ddof=1)) if len(rows) > 1 else None,
                "runs_ids": " ".join(rows.run_id),
            }
        )
    return pd.DataFrame(records)


def _load_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Throughput or server rows with the report's columns; the latest run wins a duplicate (same machine,
    configuration, precision, kernel, streams and rate: a sweep's `ort-cpu streams=2` and a run of
    `ort-cpu` alone at 2 streams are one configuration)."""
    from dbench.store.sweeps import configuration

    frame = pd.DataFrame(
        [
            {
                **{c: r.get(c) for c in LOAD_COLUMNS},
                "run_id": r["run_id"],
                "machine": r["machine"],
                "taken_at": r["taken_at"],
            }
            for r in rows
        ]
    )
    if frame.empty:
        return frame
    frame["kernel"] = frame["kernel_id"] + "." + frame["pass"].astype(str) + "." + frame["form"].astype(str)
    frame["counts"] = counts(frame)
    frame["configuration"] = [
        configuration({"variant": v, "runtime": r}) for v, r in zip(frame["variant"], frame["runtime"])
    ]
    frame = frame.sort_values("taken_at", kind="stable")
    keys = ["machine", "configuration", "precision", "kernel", "streams", "rate"]
    return frame.drop_duplicates(keys, keep="last").reset_index(drop=True)


def read_peaks(runs: list[Run]) -> dict[str, dict[str, Any]]:
    """machine key -> its peak.json (written by dbench peak beside that machine's run logs)."""
    peaks: dict[str, dict[str, Any]] = {}
    for run in runs:
        path = run.path.parent / "peak.json"
        if run.machine not in peaks and path.is_file():
            data = json.loads(path.read_text())
            if data.get("machine_key") == run.machine:
                peaks[run.machine] = data
    return peaks
