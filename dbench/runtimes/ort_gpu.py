"""ONNX Runtime on NVIDIA GPUs (CUDA and TensorRT execution providers) that never runs on the CPU in
their place: the Python-level provider fallback is off, the session refuses CPU fallback for nodes
(`session.disable_cpu_ep_fallback`), and the providers ONNX Runtime registered are checked after
creation. Inputs and preallocated outputs live on the device; a timed run synchronises the device
explicitly; device time comes from CUDA events on a stream the session owns."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from collections.abc import Mapping
from functools import cache
from typing import Any, ClassVar

import numpy as np
import onnx

from dbench.errors import DbenchError, UnsupportedError
from dbench.gen.graph import GraphSpec
from dbench.runtimes import engine_cache, gpu
from dbench.runtimes.base import RuntimeOptions, Session
from dbench.runtimes.elf import needed_libraries
from dbench.runtimes.onnxruntime import GraphLoadError, OrtRuntime, OrtSession, _ort, _ortvalue
from dbench.runtimes.tensorrt_options import parse_cuda_options, parse_tensorrt_options

INSTALL = "pip install 'dbench[gpu]' in its own environment"
PROVIDER_LIBRARIES = {
    "CUDAExecutionProvider": "libonnxruntime_providers_cuda.so",
    "TensorrtExecutionProvider": "libonnxruntime_providers_tensorrt.so",
}
DLOPENED = {"CUDAExecutionProvider": ["libcudnn.so.9"]}
"""Libraries a provider loads at run time rather than naming as DT_NEEDED (cuDNN for the CUDA EP)."""
FALLBACK_REFUSED = "fallback to CPU EP has been explicitly disabled"


def _installed(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cuda_major() -> int | None:
    """The CUDA major the installed onnxruntime was built for (its build info), None for a CPU build."""
    try:
        from onnxruntime.capi import build_and_package_info
    except ImportError:
        return None
    version = getattr(build_and_package_info, "cuda_version", "") or ""
    return int(version.split(".")[0]) if version.split(".")[0].isdigit() else None


def provider_library(provider: str) -> str | None:
    """Path of the installed onnxruntime's shared library for `provider`, None when it has none."""
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "capi", PROVIDER_LIBRARIES[provider])
    return path if os.path.exists(path) else None


