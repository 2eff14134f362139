"""Native TensorRT (10 and 11 Python API): an engine built from the ONNX graph with TensorRT's ONNX
parser on a strongly typed network (precision comes from the graph; int8 through Q/DQ), cached on disk
by a key that changes with graph, weights, TensorRT version, GPU and options. Device buffers are
allocated and filled once; a run is one `execute_async_v3` (or one CUDA graph launch) and a stream
synchronisation; device time comes from CUDA events, layers from an IProfiler and the inspector.
Written against NVIDIA's documented API; see docs/runtimes/gpu.md for what has run on a GPU."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import onnx

from dbench.errors import DbenchError, OutOfMemory, UnsupportedError
from dbench.gen.graph import GraphSpec
from dbench.gen.precision import DTYPES
from dbench.runtimes import engine_cache, gpu
from dbench.runtimes.base import Profile, Runtime, RuntimeOptions, Session
from dbench.runtimes.tensorrt_layers import node_profiles, typical_layer_times
from dbench.runtimes.tensorrt_options import TensorrtOptions, parse_tensorrt_options

DISTRIBUTIONS = {"tensorrt-cu13": 13, "tensorrt-cu12": 12, "tensorrt": 13}
"""TensorRT's pip distributions and the CUDA major each is built for."""
INSTALL = (
    "pip install 'dbench[tensorrt10]' (beside 'dbench[gpu]') or 'dbench[tensorrt11]' (TensorRT's wheels "
    "come from NVIDIA's package index)"
)
OOM_WORDS = ("out of memory", "outofmemory", "cudaerrormemoryallocation", "failed to allocate")


def installed_tensorrt() -> tuple[str, int] | None:
    """(TensorRT version, CUDA major) of the installed TensorRT distribution, read from pip's
    metadata without importing it; None when none is installed."""
    for name, cuda_major in DISTRIBUTIONS.items():
        try:
            return importlib.metadata.version(name), cuda_major
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def tensorrt_problem(driver_library: str = gpu.DRIVER_LIBRARY) -> str | None:
    """Why native TensorRT cannot run here (package, CuPy, driver, device, a named library), or None."""
    installed = installed_tensorrt()
    if installed is None or importlib.util.find_spec("tensorrt") is None:
        return f"tensorrt is not installed: {INSTALL}"
    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed (device buffers and CUDA events): pip install 'dbench[tensorrt10]'"
    version, cuda_major = installed
    major = version.split(".")[0]
    return gpu.driver_problem(driver_library, cuda_major) or gpu.missing_library(
        [f"libnvinfer.so.{major}", f"libnvonnxparser.so.{major}"]
    )


def _tensorrt():
    import tensorrt

    return tensorrt


