"""The run loop: for each graph, hand a job to the worker, turn its outcome (or its death) into a
result row, and append the row to the run log at once. A resumed run skips graphs that have a row."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from dbench.orchestrator.worker_process import Failure, Worker
from dbench.worker.timing import TimingConfig
from dbench.worker.main import Job
from dbench.errors import DbenchError, UnsupportedError
from dbench.gen.build import GraphRequest, build
from dbench.gen.feeds import default_seed
from dbench.gen.graph import GraphSpec, graph_id
from dbench.gen.manifest import read_manifest
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.registry import require
from dbench.store.log import RunLog, resume_command
from dbench.store.schema import make_row


@dataclass(frozen=True)
class RunConfig:
    """How to run: runtime and its options, timing, verification, profiling and isolation limits.
    `weights` is `auto` (const for inference graphs, input for training ones), `const` or `input`."""

    runtime: str
    options: RuntimeOptions
    timing: TimingConfig
    weights: str = "auto"
    verify: bool = True
    profile_runs: int = 10
    timeout: float = 300.0
    memory_limit: int | None = None


@dataclass(frozen=True)
class Item:
    """One graph to run: its spec, and how to get its bytes (and expected hash) when its turn comes.
    `unsupported` holds the generator's reason when no graph exists in this precision."""

    spec: GraphSpec
    load: Callable[[], tuple[bytes, str | None]]
    unsupported: str = ""


class Interrupted(DbenchError):
    """Ctrl-C during a run: every finished row is already in the log."""

    exit_code = 130


def items_from_requests(requests: Iterable[GraphRequest]) -> list[Item]:
    """Build each planned graph in memory (fast: graphs hold no weights)."""
    items = []
    for request in requests:
        try:
            graph = build(request)
        except UnsupportedError as err:
            kernel = request.kernel
            gid = graph_id(kernel.id, request.pass_name, request.form, request.precision)
            spec = GraphSpec(id=gid, kernel_id=kernel.id, family=kernel.family, op=kernel.op, params=kernel.params(),
                             suites=kernel.suites, apps=kernel.apps, pass_name=request.pass_name, form=request.form,
                             precision=request.precision, flops=kernel.flops(), flops_executed=0, inputs=(), outputs=(),
                             seed=default_seed(gid))
            items.append(Item(spec, lambda: (b"", None), str(err)))
            continue
        data = graph.model.SerializeToString()
        items.append(Item(graph.spec, lambda data=data: (data, None)))
    return items


def items_from_folder(folder: Path) -> list[Item]:
    """The graphs listed in a folder's manifest; each file is read (and checked) only when run."""

    def loader(path: Path, digest: str) -> Callable[[], tuple[bytes, str | None]]:
        def load() -> tuple[bytes, str | None]:
            return path.read_bytes(), digest

        return load

    return [Item(e.spec, loader(folder / e.file, e.sha256)) for e in read_manifest(folder)]


def weights_for(spec: GraphSpec, mode: str) -> str:
    """`auto`: weights as constants for inference graphs, fed per call for training ones
    (backward passes, or kernels that are only in the train suite)."""
    if mode != "auto":
        return mode
    training = spec.pass_name != "fwd" or (bool(spec.suites) and set(spec.suites) <= {"train"})
    return "input" if training else "const"


class Runner:
    """Runs items on one runtime through a persistent worker, logging each row as it is made."""

    def __init__(self, config: RunConfig, log: RunLog, run_id: str) -> None:
        self.config = config
        self.log = log
        self.run_id = run_id
        runtime_cls = require(config.runtime)
        self.runtime_info = {
            "name": config.runtime,
            "version": runtime_cls.version(),
            "device": config.options.device or "default",
        }
        self.runtime_cls = runtime_cls

    def _job(self, item: Item, options: RuntimeOptions, data: bytes, digest: str | None) -> Job:
        return Job(spec=item.spec.to_dict(), model=data, sha256=digest, runtime=self.config.runtime,
                   options=dataclasses.asdict(options), timing=self.config.timing.to_dict(),
                   verify=self.config.verify, profile_runs=self.config.profile_runs)

    def _outcome(self, worker: Worker, item: Item, options: RuntimeOptions) -> dict:
        if item.unsupported:
            return {"status": "unsupported", "message": item.unsupported}
        try:
            data, digest = item.load()
        except OSError as err:
            return {"status": "failed", "message": f"cannot read the graph file: {err.strerror}"}
        result = worker.submit(self._job(item, options, data, digest), self.config.timeout)
        if isinstance(result, Failure):
            return {"status": result.status, "message": result.message}
        return result

    def run(self, items: list[Item], done: set[str], on_row: Callable[[Item, dict | None], None]) -> list[dict]:
        """Run every item whose graph id is not in `done`; `on_row(item, None)` is called when an
        item starts and `on_row(item, row)` when its row is logged."""
        rows = []
        worker = Worker(self.config.memory_limit)
        seq = len(done)
        try:
            for item in items:
                if item.spec.id in done:
                    continue
                on_row(item, None)
                options = dataclasses.replace(self.config.options, weights=weights_for(item.spec, self.config.weights))
                outcome = self._outcome(worker, item, options)
                # The worker reports the settings in force after prepare; describe here only when it could not.
                info = {**self.runtime_info, "options": outcome.get("runtime_options") or self.runtime_cls(options).describe()}
                row = make_row(self.run_id, seq, item.spec, info, outcome)
                self.log.append(row)
                rows.append(row)
                seq += 1
                on_row(item, row)
        except KeyboardInterrupt:
            worker.stop()
            raise Interrupted(f"interrupted; {seq} rows are in {self.log.path}; finish with: {resume_command(self.log.path)}") from None
        worker.close()
        return rows
