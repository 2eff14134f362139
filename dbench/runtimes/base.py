"""The runtime adapter interface: a Runtime prepares a graph into a Session that binds inputs once,
runs synchronously, returns outputs and profiles per node. The runner times `Session.run` only."""

from __future__ import annotations

import importlib
import importlib.util
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

import numpy as np
import onnx

from dbench.gen.graph import GraphSpec

WEIGHT_MODES = ("const", "input")


@dataclass(frozen=True)
class RuntimeOptions:
    """User choices for a runtime; all recorded in every row.

    threads: intra-op threads (None = every core of this machine).
    weights: `const` materialises weight inputs as constants at load time, `input` feeds them per call.
    device: runtime-specific device name (OpenVINO `CPU`/`GPU`..., CUDA device index).
    allow_runtime_precision: let the runtime choose its execution precision (recorded as such).
    extra: free-form key=value options passed to the runtime (provider options, config keys)."""

    threads: int | None = None
    weights: str = "const"
    device: str | None = None
    graph_optimization: str = "all"
    allow_runtime_precision: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def thread_count(self) -> int:
        return self.threads or os.cpu_count() or 1


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
    container: bool = False
    """Its time includes other listed nodes (a Loop whose body's nodes the profiler reports too): it is
    never added to a kernel-time sum and carries no precision (its inputs are trip counts and flags)."""


class Session(ABC):
    """A prepared graph on one runtime."""

    @abstractmethod
    def bind(self, feeds: dict[str, np.ndarray]) -> None:
        """Copy the inputs to where the runtime reads them, once, outside any timed region."""

    @abstractmethod
    def run(self) -> None:
        """One synchronous execution on the bound inputs; returns when the device is done."""

    @abstractmethod
    def outputs(self) -> dict[str, np.ndarray]:
        """The outputs of the last run, as host numpy arrays (for verification)."""

    @abstractmethod
    def profile(self, runs: int) -> list[NodeProfile]:
        """Per-node kernel time, kernel name and executed precision over `runs` untimed runs. It is the
        session's last use: an adapter that needs a second, profiling model may release the timed one
        first, so that its memory (pre-packed weights) is reused rather than doubled."""

    def device_memory(self) -> int | None:
        """Device memory the session holds, in bytes, where the runtime can tell (GPUs); None on CPU."""
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
    int8_form: ClassVar[str] = "qdq"
    """The int8 graph form this runtime runs best (`qlinear`, `qdq` or `integer`)."""

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
        """The runtime's version string (only called when available)."""
        return importlib.import_module(cls.module).__version__

    @abstractmethod
    def prepare(self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray]) -> Session:
        """Load and compile a graph whose inputs named in `constants` become constant weights holding
        those arrays (empty for `weights=input`), so the runtime may pre-pack them; the arrays must stay
        alive as long as the session. Raises UnsupportedError with the runtime's own message when it
        cannot run the graph."""

    def describe(self) -> dict[str, Any]:
        """The runtime settings actually in force (provider/session options, threads, device)."""
        return {"threads": self.options.thread_count, "weights": self.options.weights}
