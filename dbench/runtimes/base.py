"""The runtime adapter interface: a Runtime prepares a graph into a Session that binds inputs once,
runs synchronously, returns outputs and profiles per node. The runner times `Session.run` only.
Optionally (throughput and server rows) it prepares a ConcurrentSession: one compiled graph with
several requests in flight. Options are checked in the parent by `validate` (no runtime imported);
errors are told apart by type: UnsupportedError, OutOfMemory, or DbenchError."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import onnx

from dbench.affinity import available_cpus, format_cpus
from dbench.errors import UnsupportedError, UsageError
from dbench.executed import ExecutedGraph
from dbench.gen.graph import GraphSpec
from dbench.run_options import REQUEST_FLAGS

OPTION_FLAGS = {
    name: REQUEST_FLAGS[name]
    for name in ("threads", "device", "graph_optimization", "allow_runtime_precision", "extra")
}
"""Each RuntimeOptions field and the `dbench run` flag that sets it (for one-line refusals; dbench.run_options)."""


@dataclass(frozen=True)
class RuntimeOptions:
    """User choices for a runtime; all recorded in every row.

    threads: intra-op threads (None = every core of this machine).
    device: runtime-specific device name (OpenVINO `CPU`/`GPU`..., CUDA device index).
    allow_runtime_precision: let the runtime choose its execution precision (recorded as such).
    extra: free-form key=value options passed to the runtime (provider options, config keys)."""

    threads: int | None = None
    device: str | None = None
    graph_optimization: str = "all"
    allow_runtime_precision: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def thread_count(self) -> int:
        """The threads asked for, else one per CPU this process may run on (its pinned CPUs)."""
        return self.threads or len(available_cpus())


@dataclass(frozen=True)
class NodeProfile:
    """One node's execution as the runtime's profiler reports it (times in microseconds per call)."""

    name: str
    op_type: str
    kernel: str
    provider: str
    precision: str
    time_us: float
    calls: int = 1
    """Executions per call of the graph (more than one inside a loop body): `time_us` is their total."""
    weights: str = ""
    """The precision of the weights it read where they differ from its compute precision (a 4-bit
    weight-only kernel: `int4`, beside precision `fp32`); empty: the weights were in `precision`."""
    container: bool = False
    """Its time includes other listed nodes (a Loop whose body's nodes the profiler reports too): it is
    never added to a kernel-time sum and carries no precision (its inputs are trip counts and flags)."""


@dataclass(frozen=True)
class Profile:
    """A profiling pass: each node's time per call, and the pass's own time per call on a clock that
    brackets those nodes (so a node sum above it is a bookkeeping defect, and a pass far slower than the
    timed calls was taken at another moment or perturbed by the profiler)."""

    nodes: list[NodeProfile]
    call_us: float | None
    """The pass's wall time per profiled call (warm-up calls left out); None where it is not known."""


def typical_runs(calls_us: Sequence[float]) -> list[int]:
    """The indices of the profiled runs no slower than their median: node times are means over these
    runs, and the pass's time per call the mean of the same runs, so the node sum stays within it (each
    run's nodes fit inside that run) while a run preempted by other work on a busy machine (a mean's
    weak point) is left out."""
    middle = float(np.median(calls_us))
    return [i for i, call in enumerate(calls_us) if call <= middle]


class Session(ABC):
    """A prepared graph on one runtime."""

    @abstractmethod
    def bind(self, feeds: dict[str, np.ndarray]) -> None:
        """Copy the inputs to where the runtime reads them, once, outside any timed region."""

    @abstractmethod
    def run(self) -> None:
        """One synchronous execution on the bound inputs; returns when the device is done."""

    def refresh_inputs(self) -> None:
        """Bring the bound inputs back into the caches outside a timed call, as a producer that has just
        written them leaves them (dbench.worker.evict): by default, read the arrays bound (ONNX Runtime's
        inputs share their memory); an adapter that copied them elsewhere copies them again."""
        for array in getattr(self, "feeds", {}).values():
            np.asarray(array).view(np.uint8).sum()

    def input_buffers(self) -> list[np.ndarray]:
        """The host arrays a call reads its bound inputs from, for the worker's check of what backs them
        (dbench.runtimes.pages); empty where the adapter does not say (a device's inputs live on it)."""
        return []

    @abstractmethod
    def outputs(self) -> dict[str, np.ndarray]:
        """The outputs of the last run, as host numpy arrays (for verification)."""

    @abstractmethod
    def profile(self, runs: int, warmup: int = 1) -> Profile:
        """Per-node kernel time, kernel name and executed precision over `runs` untimed runs that follow
        `warmup` (at least 1) runs left out: a fresh profiling session is slow for its first few calls
        (ONNX Runtime's gemm_m35_n700_k2048: 3.4, 5.6, 2.9, 1.7 ms before a steady 1.2 ms). It is the
        session's last use: an adapter that needs a second, profiling model may release the timed one
        first, so that its memory (pre-packed weights) is reused rather than doubled. It may be called
        again (a new pass)."""

    def end_profiling(self, warmup: int) -> Profile:
        """The per-node profile of the runs since the session was prepared by `Runtime.prepare_profiling`
        (the first `warmup` left out), with the profiler off for every run after it. Only sessions made
        by an adapter that implements `prepare_profiling` have it."""
        raise UnsupportedError("this session was not prepared with its profiler on (Runtime.prepare_profiling)")

    def runtime_latency_us(self) -> float | None:
        """The runtime's own clock for the last run(), in µs, where it keeps one; None otherwise.
        Read by the timing loop after a sample, outside the timed interval."""
        return None

    def device_time_us(self, iterations: int) -> float | None:
        """Device time per run in µs from device events around `iterations` back-to-back runs (no host
        synchronisation inside), where the runtime has a device clock (GPUs); None otherwise."""
        return None

    def device_graph_time_us(self, iterations: int) -> float | None:
        """Device time per run in µs with the run captured once into a CUDA graph and replayed (no
        launch cost per kernel), where the runtime can capture one; None otherwise."""
        return None

    def gpu_state(self) -> dict[str, Any] | None:
        """The device's clocks, power and temperature now (NVML), read before and after timing where
        the runtime runs on a GPU; None otherwise."""
        return None

    def device_memory(self) -> int | None:
        """Device memory the session holds, in bytes, where the runtime can tell (GPUs); None on CPU."""
        return None

    def executed_graph(self) -> ExecutedGraph:
        """The layers the runtime built for this graph, as its profiler names them, each with the names
        of the graph it was made from (`dbench predict` cuts a model into units with it). Runtimes that
        cannot tell raise UnsupportedError (see `Runtime.reports_execution`)."""
        raise UnsupportedError("this runtime cannot tell which layers it executes for a model")

    def close(self) -> None:
        """Release the session's resources."""


class ConcurrentSession(ABC):
    """A graph compiled once with `requests` requests that may be in flight together, each with its own
    input and output buffers. `run(request)` is one synchronous execution of that request, safe to call
    from several threads at once for different requests: the throughput and server loops
    (dbench.worker.streams, dbench.worker.server) give each request its own thread and time it there."""

    requests: int

    @abstractmethod
    def bind(self, feeds: dict[str, np.ndarray]) -> None:
        """Copy the inputs into every request's own buffers, once, outside any timed region."""

    @abstractmethod
    def run(self, request: int) -> None:
        """One synchronous execution of request `request` (0-based) on its bound inputs."""

    def runner(self, request: int) -> Callable[[], None]:
        """`run(request)` as a call without arguments, for the timed loops' hot path. An adapter returns its
        runtime's own call with the request's buffers bound (a partial of a bound method: no frame of
        dbench's and no lookup between the loop and the runtime, as in a hand-written loop)."""
        return functools.partial(self.run, request)

    @abstractmethod
    def outputs(self, request: int) -> dict[str, np.ndarray]:
        """The outputs of request `request`'s last run, as host numpy arrays (every request is verified)."""

    def streams_executed(self) -> int | None:
        """How many requests the runtime executes at once, as it reports it after compiling (OpenVINO
        may compile fewer streams than asked); None where it does not say."""
        return None

    def close(self) -> None:
        """Release the session's resources."""


class Runtime(ABC):
    """A runtime family adapter, registered by name in `dbench.runtimes.registry`."""

    name: ClassVar[str]
    module: ClassVar[str]
    """The runtime's Python package (looked up, not imported, to tell whether it is installed)."""
    extra: ClassVar[str]
    """The pip extra that installs this runtime (`pip install 'dbench[<extra>]'`)."""
    distributions: ClassVar[tuple[str, ...]] = ()
    """The pip distributions that may provide `module` (their metadata gives the version)."""
    int8_form: ClassVar[str] = "qdq"
    """The int8 graph form this runtime runs best (`qlinear`, `qdq` or `integer`)."""
    supported_options: ClassVar[frozenset[str]] = frozenset()
    """The RuntimeOptions fields this adapter honours beyond their defaults; `validate` refuses the rest."""
    device_kind: ClassVar[str] = "cpu"
    """The memory and processor its rows run on, `cpu` or `gpu`: a row is set against that device's ceilings."""
    reports_execution: ClassVar[bool] = False
    """Its sessions tell which layers they execute for a model (`Session.executed_graph`): `dbench
    predict` needs it to cut a model into the units the runtime really runs."""

    def __init__(self, options: RuntimeOptions) -> None:
        self.options = options

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        """(usable here, reason when not), without raising. Here: whether the package is installed;
        adapters add their own checks (an execution provider in the build)."""
        if importlib.util.find_spec(cls.module) is None:
            return False, f"{cls.module} is not installed: pip install 'dbench[{cls.extra}]'"
        return True, ""

    @classmethod
    def version(cls) -> str:
        """The installed package's version, from its metadata: the parent records it without importing
        the runtime (only called when available)."""
        for distribution in cls.distributions:
            try:
                return importlib.metadata.version(distribution)
            except importlib.metadata.PackageNotFoundError:
                continue
        return "unknown"

    @classmethod
    def validate(cls, options: RuntimeOptions) -> None:
        """Refuse, with one UsageError line, an option this adapter does not honour or a bad value;
        runs in the parent, so it neither imports nor starts the runtime. Adapters extend it with
        their own value checks (`validate_values`)."""
        defaults = RuntimeOptions()
        for name, flag in OPTION_FLAGS.items():
            if name not in cls.supported_options and getattr(options, name) != getattr(defaults, name):
                raise UsageError(
                    f"{flag} is not supported by runtime {cls.name}; leave it out "
                    "(this runtime honours: "
                    f"{', '.join(OPTION_FLAGS[n] for n in OPTION_FLAGS if n in cls.supported_options) or 'none'})"
                )
        cls.validate_values(options)

    @classmethod
    def header_metadata(cls, options: RuntimeOptions) -> dict[str, Any]:
        """Facts about the device the run will use, for the run header, read in the parent without
        importing or starting the runtime (a GPU's NVML record); empty where there are none."""
        return {}

    @classmethod
    def validate_values(cls, options: RuntimeOptions) -> None:
        """The adapter's own checks of supported option values (known `--option` keys, device names)."""

    @abstractmethod
    def prepare(self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray]) -> Session:
        """Load and compile a graph whose inputs named in `constants` become constant weights holding
        those arrays (empty for `weights=input`), so the runtime may pre-pack them; the arrays must stay
        alive as long as the session. Raises UnsupportedError with the runtime's own message when it
        cannot run the graph."""

    def prepare_profiling(
        self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray]
    ) -> Session | None:
        """As `prepare`, with the runtime's profiler on until the session's `end_profiling` turns it off for
        good, so that a slow graph's profile is taken in its timed session, before the timed calls, without
        a second session; None (the default) where the profiler cannot be turned off again: the profile is
        then a separate pass after timing (`Session.profile`)."""
        return None

    def prepare_concurrent(
        self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray], requests: int
    ) -> ConcurrentSession:
        """As `prepare`, with `requests` requests in flight on one compiled graph, each with
        `options.threads` threads (its share of the cores). An adapter without concurrent execution
        leaves this as it is: its throughput and server rows are `unsupported`, with this reason."""
        raise UnsupportedError(
            f"{self.name} has no concurrent execution in dbench yet (throughput and server "
            "scenarios need the adapter's prepare_concurrent; see docs/adding-a-runtime.md)"
        )

    def errors(self) -> AbstractContextManager:
        """A context in which the runtime's own exceptions (raised while preparing, binding, running,
        reading outputs or profiling) become UnsupportedError, OutOfMemory or DbenchError, by type."""
        return nullcontext()

    def describe(self) -> dict[str, Any]:
        """The runtime settings actually in force (provider/session options, threads, device); called
        in the worker after `prepare`, so it may include what the runtime read back."""
        return {"threads": self.options.thread_count, "cpus": format_cpus(available_cpus())}
