"""ONNX Runtime's plugin execution providers (ONNX Runtime >= 1.23): a provider shipped as a pip package
that carries its shared library, registered at run time with `register_execution_provider_library`
and attached to a session through the devices it offers (`get_ep_devices`,
`SessionOptions.add_provider_for_devices`). One adapter base serves every such package: a provider is
its module name, its distribution and how `--device` picks among its devices. Nodes the provider does
not take run on ONNX Runtime's CPU provider; where each node ran is read from a profiled first call."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import importlib.util
import re
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import onnx

from dbench.errors import DbenchError, UnsupportedError
from dbench.gen.graph import GraphSpec
from dbench.gen.precision import DTYPES
from dbench.runtimes.base import ConcurrentSession, NodeProfile, Profile, Session
from dbench.runtimes.onnxruntime import OrtCpu, OrtSession, _ort

CPU_PROVIDER = "CPUExecutionProvider"
MINIMUM_ORT = (1, 23)
"""The first ONNX Runtime with plugin execution providers (register_execution_provider_library)."""


def _version_tuple(version: str) -> tuple[int, ...]:
    """`1.32.0` -> (1, 32); `1.24.0rc1` -> (1, 24): the major and minor release."""
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found.group(1)), int(found.group(2))) if found else ()


def installed_version(distribution: str) -> str | None:
    """A pip distribution's version, None where it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def register(module: str) -> tuple[str, ...]:
    """Register the plugin library of the installed package `module` with ONNX Runtime, once per
    process (under the module's name), and return the execution provider names it declares. The
    library's path comes from the package's own `get_library_path()`."""
    package = importlib.import_module(module)
    _ort().register_execution_provider_library(module, package.get_library_path())
    return tuple(package.get_ep_names()) if hasattr(package, "get_ep_names") else (package.get_ep_name(),)


def ep_devices(provider: str) -> list[Any]:
    """The OrtEpDevices ONNX Runtime offers for `provider` (its plugin registered first)."""
    return [d for d in _ort().get_ep_devices() if d.ep_name == provider]


def hardware_found() -> str:
    """The hardware ONNX Runtime found on this machine, as its CPU provider's devices name it
    (`CPU AMD`), to say why a plugin offers none."""
    found = [
        f"{d.device.type.name.rsplit('.', 1)[-1]} {d.device.vendor}".strip()
        for d in _ort().get_ep_devices()
        if d.ep_name == CPU_PROVIDER
    ]
    return ", ".join(found) or "none"


def placement(nodes: list[NodeProfile]) -> dict[str, list[str]]:
    """Each execution provider and the nodes ONNX Runtime ran on it, by the profiler's names, in the
    profile's order: a compiling provider's subgraph is one node of its own name."""
    split: dict[str, list[str]] = {}
    for node in nodes:
        split.setdefault(node.provider, []).append(node.name)
    return split


def fell_back_entirely(split: Mapping[str, list[str]], provider: str) -> str | None:
    """Why a graph's time would not be `provider`'s (it ran none of its nodes), else None."""
    if split.get(provider):
        return None
    others = ", ".join(f"{p}: {len(names)}" for p, names in split.items()) or "no node profiled"
    return (
        f"{provider} took none of this graph's nodes; ONNX Runtime ran them all elsewhere ({others}), "
        f"so its time would not be {provider}'s"
    )


class PluginSession(OrtSession):
    """An OrtSession whose first call, on zero inputs, is profiled to learn where each node ran
    (the profiler then stops for good, so the timed calls run unprofiled). The provider's nodes carry
    the precision its own option pins, never their input types' (a fused subgraph's inputs say nothing
    of the precision inside it)."""

    runtime: OrtPluginRuntime

    def profile(self, runs: int, warmup: int = 1) -> Profile:
        return self.runtime.with_provider_precision(super().profile(runs, warmup), self.spec.precision)

    def placement_call(self, constants: Mapping[str, np.ndarray]) -> list[NodeProfile]:
        """One profiled call on zeros of every fed input; the nodes of that call."""
        zeros = {t.name: np.zeros(t.shape, DTYPES[t.dtype]) for t in self.spec.inputs if t.name not in constants}
        binding = self._bind(self.session, zeros)
        self.session.run_with_iobinding(binding)
        return self.end_profiling(warmup=0).nodes


