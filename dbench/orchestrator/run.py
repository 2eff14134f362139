"""One `dbench run`: validate the request, turn it into graphs, open (or resume) the run log, drive the
Runner, then export the run. The request is stored in the log's header, so `--resume RUN` rebuilds
exactly the same list of graphs. No terminal output here: the caller passes callbacks."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbench.errors import UsageError
from dbench.orchestrator.estimate import Earlier, Estimate, GraphCost, estimate, fit_budget, graph_costs
from dbench.orchestrator.lock import TimingLock
from dbench.orchestrator.request import RunRequest, check_resume, validate
from dbench.orchestrator.runner import RunConfig, Runner, RunObserver, RunState, Variant
from dbench.orchestrator.shard import part_of
from dbench.outcome import PASSING, Status
from dbench.runtimes.base import Runtime
from dbench.sources.item import Item
from dbench.sources.resolve import build_items, source_kind
from dbench.store.calibration import Entry, entry_for, read_calibration
from dbench.store.export import export_run
from dbench.store.history import History, read_history
from dbench.store.log import RunLog, ensure_writable, find_run, new_run_id
from dbench.store.metadata import host_metadata, machine_name

FAILING_EXIT_CODE = 3
"""`dbench run`'s exit status when any row is mismatch, failed, crashed, timeout or oom."""
PREDICT_KIND = "predict"
CALIBRATE_KIND = "calibrate"
"""The run header's `kind` of a `dbench calibrate` run (an A/A run whose rounds fill a budget)."""
"""The run header's `kind` of a `dbench predict` run (a model, an empty graph and the model's units)."""


@dataclass
class PlannedRun:
    """A validated run whose log exists: what to run and where its rows go."""

    request: RunRequest
    config: RunConfig
    runtime_classes: dict[str, type[Runtime]]
    log: RunLog
    run_id: str
    header: dict[str, Any]
    items: list[Item]
    state: RunState
    estimate: Estimate
    budget_notes: list[str] = dataclasses.field(default_factory=list)
    """What --budget gave up to fit, in words (empty without a budget, or when the settings fit)."""
    history: History | None = None
    """This machine's earlier runs, for the between-run drift in the rows' intervals (None: not asked)."""
    timing_lock: TimingLock | None = None
    """The machine-wide timing lock (dbench.orchestrator.lock), held (or registered beside its holder) from
    before the log is created until the run ends."""
    calibration: Entry | None = None
    """This machine's calibration of the run's (first) runtime and thread count (`dbench calibrate`), if any."""

    def predicted_rounds(self, graph_id: str, median_us: float) -> int | None:
        """The rounds --resolve needs for a graph of this time, by the calibration (None: not calibrated)."""
        if self.calibration is None or self.config.resolve is None:
            return None
        return self.calibration.predict_rounds(median_us, self.config.resolve, len(self.config.variants) > 1, graph_id)

    @property
    def pending(self) -> list[tuple[Item, str]]:
        """The (graph, variant label) pairs without a row yet."""
        return [
            (i, v.label)
            for i in self.items
            for v in self.config.variants
            if (i.spec.id, v.label) not in self.state.finished
        ]


@dataclass
class RunResult:
    """A finished run: every row of its log (resumed ones included) and its exported tables."""

    run_id: str
    header: dict[str, Any]
    log_path: Path
    rows: list[dict[str, Any]]
    exports: tuple[list[Path], str]
    """The files written beside the log, and a note ("" or why Parquet was not written)."""

    @property
    def exit_code(self) -> int:
        """0 when every row is ok, disputed (two runtimes agree against the reference) or honestly unsupported,
        FAILING_EXIT_CODE otherwise."""
        return 0 if all(Status(r["status"]) in PASSING for r in self.rows) else FAILING_EXIT_CODE


