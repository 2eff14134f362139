"""The job the parent sends the worker: one graph, the runtime and settings to time it with, and what
its source promises about it. A low module, so that the worker's loops and the parent import it
without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

from dbench.gen.graph import GraphSpec
from dbench.runtimes.base import RuntimeOptions
from dbench.scenario import Load
from dbench.sources.contract import Contract
from dbench.worker.timing import TimingConfig


@dataclass(frozen=True)
class Job:
    """One graph to measure. `model` is the serialized ONNX graph (no weights inside, except a foreign
    model's own); `weights` is `const` (weights become constants at load time) or `input` (fed every
    call); `contract` is what its source promises about it (the inputs it expects, what verifies it)."""

    spec: GraphSpec
    model: bytes
    sha256: str | None
    runtime: str
    options: RuntimeOptions
    timing: TimingConfig
    weights: str = "const"
    verify: bool = True
    profile_runs: int = 10
    profile_cap_s: float | None = None
    """The most the per-node profile may cost, in seconds (--quick: the graph's --max-time, so that a
    smoke run spends no more on a profile than on timing); None: profile whatever it costs."""
    round: int = 1
    """Which round of the graph this job is (1-based): the first verifies and profiles."""
    rounds: int = 1
    """How many rounds the graph gets at most (`timing` is one round's share): a server round sends its
    share of the row's arrivals and keeps the slowest latencies their pool needs."""
    contract: Contract = Contract()
    load: Load | None = None
    """Requests in flight (a throughput or server job, dbench.worker.throughput_job); None: one at a time."""
    slowdown: float = 0.0
    """For benchmarks of dbench only (DBENCH_BENCHMARK_SLOWDOWN, dbench.orchestrator.slowdown): each timed
    call is followed, inside its timed interval, by a busy wait of this fraction of its own time: a real,
    known slowdown for measuring whether a comparison finds it. 0: none."""