class OrtPluginRuntime(OrtCpu):
    """ONNX Runtime with a plugin execution provider: subclasses name the package (`plugin_module`,
    `plugin_distribution`) and pick a device (`select_device`). Inputs live in host memory; nodes the
    provider leaves run on the CPU provider, and the row says which (`placement`)."""

    plugin_module: ClassVar[str]
    """The plugin package's Python module (its `get_library_path()` and `get_ep_name()`)."""
    plugin_distribution: ClassVar[str]
    """The plugin's pip distribution (its version goes in the row)."""
    serves: ClassVar[str]
    """The hardware the plugin serves, said when it offers no device here."""
    int8_form: ClassVar[str] = "qdq"
    """OpenVINO and TensorRT-RTX read quantization from QuantizeLinear/DequantizeLinear pairs."""
    reports_execution: ClassVar[bool] = False
    """A compiling provider runs its share of a graph as one fused node: ONNX Runtime's profile and
    optimized model do not show the layers inside it, so `dbench predict` cannot cut a model into them."""
    constants_in_memory: ClassVar[bool] = False
    """Weights go into the model's protobuf, the form the plugin's documentation uses (in-memory
    external initializers through a plugin are untested here)."""
    supported_options: ClassVar[frozenset[str]] = frozenset({"threads", "graph_optimization", "device", "extra"})

    split: dict[str, list[str]] | None = None
    """Where the last prepared session ran each node (execution provider -> node names)."""

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        """ONNX Runtime >= 1.23 and the plugin package installed, then (importing ONNX Runtime and
        loading the plugin) at least one device the plugin offers on this machine."""
        install = f"pip install 'dbench[{cls.extra}]'"
        ort_version = installed_version("onnxruntime")
        if importlib.util.find_spec("onnxruntime") is None or ort_version is None:
            return False, f"onnxruntime is not installed: {install}"
        if _version_tuple(ort_version) < MINIMUM_ORT:
            return False, f"onnxruntime {ort_version} has no plugin execution providers (needs >= 1.23): {install}"
        if importlib.util.find_spec(cls.plugin_module) is None:
            return False, f"{cls.plugin_distribution} is not installed: {install}"
        try:
            register(cls.plugin_module)
            devices = ep_devices(cls.provider)
        except Exception as err:  # noqa: BLE001 (a broken install or an incompatible ABI: say so rather than raise)
            return False, f"{cls.plugin_distribution} does not load into onnxruntime {ort_version}: {err}"
        if not devices:
            return False, (
                f"{cls.plugin_distribution} offers no device on this machine (ONNX Runtime found: "
                f"{hardware_found()}); it serves {cls.serves}"
            )
        return True, ""

    @classmethod
    def version(cls) -> str:
        plugin = installed_version(cls.plugin_distribution)
        return f"{installed_version('onnxruntime')} + {cls.plugin_distribution} {plugin}"

    def provider_precision(self, graph_precision: str) -> str:
        """The precision the provider's nodes execute a `graph_precision` graph in, as its own option
        pins it; empty where nothing pins it (the rows then say `unknown` rather than the inputs' type)."""
        return ""

    def with_provider_precision(self, profile: Profile, graph_precision: str) -> Profile:
        """`profile` with the provider's nodes given `provider_precision(graph_precision)`."""
        precision = self.provider_precision(graph_precision)
        nodes = [
            dataclasses.replace(n, precision=precision) if n.provider == self.provider else n for n in profile.nodes
        ]
        return Profile(nodes, profile.call_us)

    def select_device(self, devices: list[Any]) -> Any:
        """The OrtEpDevice `--device` names among the provider's devices (the first by default)."""
        return devices[0]

    def provider_options(self) -> dict[str, str]:
        return dict(self.options.extra)

    def session_providers(self, options) -> None:
        register(self.plugin_module)
        devices = ep_devices(self.provider)
        if not devices:
            raise DbenchError(f"{self.provider} offers no device here; it serves {self.serves}")
        options.add_provider_for_devices([self.select_device(devices)], self.provider_options())
        return None

    def prepare(self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray]) -> Session:
        """A session whose first call tells where each node ran; a graph the provider took none of is
        `unsupported` (its time would be the CPU provider's, under this runtime's name)."""
        self.concurrency = None
        model_bytes, values = self._model_and_constants(model, constants)
        session = PluginSession(self, model_bytes, spec, values, profiling=True)
        nodes = session.placement_call(constants)
        self.split = placement(nodes)
        reason = fell_back_entirely(self.split, self.provider)
        if reason:
            session.close()
            raise UnsupportedError(reason)
        return session

    def prepare_concurrent(
        self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray], requests: int
    ) -> ConcurrentSession:
        """As ort-cpu's (one session, concurrent Run calls), after a single-request session has told
        where the nodes run and refused a graph the provider took none of (its compile is paid twice)."""
        self.prepare(model, spec, constants).close()
        return super().prepare_concurrent(model, spec, constants, requests)

    def prepare_profiling(
        self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray]
    ) -> Session | None:
        return None  # the timed session's profiler already served the placement call: a separate pass

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "plugin": f"{self.plugin_distribution} {installed_version(self.plugin_distribution)}",
            "cpu_fallback": "allowed: nodes the provider does not take run on CPUExecutionProvider",
            **({"placement": self.split} if self.split is not None else {}),
        }