def plan_run(
    request: RunRequest,
    out_dir: Path,
    resume: str | None,
    lock_policy: str = "refuse",
    on_wait: Callable[[str], None] | None = None,
) -> PlannedRun:
    """Check the request and build its graphs before anything is written; then take the machine's timing
    lock (`lock_policy`: refuse, wait or overlap; dbench.orchestrator.lock) and create the log, or reopen
    it locked for appending (a torn last line set aside). The caller runs it with execute_run, which
    releases both locks."""
    if resume is not None:  # an empty id is refused by find_run, never taken for a new run
        check_resume(request)
        stored = RunLog.read(find_run(out_dir, resume))
        header = stored.header()
        request = RunRequest.from_dict(header.get("request", {}), stored.path)
        if header.get("kind") == PREDICT_KIND:
            raise UsageError(f"{resume} is a dbench predict run; finish it with dbench predict --resume {resume}")
        if header.get("kind") == CALIBRATE_KIND:
            raise UsageError(
                f"{resume} is a dbench calibrate run, whose rounds fill a budget; run dbench calibrate again"
            )
    else:
        request = request.compare_rounds()
    classes = validate(request)
    config = request.config()
    items = build_items(request, classes[config.variants[0].runtime].int8_form)
    items, part = part_of(request, config, items, header.get("shard") if resume is not None else None)
    if resume is not None:
        return resume_run(request, config, classes, stored.path, header, items, lock_policy, on_wait)
    folder = out_dir / machine_name()
    notes: list[str] = []
    if request.budget is not None and request.resolve is None:
        request, notes = fit_request(request, config, items, folder)
        config = request.config()
    extra = {"kind": source_kind(request.graphs).run_kind, **({"shard": part.to_dict()} if part else {})}
    return new_run(request, config, classes, out_dir, items, extra, notes, lock_policy, on_wait)


def fit_request(
    request: RunRequest, config: RunConfig, items: list[Item], folder: Path, earlier: Earlier | None = None
) -> tuple[RunRequest, list[str]]:
    """The request with its sampling (and profile) cut to fit --budget, and what was given up, in words."""
    keys = [(i.spec.id, v.label, v.runtime) for i in items for v in config.variants]
    timing, profile, notes = fit_budget(
        request.budget,
        _costs(items, config, folder, earlier),
        keys,
        config.timing,
        config.verify,
        bool(config.profile_runs),
        len(config.variants),
    )
    if not notes:
        return request, notes
    return dataclasses.replace(
        request, min_time=timing.min_time, max_time=timing.max_time, profile_runs=request.profile_runs if profile else 0
    ), notes


def _costs(
    items: list[Item], config: RunConfig, folder: Path, earlier: Earlier | None = None
) -> dict[tuple[str, str], GraphCost]:
    threads: dict[str, int] = {}
    for variant in config.variants:
        threads[variant.runtime] = max(threads.get(variant.runtime, 0), variant.options.thread_count)
    return graph_costs(items, threads, folder, earlier)


def plan_estimate(
    items: list[Item],
    config: RunConfig,
    folder: Path,
    state: RunState,
    earlier: Earlier | None = None,
    calibration: Entry | None = None,
    rounds_for: dict[str, int] | None = None,
) -> Estimate:
    """The estimate of what is left of a run: its jobs still to measure, from this machine's figures (its
    results folder, or what `earlier` read of it; under --resolve, the rounds its calibration predicts
    for each graph)."""
    keys = [
        (i.spec.id, v.label, v.runtime)
        for i in items
        for v in config.variants
        if (i.spec.id, v.label) not in state.finished
    ]
    costs = _costs(items, config, folder, earlier)
    if config.resolve is not None and calibration is not None:
        runtime = config.variants[0].runtime
        rounds_for = {}
        for item in items:
            needed = calibration.predict_rounds(
                costs[(item.spec.id, runtime)].call_s * 1e6, config.resolve, len(config.variants) > 1, item.spec.id
            )
            rounds_for[item.spec.id] = max(needed or config.timing.rounds, 3)
    return estimate(
        costs,
        keys,
        config.timing,
        config.verify,
        bool(config.profile_runs),
        len(config.variants),
        {key: len(rounds) for key, rounds in state.rounds.items()},
        rounds_for,
    )


def calibration_of(folder: Path, config: RunConfig) -> Entry | None:
    """This machine's calibration of the run's first variant (its runtime and thread count), if any."""
    first = config.variants[0]
    return entry_for(read_calibration(folder), first.runtime, first.options.thread_count)


def take_lock(what: str, out: Path, policy: str, on_wait: Callable[[str], None] | None) -> TimingLock:
    """The machine's timing lock, taken (or waited for, or registered beside) before a log is written."""
    return TimingLock(what, str(out.resolve()), policy).acquire(on_wait)


