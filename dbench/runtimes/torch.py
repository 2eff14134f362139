"""PyTorch as the vendor-library baseline: `torch` (oneDNN and MKL on the CPU) and `torch-cuda` (cuBLAS,
cuDNN, cuSPARSE). Each catalog kernel is built from its GraphSpec, not from the ONNX file
(torch_kernels, torch_rnn, torch_int8), on the same seeded feeds and verified against the same float64
reference by the worker. Precision is pinned: fp32 math stays IEEE fp32 (no TF32, no oneDNN bf16) and
fp16/bf16 GEMMs keep full-precision reductions unless --allow-runtime-precision; the settings in force
are read back into every row. Per-op profiles come from torch.profiler (ATen operators on the CPU,
device kernels on CUDA). On CUDA, device time comes from CUDA events, with and without a CUDA graph,
and NVML's clocks, power and temperature are taken before and after timing."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
from collections.abc import Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import onnx

from dbench.errors import DbenchError, OutOfMemory, RuntimeSetupError, UnsupportedError, UsageError
from dbench.gen.graph import MODEL_FAMILY, GraphSpec
from dbench.runtimes import gpu
from dbench.runtimes.base import Profile, Runtime, RuntimeOptions, Session
from dbench.runtimes.torch_kernels import Conv, Gemm, Sparse, TorchKernel, to_numpy, to_tensor

FOREIGN_FAMILY = MODEL_FAMILY
"""The family of a foreign graph or whole model (dbench.sources.model_spec): it has no specification."""
QUANTIZED_ENGINES = ("x86", "fbgemm", "onednn", "qnnpack")
FLAGS = ("0", "1")
CPU_OPTIONS = {"quantized_engine": QUANTIZED_ENGINES, "mkldnn": FLAGS}
CUDA_OPTIONS = {"cudnn_benchmark": FLAGS}
"""`--option` keys and values: the quantized engine of int8 on the CPU (default PyTorch's), oneDNN on
or off for ATen's CPU convolutions and RNNs (default on), and cuDNN's algorithm search (default 1:
cudnnFind picks the fastest algorithm per shape, as ort-cuda's EXHAUSTIVE search does)."""
OOM_WORDS = ("can't allocate memory", "out of memory")
"""PyTorch's CPU allocator raises a plain RuntimeError (`DefaultCPUAllocator: can't allocate memory`)."""
REFUSED_WORDS = ("cublas_status_not_supported", "cudnn_status_not_supported")
"""A CUDA library saying it has no kernel for this case (seen: cuBLASLt's s8 x s8 GEMM at [32, 64] x [64, 24] on
an H200) is a refusal of the case, like NotImplementedError, not a failure of the run."""


def _torch():
    """PyTorch, imported with the Kineto profiler's progress lines (printed on stderr at every
    profiler start and stop, into the run's progress display) turned off."""
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    import torch

    return torch


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


@contextmanager
def classified():
    """PyTorch's exceptions as dbench's, by type: NotImplementedError (no kernel for this dtype) ->
    UnsupportedError, and so is a CUDA library's NOT_SUPPORTED status; torch.OutOfMemoryError, MemoryError or
    the CPU allocator's failure -> OutOfMemory; any other RuntimeError -> DbenchError."""
    torch = _torch()
    try:
        yield
    except DbenchError:
        raise
    except (MemoryError, torch.OutOfMemoryError) as err:
        raise OutOfMemory(f"out of memory: {_first_line(err)}") from None
    except NotImplementedError as err:
        raise UnsupportedError(f"PyTorch: {_first_line(err)}") from None
    except RuntimeError as err:
        message = _first_line(err)
        if any(word in message.lower() for word in OOM_WORDS):
            raise OutOfMemory(message) from None
        if any(word in message.lower() for word in REFUSED_WORDS):
            raise UnsupportedError(f"PyTorch: {message}") from None
        raise DbenchError(f"PyTorch: {message}") from None


def torch_kernel(torch, spec: GraphSpec, device: str) -> TorchKernel:
    """The PyTorch computation of a graph, chosen by its specification; UnsupportedError with the
    reason where PyTorch has none."""
    from dbench.runtimes.torch_int8 import int8_kernel
    from dbench.runtimes.torch_rnn import rnn_kernel

    if spec.family == FOREIGN_FAMILY:
        raise UnsupportedError(
            "torch runs dbench's catalog kernels from their specification; a foreign graph or "
            "whole model has none (run it on ort-cpu or openvino)"
        )
    if spec.precision == "int8":
        return int8_kernel(torch, spec, device)
    families = {"gemm": Gemm, "conv": Conv, "sparse": Sparse}
    if spec.family == "rnn":
        return rnn_kernel(torch, spec, device)
    if spec.family not in families:
        raise UnsupportedError(f"no PyTorch mapping for the {spec.family} family")
    return families[spec.family](torch, spec, device)


def parse_options(extra: Mapping[str, str], known: dict[str, tuple[str, ...]], runtime: str) -> dict[str, str]:
    """`--option` pairs checked against `known` (UsageError naming the key or value), values lower-cased."""
    for key, value in extra.items():
        if key not in known:
            raise UsageError(f"--option {key} is not a {runtime} option; known: {', '.join(known) or 'none'}")
        if value.lower() not in known[key]:
            raise UsageError(f"--option {key}={value}: use one of {', '.join(known[key])}")
    return {key: value.lower() for key, value in extra.items()}


class TorchSession(Session):
    """One kernel with its weights loaded and inputs bound; run() is the library call."""

    def __init__(self, runtime: TorchCpu, kernel: TorchKernel) -> None:
        self.runtime, self.kernel, self.torch = runtime, kernel, runtime.torch
        self.feeds: dict[str, np.ndarray] = {}

    def bind(self, feeds: dict[str, np.ndarray]) -> None:
        self.feeds = feeds  # the tensors may share these arrays' memory
        self.kernel.bind(
            {name: to_tensor(self.torch, array, self.runtime.device_name) for name, array in feeds.items()}
        )
        self.runtime.synchronize()

    def run(self) -> None:
        self.kernel.run()
        self.runtime.synchronize()

    def outputs(self) -> dict[str, np.ndarray]:
        return {name: to_numpy(self.torch, tensor) for name, tensor in self.kernel.outputs().items()}

    def profile(self, runs: int, warmup: int = 1) -> Profile:
        from dbench.runtimes.torch_profile import CALL_RANGE, dtypes_by_start, parse_events

        torch = self.torch
        for _ in range(warmup - 1):  # warm-up outside the profiler: its events cost, not the calls (a cuDNN LSTM
            self.run()  # of 25 steps, 51 kernels a call, 50 warm-up calls: most of a 1 s pass on a GPU)
        activities = [torch.profiler.ProfilerActivity.CPU] + (
            [torch.profiler.ProfilerActivity.CUDA] if self.runtime.cuda else []
        )
        with torch.profiler.profile(activities=activities, record_shapes=True) as profiler:
            for _ in range(1 + runs):  # one warm-up call inside, left out: the profiler's own first-call cost
                with torch.profiler.record_function(CALL_RANGE):
                    self.run()
        return parse_events(profiler.events(), 1, device=self.runtime.cuda, by_start=dtypes_by_start(profiler))

    def close(self) -> None:
        self.kernel = None
        self.feeds = {}


class CudaSession(TorchSession):
    """A TorchSession on a CUDA stream of its own, timed on the device by CUDA events with and
    without a CUDA graph."""

    graph_note: str | None = None
    """Why the call could not be captured into a CUDA graph (a host synchronisation inside it, such as
    a sparse weight compressed per call), reported in `gpu_state`; None when it was."""

    def device_time_us(self, iterations: int) -> float | None:
        from dbench.runtimes.torch_cuda import event_time_us

        return event_time_us(self.torch, self.kernel.run, self.runtime.stream, iterations)

    def device_graph_time_us(self, iterations: int) -> float | None:
        """Device time of the call replayed as a CUDA graph; None, with the reason kept in
        `graph_note`, where PyTorch cannot capture it (the row's other figures stand)."""
        from dbench.runtimes.torch_cuda import capture, event_time_us

        try:
            graph = capture(self.torch, self.kernel.run, self.runtime.stream)
        except RuntimeError as err:
            self.graph_note = f"not captured: {_first_line(err)}"
            return None
        return event_time_us(self.torch, lambda: graph.replay(), self.runtime.stream, iterations)

    def gpu_state(self) -> dict[str, Any] | None:
        state = gpu.gpu_state(self.runtime.device)
        return {**state, "cuda_graph": self.graph_note} if self.graph_note else state

    def device_memory(self) -> int | None:
        return gpu.process_device_memory(self.runtime.device)


class TorchCpu(Runtime):
    """PyTorch on the CPU: ATen's kernels on oneDNN and MKL, the quantized engine for int8."""

    name: ClassVar[str] = "torch"
    module: ClassVar[str] = "torch"
    extra: ClassVar[str] = "torch"
    distributions: ClassVar[tuple[str, ...]] = ("torch",)
    int8_form: ClassVar[str] = "qlinear"
    supported_options: ClassVar[frozenset[str]] = frozenset({"threads", "allow_runtime_precision", "extra"})
    known_options: ClassVar[dict[str, tuple[str, ...]]] = CPU_OPTIONS
    cuda: ClassVar[bool] = False

    def __init__(self, options: RuntimeOptions) -> None:
        super().__init__(options)
        self.settings = parse_options(options.extra, self.known_options, self.name)
        self.kernel_description: dict[str, Any] | None = None
        """What the last prepared kernel calls (kept as data: the kernel and its tensors go with its session)."""
        self._torch = None

    @property
    def torch(self):
        """PyTorch, configured once for this process (threads, precision flags, engines)."""
        if self._torch is None:
            self._torch = _torch()
            self.configure(self._torch)
        return self._torch

    @property
    def device_name(self) -> str:
        return "cpu"

    @classmethod
    def validate_values(cls, options: RuntimeOptions) -> None:
        parse_options(options.extra, cls.known_options, cls.name)

    def configure(self, torch) -> None:
        """Process-wide settings: no autograd, the threads asked for, fp32 kept IEEE in oneDNN unless the
        runtime may choose, the quantized engine and oneDNN switch asked for."""
        torch.set_grad_enabled(False)
        torch.set_num_threads(self.options.thread_count)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # allowed once per process, before any inter-op work: already set
            pass
        if not self.options.allow_runtime_precision:
            for backend in (torch.backends.mkldnn.matmul, torch.backends.mkldnn.conv, torch.backends.mkldnn.rnn):
                backend.fp32_precision = "ieee"
        if "quantized_engine" in self.settings:
            if self.settings["quantized_engine"] not in torch.backends.quantized.supported_engines:
                raise RuntimeSetupError(
                    f"--option quantized_engine={self.settings['quantized_engine']}: this PyTorch build "
                    f"has {', '.join(torch.backends.quantized.supported_engines)}"
                )
            torch.backends.quantized.engine = self.settings["quantized_engine"]
        torch.backends.mkldnn.enabled = self.settings.get("mkldnn", "1") == "1"

    def synchronize(self) -> None:
        """Wait for the device (nothing to wait for on the CPU: ATen's CPU calls return when done)."""

    def prepare(self, model: onnx.ModelProto, spec: GraphSpec, constants: Mapping[str, np.ndarray]) -> Session:
        torch = self.torch
        kernel = torch_kernel(torch, spec, self.device_name)
        kernel.load({name: to_tensor(torch, array, self.device_name) for name, array in constants.items()})
        self.kernel_description = kernel.describe()
        return self.session_class()(self, kernel)

    def session_class(self) -> type[TorchSession]:
        return TorchSession

    def errors(self) -> AbstractContextManager:
        return classified()

    def describe(self) -> dict[str, Any]:
        torch = self.torch
        mkldnn = torch.backends.mkldnn
        return {
            **super().describe(),
            "torch": torch.__version__,
            "device": self.device_name,
            "intra_op_threads": torch.get_num_threads(),
            "inter_op_threads": torch.get_num_interop_threads(),
            "grad": "disabled",
            "mkldnn_enabled": bool(mkldnn.enabled),
            "fp32_precision": {
                "mkldnn_matmul": mkldnn.matmul.fp32_precision,
                "mkldnn_conv": mkldnn.conv.fp32_precision,
                "mkldnn_rnn": mkldnn.rnn.fp32_precision,
            },
            "quantized_engine": torch.backends.quantized.engine,
            "kernel": self.kernel_description,
        }


class TorchCuda(TorchCpu):
    """PyTorch on one NVIDIA GPU: cuBLAS, cuDNN, cuSPARSE, torch._int_mm. Inputs live on the device,
    work is issued on a stream of the session's own, and run() waits for it."""

    name: ClassVar[str] = "torch-cuda"
    device_kind: ClassVar[str] = "gpu"
    extra: ClassVar[str] = "torch-cuda"
    int8_form: ClassVar[str] = "qdq"
    supported_options: ClassVar[frozenset[str]] = frozenset({"device", "allow_runtime_precision", "extra"})
    known_options: ClassVar[dict[str, tuple[str, ...]]] = CUDA_OPTIONS
    cuda: ClassVar[bool] = True

    def __init__(self, options: RuntimeOptions) -> None:
        super().__init__(options)
        self.device = gpu.device_index(options.device)
        self.stream = None

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        try:
            problem = torch_cuda_problem()
        except Exception as err:  # a probe never raises: its failure is the reason
            problem = f"probe failed: {_first_line(err)}"
        return problem is None, problem or ""

    @classmethod
    def header_metadata(cls, options: RuntimeOptions) -> dict[str, Any]:
        return {"gpu": gpu.gpu_metadata(gpu.device_index(options.device))}

    @classmethod
    def validate_values(cls, options: RuntimeOptions) -> None:
        gpu.device_index(options.device)
        parse_options(options.extra, cls.known_options, cls.name)

    @property
    def device_name(self) -> str:
        return f"cuda:{self.device}"

    def configure(self, torch) -> None:
        """Process-wide settings: no autograd; the device and a stream of our own; TF32 off for cuBLAS
        and cuDNN (fp32_precision `ieee`) and fp16/bf16 GEMMs reducing in full precision unless the
        runtime may choose; cuDNN's algorithm search as asked."""
        torch.set_grad_enabled(False)
        if not torch.cuda.is_available() or self.device >= torch.cuda.device_count():
            raise RuntimeSetupError(
                f"CUDA device {self.device} is not visible to PyTorch "
                f"({torch.cuda.device_count() if torch.cuda.is_available() else 0} visible)"
            )
        torch.cuda.set_device(self.device)
        self.stream = torch.cuda.Stream(self.device)
        torch.cuda.set_stream(self.stream)
        precision = "tf32" if self.options.allow_runtime_precision else "ieee"
        torch.backends.cuda.matmul.fp32_precision = precision
        torch.backends.cudnn.conv.fp32_precision = precision
        torch.backends.cudnn.rnn.fp32_precision = precision
        if not self.options.allow_runtime_precision:
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
            torch.backends.cuda.matmul.allow_fp16_accumulation = False
        torch.backends.cudnn.benchmark = self.settings.get("cudnn_benchmark", "1") == "1"

    def synchronize(self) -> None:
        self.stream.synchronize()

    def session_class(self) -> type[TorchSession]:
        return CudaSession

    def describe(self) -> dict[str, Any]:
        torch = self.torch
        matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
        return {
            "torch": torch.__version__,
            "device": self.device,
            "grad": "disabled",
            "fp32_precision": {
                "cublas": matmul.fp32_precision,
                "cudnn_conv": cudnn.conv.fp32_precision,
                "cudnn_rnn": cudnn.rnn.fp32_precision,
            },
            "reduced_precision_reduction": {
                "fp16": matmul.allow_fp16_reduced_precision_reduction,
                "bf16": matmul.allow_bf16_reduced_precision_reduction,
                "fp16_accumulation": matmul.allow_fp16_accumulation,
            },
            "cudnn_benchmark": bool(cudnn.benchmark),
            "cudnn_deterministic": bool(cudnn.deterministic),
            "cudnn_algorithm": "chosen by cuDNN (the profile's kernel names show it)",
            "libraries": {"cuda_runtime": torch.version.cuda, "cudnn": cudnn.version()},
            "device_time": "CUDA events around back-to-back calls; device_graph_median_us: the same call replayed "
            "as a CUDA graph",
            "gpu": gpu.gpu_metadata(self.device),
            "kernel": self.kernel_description,
        }


def installed_cuda_version(package: Path) -> str | None:
    """The CUDA version an installed torch was built for, read from its `version.py` without importing
    it (None for a CPU build)."""
    text = (package / "version.py").read_text() if (package / "version.py").exists() else ""
    found = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([\d.]+)['\"]", text, re.MULTILINE)
    return found.group(1) if found else None


def torch_package() -> Path | None:
    """The installed torch package's folder, found without importing it."""
    spec = importlib.util.find_spec("torch")
    return Path(list(spec.submodule_search_locations)[0]) if spec and spec.submodule_search_locations else None


def torch_cuda_problem(driver_library: str = gpu.DRIVER_LIBRARY, package: Path | None = None) -> str | None:
    """Why torch-cuda cannot run here, checked in order without importing torch: torch installed, a
    CUDA build, the NVIDIA driver and a device, every NVIDIA library libtorch_cuda.so names.
    `package`: the torch folder to check (default the installed one)."""
    package = package or torch_package()
    if package is None:
        return "torch is not installed: pip install 'dbench[torch-cuda]' (a CUDA build of PyTorch)"
    cuda = installed_cuda_version(package)
    if cuda is None:
        version = importlib.metadata.version("torch")
        return (
            f"the installed torch {version} is a CPU build: install a CUDA build of PyTorch (pip install "
            "'dbench[torch-cuda]')"
        )
    problem = gpu.driver_problem(driver_library, int(cuda.split(".")[0]))
    if problem:
        return problem
    from dbench.runtimes.elf import needed_libraries

    library = package / "lib" / "libtorch_cuda.so"
    return gpu.missing_library(needed_libraries(library)) if library.exists() else None