def _capturing_logger(trt):
    """A TensorRT logger keeping its error messages, so a failed parse or build reports TensorRT's words."""

    class CapturingLogger(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.errors: list[str] = []

        def log(self, severity, msg) -> None:
            if int(severity) <= int(trt.ILogger.Severity.ERROR):
                self.errors.append(str(msg).strip())

    return CapturingLogger()


def _raise_build_failure(what: str, messages: list[str]) -> None:
    text = "; ".join(messages[-3:]) or "no message from TensorRT"
    if any(word in text.lower() for word in OOM_WORDS):
        raise OutOfMemory(f"TensorRT {what}: {text}")
    raise UnsupportedError(f"TensorRT {what}: {text}")


def write_external_model(model: onnx.ModelProto, constants: Mapping[str, np.ndarray], folder: Path) -> Path:
    """`model` with the inputs named in `constants` turned into initializers whose bytes are raw files
    beside it (TensorRT's parser reads them; no 2 GiB protobuf limit, no protobuf copy of the weights)."""
    external = onnx.ModelProto()
    external.CopyFrom(model)
    graph = external.graph
    kept = [i for i in graph.input if i.name not in constants]
    moved = [i for i in graph.input if i.name in constants]
    del graph.input[:]
    graph.input.extend(kept)
    for number, value in enumerate(moved):
        array = np.ascontiguousarray(constants[value.name])
        location = f"weight{number}.bin"
        array.tofile(folder / location)
        tensor = graph.initializer.add(
            name=value.name,
            data_type=value.type.tensor_type.elem_type,
            dims=list(array.shape),
            data_location=onnx.TensorProto.EXTERNAL,
        )
        tensor.external_data.add(key="location", value=location)
        tensor.external_data.add(key="length", value=str(array.nbytes))
    path = folder / "model.onnx"
    path.write_bytes(external.SerializeToString())
    return path


class Tensorrt(Runtime):
    """Native TensorRT on one NVIDIA GPU."""

    name: ClassVar[str] = "tensorrt"
    device_kind: ClassVar[str] = "gpu"
    module: ClassVar[str] = "tensorrt"
    extra: ClassVar[str] = "tensorrt10"
    int8_form: ClassVar[str] = "qdq"
    supported_options: ClassVar[frozenset[str]] = frozenset({"device", "extra"})

    def __init__(self, options: RuntimeOptions) -> None:
        super().__init__(options)
        self.settings: TensorrtOptions = parse_tensorrt_options(options.extra)
        self.device = gpu.device_index(options.device)
        self.build: dict[str, Any] = {}

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        try:
            problem = tensorrt_problem()
            if problem is None:
                _tensorrt()
        except Exception as err:  # a TensorRT that does not load says why in its own words
            problem = (
                "tensorrt does not load: "
                f"{str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__}"
            )
        return problem is None, problem or ""

    @classmethod
    def version(cls) -> str:
        installed = installed_tensorrt()
        return installed[0] if installed else ""

    @classmethod
    def header_metadata(cls, options: RuntimeOptions) -> dict[str, Any]:
        return {"gpu": gpu.gpu_metadata(gpu.device_index(options.device))}

    @classmethod
    def validate_values(cls, options: RuntimeOptions) -> None:
        parse_tensorrt_options(options.extra)
        gpu.device_index(options.device)

    def _key_fields(self, trt, model_bytes: bytes, constants: Mapping[str, np.ndarray]) -> dict[str, Any]:
        from dbench.runtimes.cuda_device import gpu_identity

        return {
            "graph_sha256": engine_cache.graph_hash(model_bytes, constants),
            "tensorrt": trt.__version__,
            **gpu_identity(self.device),
            "strongly_typed": True,
            "builder_optimization_level": self.settings.builder_optimization_level,
            "workspace_mb": self.settings.workspace_mb,
        }

    def _build(self, trt, model: onnx.ModelProto, constants: Mapping[str, np.ndarray]) -> bytes:
        logger = _capturing_logger(trt)
        builder = trt.Builder(logger)
        strongly_typed = getattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)  # always on in 11
        network = builder.create_network(1 << int(strongly_typed) if strongly_typed is not None else 0)
        parser = trt.OnnxParser(network, logger)
        with tempfile.TemporaryDirectory(prefix="dbench-trt-") as folder:
            parsed = parser.parse_from_file(str(write_external_model(model, constants, Path(folder))))
        if not parsed:
            errors = [str(parser.get_error(i)).strip() for i in range(parser.num_errors)]
            raise UnsupportedError("TensorRT's ONNX parser: " + "; ".join(errors[:3] or logger.errors[-3:]))
        config = builder.create_builder_config()
        config.builder_optimization_level = self.settings.builder_optimization_level
        if self.settings.workspace_mb is not None:
            config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, self.settings.workspace_mb << 20)
        config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED  # layer and tactic names for profile()
        plan = builder.build_serialized_network(network, config)
        if plan is None:
            _raise_build_failure("could not build an engine", logger.errors)
        return bytes(memoryview(plan))

    def _engine(self, trt, model: onnx.ModelProto, constants: Mapping[str, np.ndarray]):
        """The engine for this graph: from the cache when a file with the same key and header exists,
        else built (and cached); build time recorded apart from any run time."""
        fields = self._key_fields(trt, model.SerializeToString(), constants)
        path = engine_cache.cache_root() / "tensorrt" / f"{engine_cache.engine_key(fields)}.engine"
        plan, note = engine_cache.read_engine(path, fields) if self.settings.engine_cache else (None, "")
        logger = _capturing_logger(trt)
        runtime = trt.Runtime(logger)
        engine = runtime.deserialize_cuda_engine(plan) if plan is not None else None
        if plan is not None and engine is None:
            note = f"engine cache {path} did not deserialise ({'; '.join(logger.errors[-1:])}); rebuilt"
        build_s = None
        if engine is None:
            t0 = time.perf_counter()
            plan = self._build(trt, model, constants)
            build_s = time.perf_counter() - t0
            if self.settings.engine_cache:
                engine_cache.write_engine(path, fields, plan)
            engine = runtime.deserialize_cuda_engine(plan)
            if engine is None:
                _raise_build_failure("could not load the engine it built", logger.errors)
        self.build = {
            "engine_cache_file": str(path) if self.settings.engine_cache else None,
            "engine_from_cache": build_s is None,
            "build_s": build_s,
            "cache_note": note or None,
            "engine_key": fields,
            "weights": "engine constants" if constants else "inputs",
        }
        return runtime, engine

    def prepare(self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray]) -> Session:
        trt = _tensorrt()
        runtime, engine = self._engine(trt, model, constants)
        return TensorrtSession(trt, runtime, engine, spec, self.device, self.settings.cuda_graph)

    def describe(self) -> dict[str, Any]:
        installed = installed_tensorrt()
        return {
            "device": self.device,
            "tensorrt": self.version(),
            "strongly_typed": True,
            "precision_from": "graph (strongly typed network; int8 through Q/DQ)",
            **self.settings.to_dict(),
            **self.build,
            "gpu": gpu.gpu_metadata(self.device),
            "libraries": gpu.library_versions(installed[1] if installed else 13, self.version()),
        }