def new_run(
    request: RunRequest,
    config: RunConfig,
    classes: dict[str, type[Runtime]],
    out_dir: Path,
    items: list[Item],
    extra: dict[str, Any],
    budget_notes: list[str] | None = None,
    lock_policy: str = "refuse",
    on_wait: Callable[[str], None] | None = None,
    id_prefix: str = "run",
    rounds_for: dict[str, int] | None = None,
) -> PlannedRun:
    """Create the log of a new run of `items` (its header: the request, runtimes, timing, host, the
    estimate, what --budget gave up, the timing lock, and `extra`), the machine's timing lock taken first."""
    folder = ensure_writable(out_dir / machine_name())
    calibration = calibration_of(folder, config)
    planned = plan_estimate(items, config, folder, RunState(), calibration=calibration, rounds_for=rounds_for)
    run_id = new_run_id(id_prefix)
    lock = take_lock(f"{id_prefix} {run_id}", out_dir, lock_policy, on_wait)
    try:
        header = run_header(request, config, classes, items, planned, extra, budget_notes, lock=lock)
        log = RunLog.create(folder, run_id, header)
    except BaseException:
        lock.release()
        raise
    return PlannedRun(
        request,
        config,
        classes,
        log,
        run_id,
        {**header, "run_id": run_id},
        items,
        RunState(),
        planned,
        list(budget_notes or []),
        _history(folder, run_id, config),
        lock,
        calibration,
    )


def run_header(
    request: RunRequest,
    config: RunConfig,
    classes: dict[str, type[Runtime]],
    items: list[Item],
    planned: Estimate,
    extra: dict[str, Any],
    budget_notes: list[str] | None = None,
    command: list[str] | None = None,
    lock: TimingLock | None = None,
) -> dict[str, Any]:
    """A new run's header (less its run id): `extra`, the request, runtimes, timing, host, the command
    (this process's, or the fleet caller's), the estimate, what --budget gave up, a benchmark's injected
    slowdown and how the timing lock was taken."""
    return {
        **extra,
        "request": dataclasses.asdict(request),
        "runtime": _runtime_header(config.variants[0], classes),
        "variants": [
            {"label": v.label, **_runtime_header(v, classes), **({"load": v.load.to_dict()} if v.load else {})}
            for v in config.variants
        ],
        "mode": request.mode,
        "timing": config.timing.to_dict(),
        "host": host_metadata(),
        "command": sys.argv if command is None else command,
        "graphs": len(items),
        "estimate_s": round(planned.total_s, 1),
        **({"budget_gave_up": budget_notes} if budget_notes else {}),
        **({"injected_slowdown": config.slowdowns} if config.slowdowns else {}),
        **({"timing_lock": lock.header()} if lock is not None else {}),
    }


def resume_run(
    request: RunRequest,
    config: RunConfig,
    classes: dict[str, type[Runtime]],
    path: Path,
    header: dict[str, Any],
    items: list[Item],
    lock_policy: str = "refuse",
    on_wait: Callable[[str], None] | None = None,
) -> PlannedRun:
    """Reopen a run's log for appending (a torn last line set aside) with what it already holds, the
    machine's timing lock taken first."""
    run_id = header["run_id"]
    lock = take_lock(f"run {run_id}", path.parent.parent, lock_policy, on_wait)
    try:
        log = RunLog.resume(path)
        state = RunState.from_log(log.rows(), log.rounds(), config.variants[0].label)
        calibration = calibration_of(path.parent, config)
        planned = plan_estimate(items, config, path.parent, state, calibration)
    except BaseException:
        lock.release()
        raise
    return PlannedRun(
        request,
        config,
        classes,
        log,
        run_id,
        {**header, "run_id": run_id},
        items,
        state,
        planned,
        history=_history(path.parent, run_id, config),
        timing_lock=lock,
        calibration=calibration,
    )


def _history(folder: Path, run_id: str, config: RunConfig) -> History | None:
    """The earlier runs of this machine's folder the rows' drift is measured from (None: --history 0)."""
    return read_history(folder, run_id, config.history_runs) if config.history_runs else None


def _runtime_header(variant: Variant, classes: dict[str, type[Runtime]]) -> dict[str, Any]:
    """A variant's runtime as the run header records it: name, version and the device facts."""
    cls = classes[variant.runtime]
    return {"name": variant.runtime, "version": cls.version(), **cls.header_metadata(variant.options)}


def execute_run(planned: PlannedRun, observer: RunObserver) -> RunResult:
    """Run the pending graphs, logging each row as it is made, then export the whole run."""
    try:
        with planned.log:  # the log stays locked until the run is exported
            runner = Runner(
                planned.config,
                planned.runtime_classes,
                planned.log,
                planned.run_id,
                planned.history,
                planned.timing_lock,
                planned.predicted_rounds,
            )
            runner.run(planned.items, planned.state, observer)
            return RunResult(
                planned.run_id, planned.header, planned.log.path, planned.log.rows(), export_run(planned.log)
            )
    finally:
        if planned.timing_lock is not None:
            planned.timing_lock.release()
