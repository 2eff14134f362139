"""The run loop: for each graph, hand a Job to the worker, turn its Outcome (or its death) into a
result Row, and append the row to the run log at once. A resumed run skips graphs that have a row."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

from dbench.errors import DbenchError, RuntimeSetupError
from dbench.gen.graph import GraphSpec
from dbench.outcome import Outcome, Status
from dbench.orchestrator.worker_process import WorkerProcess
from dbench.runtimes.base import Runtime, RuntimeOptions
from dbench.sources.item import Item
from dbench.store.log import RunLog, resume_command
from dbench.store.schema import Row
from dbench.worker.main import Job
from dbench.worker.timing import TimingConfig

WEIGHT_MODES = ("auto", "const", "input")


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
    timeout: float = 600.0
    memory_limit: int | None = None
    cpus: tuple[int, ...] | None = None
    """CPUs the worker is pinned to (None: wherever the parent may run)."""


class Interrupted(DbenchError):
    """Ctrl-C during a run: every finished row is already in the log."""

    exit_code = 130


def weights_for(spec: GraphSpec, mode: str) -> str:
    """`auto`: weights as constants for inference graphs, fed per call for training ones
    (backward passes, or kernels that are only in the train suite)."""
    if mode != "auto":
        return mode
    training = spec.pass_name != "fwd" or (bool(spec.suites) and set(spec.suites) <= {"train"})
    return "input" if training else "const"


class RunObserver(Protocol):
    """What follows a run as it goes (the terminal's progress display; tests)."""

    def on_start(self, item: Item) -> None:
        """A graph goes to the worker."""

    def on_phase(self, item: Item, phase: str) -> None:
        """The worker began a phase of the graph's job (`preparing`, `timing`, `verifying`...)."""

    def on_row(self, row: Row) -> None:
        """The graph's row is in the log."""


class Runner:
    """Runs items on one runtime through a persistent worker, logging each row as it is made."""

    def __init__(self, config: RunConfig, runtime_cls: type[Runtime], log: RunLog, run_id: str) -> None:
        self.config = config
        self.log = log
        self.run_id = run_id
        self.runtime_info = {"name": config.runtime, "version": runtime_cls.version(),
                             "device": config.options.device or "default"}

    def _outcome(self, worker: WorkerProcess, item: Item, weights: str, observer: RunObserver) -> Outcome:
        if item.unsupported:
            return Outcome(Status.UNSUPPORTED, item.unsupported)
        try:
            data, digest = item.load()
        except OSError as err:
            return Outcome(Status.FAILED, f"cannot read the graph file: {err.strerror}")
        job = Job(spec=item.spec, model=data, sha256=digest, runtime=self.config.runtime, options=self.config.options,
                  timing=self.config.timing, weights=weights, verify=self.config.verify,
                  profile_runs=self.config.profile_runs, contract=item.contract)
        return worker.submit(job, self.config.timeout, lambda name: observer.on_phase(item, name))

    def run(self, items: list[Item], done: set[str], observer: RunObserver) -> list[Row]:
        """Run every item whose graph id is not in `done`, telling `observer` as each starts, enters a
        phase in the worker, and has its row logged."""
        rows = []
        worker = WorkerProcess(self.config.memory_limit, self.config.cpus)
        seq = len(done)
        try:
            for item in items:
                if item.spec.id in done:
                    continue
                observer.on_start(item)
                weights = weights_for(item.spec, self.config.weights)
                outcome = self._outcome(worker, item, weights, observer)
                if outcome.aborts_run:
                    raise RuntimeSetupError(f"{outcome.message}; {seq} rows are in {self.log.path}")
                # The settings in force as the worker read them after prepare; as requested when no graph got that far.
                options = outcome.runtime_options or dataclasses.asdict(self.config.options)
                row = Row.build(self.run_id, seq, item.spec, {**self.runtime_info, "options": options}, weights, outcome)
                self.log.append(row.to_dict())
                rows.append(row)
                seq += 1
                observer.on_row(row)
            worker.close()
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted; {seq} rows are in {self.log.path}; finish with: {resume_command(self.log.path)}") from None
        finally:
            worker.stop()  # a no-op after close; on any error, the worker's group is killed
        return rows