class TensorrtSession(Session):
    """One engine and execution context with its device buffers bound once."""

    def __init__(self, trt, runtime, engine, spec: GraphSpec, device: int, cuda_graph: bool) -> None:
        from dbench.runtimes.cuda_device import DeviceBuffers

        self.trt, self.runtime, self.engine, self.spec, self.device = trt, runtime, engine, spec, device
        self.logger = _capturing_logger(trt)
        self.context = engine.create_execution_context()
        if self.context is None:
            raise OutOfMemory("TensorRT could not create an execution context (device memory for activations)")
        names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
        tensors = {t.name: t for t in spec.inputs + spec.outputs}
        self.io = {name: tensors[name] for name in names}
        self.buffers = DeviceBuffers(device, {name: t.nbytes for name, t in self.io.items()})
        for name in names:
            self.context.set_tensor_address(name, self.buffers.address(name))
        self.cuda_graph = cuda_graph
        self.graph = None

    def _enqueue(self) -> None:
        if self.graph is not None:
            self.graph.launch(self.buffers.stream)
        elif not self.context.execute_async_v3(self.buffers.stream.ptr):
            raise DbenchError("TensorRT execute_async_v3 failed: " + "; ".join(self.logger.errors[-2:]))

    def bind(self, feeds: dict[str, np.ndarray]) -> None:
        for name, array in feeds.items():
            if name in self.io:
                self.buffers.upload(name, array)
        self.buffers.synchronize()
        if self.cuda_graph:  # one plain enqueue first (TensorRT's lazy set-up), then capture one run
            self._enqueue()
            self.buffers.synchronize()
            stream = self.buffers.stream
            stream.begin_capture()
            self._enqueue()
            self.graph = stream.end_capture()

    def run(self) -> None:
        self._enqueue()
        self.buffers.synchronize()

    def device_time_us(self, iterations: int) -> float | None:
        from dbench.runtimes.cuda_device import device_time_us

        return device_time_us(self._enqueue, self.buffers.stream, iterations)

    def outputs(self) -> dict[str, np.ndarray]:
        return {t.name: self.buffers.download(t.name, DTYPES[t.dtype], t.shape) for t in self.spec.outputs}

    def profile(self, runs: int, warmup: int = 1) -> Profile:
        trt = self.trt
        times: dict[str, list[float]] = defaultdict(list)

        class LayerTimes(trt.IProfiler):
            def __init__(self) -> None:
                trt.IProfiler.__init__(self)

            def report_layer_time(self, layer_name, ms) -> None:
                times[layer_name].append(ms * 1000.0)

        self.graph = None  # the profiler sees plain enqueues only
        self.context.profiler = LayerTimes()
        calls_us = []
        for call in range(warmup + runs):
            start = time.perf_counter()
            self._enqueue()
            self.buffers.synchronize()
            if call >= warmup:
                calls_us.append((time.perf_counter() - start) * 1e6)
        inspector = self.engine.create_engine_inspector()
        inspector.execution_context = self.context
        info = json.loads(inspector.get_engine_information(trt.LayerInformationFormat.JSON))
        layer_us, call_us = typical_layer_times(times, warmup, calls_us)
        return Profile(node_profiles(info, layer_us), call_us)

    def device_memory(self) -> int | None:
        return gpu.process_device_memory(self.device)

    def close(self) -> None:
        self.graph = None
        if getattr(self, "buffers", None) is not None:
            self.buffers.close()
        self.context = self.engine = self.runtime = None
