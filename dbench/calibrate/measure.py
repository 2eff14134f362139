"""`dbench calibrate`: an interleaved A/A run (one runtime named twice) over a few kernels spanning the size
classes, its rounds as long as a default interleaved run's (the sampling divided among 5 rounds), given
rounds until the budget is spent; then the noise per size class (dbench.calibrate.analyse), with the
drift between runs and the interval coverage this machine's earlier runs show, stored per machine key
(dbench.store.calibration). Timing runs the usual way (worker processes, the machine's timing lock, a
run log of kind `calibrate` beside the user's runs, which history and reports leave out); the kernels
are not verified or profiled (the A/A figures need only their round medians)."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from dbench.calibrate.analyse import coverage_by_class, drift_by_class, kernel_noise, noise_classes
from dbench.errors import UsageError
from dbench.orchestrator.request import COMPARE_ROUNDS, MAX_ROUNDS, RunRequest, validate
from dbench.orchestrator.run import CALIBRATE_KIND, PlannedRun, RunResult, execute_run, new_run, plan_estimate
from dbench.orchestrator.runner import RunObserver, RunState
from dbench.sources.resolve import build_items
from dbench.store.calibration import Entry, write_calibration
from dbench.store.history import HISTORY_RUNS, read_history
from dbench.store.metadata import machine_name

DEFAULT_BUDGET_S = 150.0
"""Two and a half minutes: about ten paired rounds of the device suite's 13 GEMMs on a 2-core VM."""
MIN_BUDGET_S = 20.0
SUITE, OPS = "inference-device", ("gemm",)
"""The kernels, by default: DeepBench's device GEMMs, from 4 µs GEMVs to 35 ms GEMMs on a 2-core VM (the
class of each is decided by its measured time, so on a faster device they land in lower classes)."""


@dataclass
class Calibrated:
    """A finished calibration: what was stored, where, and the run it came from."""

    entry: Entry
    path: Path
    result: RunResult


def calibration_request(runtime: str, threads: int | None, budget_s: float, pattern: str | None) -> RunRequest:
    """The A/A run's request: the runtime twice, no verification, profile or drift, rounds up to MAX_ROUNDS."""
    if not (math.isfinite(budget_s) and budget_s >= MIN_BUDGET_S):
        raise UsageError(
            f"--budget {budget_s:g} s is too short for a calibration; give at least {MIN_BUDGET_S:g} s (default "
            f"{DEFAULT_BUDGET_S:g} s)"
        )
    return RunRequest(
        suite=SUITE,
        ops=OPS if pattern is None else (),
        pattern=pattern,
        runtime=f"{runtime},{runtime}",
        threads=threads,
        verify=False,
        profile_runs=0,
        history=0,
        rounds=MAX_ROUNDS,
        budget=budget_s,
    )


def plan_calibration(
    runtime: str,
    threads: int | None,
    budget_s: float,
    out_dir: Path,
    pattern: str | None = None,
    lock_policy: str = "refuse",
    on_wait: Callable[[str], None] | None = None,
) -> PlannedRun:
    """Validate, list the kernels, take the machine's timing lock and open the calibration's log, with a
    plan of as many rounds as the budget holds."""
    request = calibration_request(runtime, threads, budget_s, pattern)
    classes = validate(request)
    config = request.config()
    config = dataclasses.replace(
        config,
        timing=dataclasses.replace(config.timing, rounds=MAX_ROUNDS, share_rounds=COMPARE_ROUNDS),
        budget_s=budget_s,
    )
    items = build_items(request, classes[runtime].int8_form)
    one = plan_estimate(items, config, out_dir / machine_name(), RunState(), rounds_for={i.spec.id: 1 for i in items})
    rounds = max(3, min(MAX_ROUNDS, int(budget_s / max(one.total_s, 1e-9))))
    return new_run(
        request,
        config,
        classes,
        out_dir,
        items,
        {"kind": CALIBRATE_KIND},
        lock_policy=lock_policy,
        on_wait=on_wait,
        id_prefix=CALIBRATE_KIND,
        rounds_for={i.spec.id: rounds for i in items},
    )


def finish_calibration(planned: PlannedRun, observer: RunObserver) -> Calibrated:
    """Run the planned A/A run, analyse it, and store the entry in the machine's calibration.json."""
    start = time.monotonic()
    result = execute_run(planned, observer)
    wall = time.monotonic() - start
    folder = result.log_path.parent
    kernels = kernel_noise(result.rows)
    if not kernels:
        raise UsageError(
            "no kernel was timed in 3 paired rounds or more: nothing to calibrate from; raise --budget "
            f"(the rows are in {result.log_path})"
        )
    variant = planned.config.variants[0]
    threads = variant.options.thread_count
    history = read_history(folder, planned.run_id, HISTORY_RUNS)
    classes = noise_classes(
        kernels, drift_by_class(history, variant.runtime, threads), coverage_by_class(history, variant.runtime, threads)
    )
    timed = [r["timed_s"] / r["rounds"] for r in result.rows if r.get("timed_s") and r.get("rounds")]
    entry = Entry(
        variant.runtime,
        planned.header["runtime"]["version"],
        threads,
        datetime.now(timezone.utc).isoformat(timespec="seconds"),
        planned.run_id,
        float(np.median(timed)) if timed else 0.0,
        round(wall, 1),
        int(np.median([k["pairs"] for k in kernels])),
        [
            (planned.header["host"].get("load_start") or [None])[0],
            (result.rows[-1].get("load_1m") if result.rows else None),
        ],
        classes,
        kernels,
    )
    path = write_calibration(folder, planned.header["host"]["machine_key"], entry)
    return Calibrated(entry, path, result)


def describe(entry: Entry) -> dict[str, Any]:
    """The calibration as JSON-ready data (`dbench calibrate --json`)."""
    return {
        **dataclasses.asdict(entry),
        "answer": entry.answer(),
        "classes": [
            {
                **dataclasses.asdict(c),
                "finds": {n: c.finds(n) for n in (3, 10, 30)},
                "resolve_rounds": {f"{t:g}": c.resolve_rounds(t) for t in (0.02, 0.05, 0.10)},
            }
            for c in entry.classes
        ],
    }