def ort_gpu_problem(provider: str, driver_library: str = gpu.DRIVER_LIBRARY) -> str | None:
    """Why `provider` cannot run here, checked in order: onnxruntime-gpu installed, provider in the
    build, NVIDIA driver and device, every NVIDIA library the provider's .so needs (named), CuPy."""
    if importlib.util.find_spec("onnxruntime") is None:
        return f"onnxruntime-gpu is not installed: {INSTALL}"
    providers = _ort().get_available_providers()
    if provider not in providers:
        cpu = _installed("onnxruntime")
        if _installed("onnxruntime-gpu") is None and cpu:
            return f"onnxruntime-gpu is not installed (the CPU onnxruntime {cpu} is): {INSTALL}"
        return f"{provider} is not in this onnxruntime build ({', '.join(providers)}): {INSTALL}"
    library = provider_library(provider)
    if library is None:
        return f"{PROVIDER_LIBRARIES[provider]} is missing from the onnxruntime package: reinstall with {INSTALL}"
    problem = gpu.driver_problem(driver_library, _cuda_major())
    if problem:
        return problem
    missing = gpu.missing_library(needed_libraries(library) + DLOPENED.get(provider, []))
    if missing:
        return missing
    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed (the session's CUDA stream and events): pip install 'dbench[gpu]'"
    return None


def load_gpu_libraries(provider: str) -> None:
    """Make the pip-installed CUDA/cuDNN (onnxruntime.preload_dlls) and TensorRT libraries (tensorrt_libs,
    loaded RTLD_GLOBAL by soname) findable before the provider library is loaded."""
    ort = _ort()
    if hasattr(ort, "preload_dlls"):
        gpu.quietly(ort.preload_dlls)
    library = provider_library(provider)
    if provider == "TensorrtExecutionProvider" and library:
        gpu.preload(name for name in needed_libraries(library) if name.startswith(("libnvinfer", "libnvonnxparser")))


def tiny_model() -> bytes:
    """Y = X + X on a float[4]: the smallest graph a provider must take whole."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4])
    graph = helper.make_graph([helper.make_node("Add", ["X", "X"], ["Y"])], "probe", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=10).SerializeToString()


@cache
def provider_probe(cls: type[OrtCuda]) -> str | None:
    """Create and run a tiny session on the device, as a real run would; the reason it fails, or None."""
    try:
        runtime = cls(RuntimeOptions())
        session = runtime.make_session(tiny_model(), {}, profiling=False)
        result = session.run(None, {"X": np.ones(4, np.float32)})[0]
    except Exception as err:  # any failure here is the reason the runtime is unusable
        return (
            "a test session on the GPU failed: "
            f"{str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__}"
        )
    return (
        None if np.array_equal(result, np.full(4, 2, np.float32)) else "a test session on the GPU returned wrong values"
    )


def require_provider(session, provider: str) -> None:
    """Refuse a session whose first registered provider is not `provider` (ONNX Runtime would run it
    elsewhere); the message lists what it registered."""
    registered = session.get_providers()
    if not registered or registered[0] != provider:
        raise DbenchError(
            f"onnxruntime registered {registered} instead of {provider}: refusing to time a CPU session as GPU"
        )


class OrtGpuSession(OrtSession):
    """An OrtSession whose outputs are preallocated on the device, whose run waits for the device
    explicitly, and which can time itself with CUDA events on the runtime's stream."""

    def _bind_output(self, binding, output, device: str, device_id: int) -> None:
        """Preallocate the output on the device, so no timed run allocates it."""
        binding.bind_ortvalue_output(
            output.name, _ortvalue(np.zeros(output.shape, _dtype(output.dtype)), device, device_id)
        )

    def run(self) -> None:
        self.session.run_with_iobinding(self.binding, self.runtime.run_options(synchronize=True))

    def _drain(self) -> None:
        """Wait for the whole GPU before the session is freed. The CUDA EP frees pinned CPU buffers in a host
        callback it queues after a run, holding a reference to the pinned allocator; if the session is freed
        first, the callback drops the last one and the allocator's cudaFreeHost runs inside the callback,
        where CUDA refuses it (error 800) and ONNX Runtime aborts: seen once with an LSTM on an H200 (ORT
        1.31.1, docs/runtimes/gpu.md). This wait is the fix that follows from that reading, not yet run on a GPU."""
        from dbench.runtimes.cuda_device import synchronize_device

        if importlib.util.find_spec("cupy"):  # ort-cuda's probe requires CuPy; without it nothing here can wait
            synchronize_device(self.runtime.device)

    def device_time_us(self, iterations: int) -> float | None:
        from dbench.runtimes.cuda_device import device_time_us

        options = self.runtime.run_options(synchronize=False)
        return device_time_us(
            lambda: self.session.run_with_iobinding(self.binding, options), self.runtime.stream, iterations
        )


def _dtype(name: str) -> np.dtype:
    from dbench.gen.precision import DTYPES

    return DTYPES[name]


class OrtCuda(OrtRuntime):
    """ONNX Runtime, CUDAExecutionProvider; inputs and outputs live on the GPU."""

    name: ClassVar[str] = "ort-cuda"
    device_kind: ClassVar[str] = "gpu"
    extra: ClassVar[str] = "gpu"
    provider: ClassVar[str] = "CUDAExecutionProvider"
    session_class: ClassVar[type[OrtSession]] = OrtGpuSession
    supported_options: ClassVar[frozenset[str]] = frozenset(
        {"device", "graph_optimization", "allow_runtime_precision", "extra"}
    )

    def __init__(self, options: RuntimeOptions) -> None:
        super().__init__(options)
        self.device = gpu.device_index(options.device)
        self.validate_values(options)
        self._stream = None

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        try:
            problem = ort_gpu_problem(cls.provider) or provider_probe(cls)
        except Exception as err:  # a probe never raises: its failure is the reason
            problem = f"probe failed: {err}"
        return problem is None, problem or ""

    @classmethod
    def version(cls) -> str:
        return _installed("onnxruntime-gpu") or super().version()

    @classmethod
    def header_metadata(cls, options: RuntimeOptions) -> dict[str, Any]:
        return {"gpu": gpu.gpu_metadata(gpu.device_index(options.device))}

    @classmethod
    def validate_values(cls, options: RuntimeOptions) -> None:
        gpu.device_index(options.device)
        parse_cuda_options(options.extra, options.allow_runtime_precision)

    @property
    def io_device(self) -> tuple[str, int]:
        return "cuda", self.device

    @property
    def stream(self):
        """The CUDA stream this runtime's sessions compute on (given to ONNX Runtime as its user
        compute stream, so CUDA events recorded on it time exactly the session's work)."""
        if self._stream is None:
            from dbench.runtimes.cuda_device import new_stream

            self._stream = new_stream(self.device)
        return self._stream

    def provider_options(self) -> dict[str, str]:
        cuda = parse_cuda_options(self.options.extra, self.options.allow_runtime_precision)
        return {
            "device_id": str(self.device),
            "cudnn_conv_algo_search": cuda.cudnn_conv_algo_search,
            "use_tf32": str(int(cuda.use_tf32)),
            "enable_cuda_graph": str(int(cuda.cuda_graph)),
            **self._stream_option(),
        }

    def _stream_option(self) -> dict[str, str]:
        return {"user_compute_stream": str(self.stream.ptr)} if importlib.util.find_spec("cupy") else {}

    def session_options(self, profiling: bool, intra_threads: int | None = None):
        so = super().session_options(profiling, intra_threads)
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        return so

    def run_options(self, synchronize: bool):
        """RunOptions saying whether a run returns only when the device is done (ONNX Runtime's
        default, made explicit: the host timer must not stop before the GPU does)."""
        options = _ort().RunOptions()
        options.add_run_config_entry("disable_synchronize_execution_providers", "0" if synchronize else "1")
        return options

    def make_session(
        self, model_bytes: bytes, constants: dict[str, Any], profiling: bool, intra_threads: int | None = None
    ):
        load_gpu_libraries(self.provider)
        if self.provider not in _ort().get_available_providers():  # ONNX Runtime would drop it and use the CPU
            raise self.refusal()
        try:
            session = super().make_session(model_bytes, constants, profiling, intra_threads)
        except (GraphLoadError, UnsupportedError) as err:  # ORT's fallback refusal may say "not supported"
            if FALLBACK_REFUSED not in str(err):
                raise
            if ort_gpu_problem(self.provider):  # the provider did not load at all: not this graph's fault
                raise self.refusal() from None
            raise UnsupportedError(
                f"{self.provider} cannot run every node and CPU fallback is refused: {err}"
            ) from None
        require_provider(session, self.provider)
        return session

    def refusal(self) -> DbenchError:
        """The error for a session that could only run on the CPU, with the probe's reason."""
        reason = ort_gpu_problem(self.provider) or "onnxruntime did not load it"
        return DbenchError(f"{self.provider} cannot run here, refusing to run on the CPU instead: {reason}")

    def device_memory(self) -> int | None:
        return gpu.process_device_memory(self.device)

    def describe(self) -> dict[str, Any]:
        cuda_major = _cuda_major() or 13
        trt = _installed("tensorrt-cu13") or _installed("tensorrt")
        options = {k: v for k, v in self.provider_options().items() if k != "user_compute_stream"}
        return {
            **super().describe(),
            "provider_options": options,
            "device": self.device,
            "cpu_fallback": "refused",
            "run_synchronises_device": True,
            "gpu": gpu.gpu_metadata(self.device),
            "libraries": gpu.library_versions(cuda_major, trt),
        }


class OrtTensorrt(OrtCuda):
    """ONNX Runtime, TensorrtExecutionProvider (engines built at session creation, outside timing,
    cached in a folder per key so an engine from another graph, version or GPU is never reused)."""

    name: ClassVar[str] = "ort-trt"
    extra: ClassVar[str] = "gpu"
    provider: ClassVar[str] = "TensorrtExecutionProvider"
    int8_form: ClassVar[str] = "qdq"
    # The TensorRT EP hands TensorRT's parser a serialised copy of its subgraph; whether that keeps
    # in-memory external initializers is untested (no GPU), so its weights go into the model.
    constants_in_memory: ClassVar[bool] = False

    def __init__(self, options: RuntimeOptions) -> None:
        super().__init__(options)
        self.int8 = False
        self.cache_dir: str | None = None

    @classmethod
    def validate_values(cls, options: RuntimeOptions) -> None:
        gpu.device_index(options.device)
        parse_tensorrt_options(options.extra)

    def provider_options(self) -> dict[str, str]:
        return (
            trt_provider_options(
                self.device, self.options.extra, self.options.allow_runtime_precision, self.int8, self.cache_dir
            )
            | self._stream_option()
        )

    def prepare(self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray]) -> Session:
        self.int8 = spec.precision == "int8"  # Q/DQ graphs: TensorRT's explicit quantization
        if parse_tensorrt_options(self.options.extra).engine_cache:
            self.cache_dir = str(
                engine_cache.cache_root() / "ort-trt" / engine_cache.engine_key(self.cache_fields(model, constants))
            )
        return super().prepare(model, spec, constants)

    def cache_fields(self, model: onnx.ModelProto, constants: Mapping[str, np.ndarray]) -> dict[str, Any]:
        """What makes a cached TensorRT EP engine valid: graph and weights, versions, GPU, options."""
        from dbench.runtimes.cuda_device import gpu_identity

        options = trt_provider_options(
            self.device, self.options.extra, self.options.allow_runtime_precision, self.int8, None
        )
        return {
            "graph_sha256": engine_cache.graph_hash(model.SerializeToString(), constants),
            "onnxruntime": self.version(),
            "tensorrt": _installed("tensorrt-cu13") or _installed("tensorrt"),
            **gpu_identity(self.device),
            "provider_options": options,
        }


def trt_provider_options(
    device: int, extra: Mapping[str, str], allow_runtime_precision: bool, int8: bool, cache_dir: str | None
) -> dict[str, str]:
    """TensorRT EP provider options from dbench's settings: fp16 only when the runtime may choose its
    precision, int8 for Q/DQ graphs, builder level/workspace/CUDA graph as asked, engine and timing
    caches in `cache_dir` (None: no cache)."""
    settings = parse_tensorrt_options(extra)
    options = {
        "device_id": str(device),
        "trt_fp16_enable": str(allow_runtime_precision),
        "trt_int8_enable": str(int8),
        "trt_builder_optimization_level": str(settings.builder_optimization_level),
        "trt_cuda_graph_enable": str(settings.cuda_graph),
    }
    if settings.workspace_mb is not None:
        options["trt_max_workspace_size"] = str(settings.workspace_mb << 20)
    if cache_dir is not None:
        options |= {
            "trt_engine_cache_enable": "True",
            "trt_engine_cache_path": cache_dir,
            "trt_timing_cache_enable": "True",
            "trt_timing_cache_path": cache_dir,
        }
    return options
