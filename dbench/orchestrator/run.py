"""One `dbench run`: turn the request into graphs, open (or resume) the run log, drive the Runner with
a progress bar, then export the run and print its summary. The request is stored in the log's
header, so `--resume RUN` rebuilds exactly the same list of graphs."""

from __future__ import annotations

import dataclasses
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from dbench.orchestrator.runner import Item, RunConfig, Runner, items_from_folder, items_from_requests
from dbench.worker.timing import QUICK, TimingConfig
from dbench.errors import DbenchError, UsageError
from dbench.runtimes.base import WEIGHT_MODES, RuntimeOptions
from dbench.gen.manifest import MANIFEST
from dbench.runtimes.registry import require
from dbench.store.export import export_run
from dbench.store.log import RunLog, ensure_writable, find_run, new_run_id
from dbench.store.metadata import host_metadata, machine_name
from dbench.store.derived import sparse_speedups
from dbench.render.tables import results_table, speedup_table


@dataclass(frozen=True)
class RunRequest:
    """Everything the user asked `dbench run` for, JSON-serialisable (kept in the run header)."""

    suite: str | None = None
    ops: tuple[str, ...] = ()
    apps: tuple[str, ...] = ()
    pattern: str | None = None
    kernels: str | None = None
    graphs: str | None = None
    gen: dict[str, Any] = field(default_factory=dict)
    runtime: str = "ort-cpu"
    device: str | None = None
    threads: int | None = None
    weights: str = "auto"
    graph_optimization: str = "all"
    allow_runtime_precision: bool = False
    extra: dict[str, str] = field(default_factory=dict)
    quick: bool = False
    min_time: float | None = None
    max_time: float | None = None
    warmup: float | None = None
    verify: bool = True
    profile_runs: int = 10
    timeout: float = 300.0
    memory_limit: int | None = None
    model: str | None = None
    dims: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: Path) -> "RunRequest":
        """The request stored in a run header; one line naming the log when it is not one this dbench wrote."""
        try:
            return cls(**{**data, "ops": tuple(data["ops"]), "apps": tuple(data["apps"])})
        except (KeyError, TypeError) as err:
            raise DbenchError(f"{source}: its run header does not hold a request this dbench can resume ({err}); "
                              "start a new run") from None

    def timing(self) -> TimingConfig:
        base = QUICK if self.quick else TimingConfig()
        overrides = {k: v for k, v in (("min_time", self.min_time), ("max_time", self.max_time), ("warmup_time", self.warmup)) if v is not None}
        return dataclasses.replace(base, **overrides)

    def config(self) -> RunConfig:
        if self.weights not in ("auto", *WEIGHT_MODES):
            raise UsageError(f"unknown weights mode {self.weights!r}; valid: auto, {', '.join(WEIGHT_MODES)}")
        options = RuntimeOptions(threads=self.threads, device=self.device, graph_optimization=self.graph_optimization,
                                 allow_runtime_precision=self.allow_runtime_precision, extra=dict(self.extra))
        return RunConfig(self.runtime, options, self.timing(), self.weights, self.verify, self.profile_runs,
                         self.timeout, self.memory_limit)


def _folder_items(request: RunRequest) -> list[Item]:
    """A gen folder's graphs, filtered by the same selectors as the catalog (suite only if given)."""
    from dbench.catalog.select import Selection

    selection = Selection(request.suite or "all", request.ops, request.apps, request.pattern)
    return [item for item in items_from_folder(Path(request.graphs))
            if selection.admits(item.spec.kernel_id, item.spec.family, item.spec.op, item.spec.suites, item.spec.apps)]


def build_items(request: RunRequest, int8_form: str) -> list[Item]:
    """The graphs a request names: from a gen folder, or generated in memory from the catalog."""
    if request.model or (request.graphs and not (Path(request.graphs) / MANIFEST).exists()):
        from dbench.foreign.items import folder_items, model_item

        return [model_item(Path(request.model), request.dims)] if request.model else folder_items(Path(request.graphs), request.dims)
    if request.graphs:
        return _folder_items(request)
    from dbench.catalog import Selection, load_catalog, load_kernel_file, select
    from dbench.gen.build import GenOptions, plan

    source = load_kernel_file(Path(request.kernels)) if request.kernels else load_catalog()
    selection = Selection(request.suite or ("all" if request.kernels else "inference"), request.ops, request.apps, request.pattern)
    options = GenOptions.from_fields(request.gen, int8_form)
    return items_from_requests(plan(select(source, selection), selection.suite_tags, options))


def run_session(request: RunRequest, out_dir: Path, resume: str | None, out: Console, err: Console) -> list[dict]:
    """Run (or resume) and return the rows written by this invocation."""
    with ExitStack() as held:  # the run log stays locked until the run ends
        done: set[str] = set()
        if resume:
            log = held.enter_context(RunLog.resume(find_run(out_dir, resume)))
            header = log.header()
            request = RunRequest.from_dict(header.get("request", {}), log.path)
            done = {row["graph_id"] for row in log.rows()}
            run_id = resume
        runtime_cls = require(request.runtime)
        config = request.config()
        runtime_cls(config.options).describe()  # a bad device or option fails here, before a run log exists
        items = build_items(request, runtime_cls.int8_form)
        if not resume:
            folder = ensure_writable(out_dir / machine_name())
            run_id = new_run_id()
            header = {
                "kind": "model" if request.model else "kernels",
                "request": dataclasses.asdict(request),
                "runtime": {"name": request.runtime, "version": runtime_cls.version()},
                "timing": config.timing.to_dict(),
                "host": host_metadata(),
                "command": sys.argv,
                "graphs": len(items),
            }
            log = held.enter_context(RunLog.create(folder, run_id, header))
        pending = [i for i in items if i.spec.id not in done]
        err.print(f"run {run_id}: {len(pending)} graphs on {request.runtime} ({len(done)} already done) -> {log.path}", highlight=False)
        runner = Runner(config, log, run_id)
        columns = (TextColumn("{task.description}", style="cyan"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("ETA"), TimeRemainingColumn())
        with Progress(*columns, console=err, transient=True) as progress:
            task = progress.add_task("starting", total=len(pending))

            def on_row(item: Item, row: dict | None) -> None:
                if row is None:
                    progress.update(task, description=item.spec.id[:60])
                else:
                    progress.advance(task)

            rows = runner.run(items, done, on_row)
        all_rows = log.rows()
        parquet, csv = export_run(log)
        out.print(results_table(all_rows, f"{run_id} · {request.runtime} · {header['host']['cpu_model']}"))
        speedups = sparse_speedups(all_rows)
        if speedups:
            out.print(speedup_table(speedups))
        counts: dict[str, int] = {}
        for row in all_rows:
            counts[row["status"]] = counts.get(row["status"], 0) + 1
        out.print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f" · log {log.path} · {parquet.name}, {csv.name}", highlight=False)
        return rows
