"""NVIDIA GPU facts the GPU adapters share: cheap probes that say exactly what is missing (driver,
device, a named `.so`), making pip-installed CUDA/TensorRT libraries loadable, and NVML metadata.
Nothing here creates a CUDA context; NVML (nvidia-ml-py) and ctypes only, imported when called."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from functools import cache
from typing import Any

DRIVER_LIBRARY = "libcuda.so.1"
"""The NVIDIA driver's user-space library; loadable only where a driver is installed."""

CUDA_ERRORS = {
    100: "no CUDA-capable device is detected",
    35: "the driver is older than the CUDA runtime",
    999: "unknown error",
    304: "the operating system call failed (device nodes missing?)",
}

NVIDIA_LIBRARY_PREFIXES = (
    "libcudart",
    "libcublas",
    "libcurand",
    "libcufft",
    "libnvrtc",
    "libcudnn",
    "libnvinfer",
    "libnvonnxparser",
)
"""Libraries a probe checks by name; system libraries (libc, libstdc++...) are the loader's business."""


def pip_library_dirs() -> list[str]:
    """Folders where pip-installed NVIDIA wheels put their `.so` files (nvidia/*/lib, tensorrt_libs)."""
    dirs = []
    for root in sys.path:
        if os.path.isdir(root):
            dirs += sorted(glob.glob(os.path.join(root, "nvidia", "*", "lib")))
            dirs += sorted(glob.glob(os.path.join(root, "tensorrt_libs")))
    return dirs


@cache
def _ldconfig_libraries() -> dict[str, str]:
    """soname -> path from the dynamic loader's cache (`ldconfig -p`), empty where there is none."""
    ldconfig = shutil.which("ldconfig") or ("/sbin/ldconfig" if os.path.exists("/sbin/ldconfig") else None)
    if ldconfig is None:
        return {}
    try:
        listing = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    found = {}
    for line in listing.splitlines()[1:]:
        name, _, path = line.strip().partition(" => ")
        found.setdefault(name.split(" ")[0], path)
    return found


def find_library(soname: str, extra_dirs: Iterable[str] = ()) -> str | None:
    """Where the loader (or our preloading) would find `soname`: pip wheel folders, LD_LIBRARY_PATH,
    the loader cache; None when nowhere."""
    dirs = [*extra_dirs, *pip_library_dirs(), *filter(None, os.environ.get("LD_LIBRARY_PATH", "").split(":"))]
    for folder in dirs:
        path = os.path.join(folder, soname)
        if os.path.exists(path):
            return path
    return _ldconfig_libraries().get(soname)


def library_fix(soname: str) -> str:
    """What installs `soname`, as the one-line fix a probe prints."""
    if soname.startswith(("libnvinfer", "libnvonnxparser")):
        major = soname.rsplit(".so.", 1)[-1]
        return (
            f"TensorRT {major}: pip install 'dbench[tensorrt{major}]' (TensorRT's wheels come from NVIDIA's "
            "package index)"
        )
    if soname.startswith("libcudnn"):
        return "cuDNN 9: pip install 'dbench[gpu]'"
    return "the CUDA runtime libraries: pip install 'dbench[gpu]'"


def missing_library(sonames: Iterable[str]) -> str | None:
    """A reason naming the first NVIDIA library in `sonames` that cannot be found, and its fix; else None."""
    for soname in sonames:
        if soname.startswith(NVIDIA_LIBRARY_PREFIXES) and find_library(soname) is None:
            return f"{soname} not found; install {library_fix(soname)}"
    return None


def driver_problem(library: str = DRIVER_LIBRARY, cuda_major: int | None = None) -> str | None:
    """Why no CUDA device can be used here (no driver, driver too old for `cuda_major`, no device),
    asked of the driver itself through ctypes; None when at least one device is there."""
    try:
        driver = ctypes.CDLL(library)
    except OSError:
        return (
            f"no NVIDIA driver: {library} not found (install the NVIDIA driver; a container needs the GPU "
            "passed through)"
        )
    err = driver.cuInit(0)
    if err:
        return (
            f"the NVIDIA driver did not initialise: cuInit error {err} ({CUDA_ERRORS.get(err, 'see cudaError_enum')})"
        )
    version, count = ctypes.c_int(0), ctypes.c_int(0)
    driver.cuDriverGetVersion(ctypes.byref(version))
    if cuda_major is not None and version.value // 1000 < cuda_major:
        return (
            f"the NVIDIA driver supports CUDA {version.value // 1000}.{version.value % 1000 // 10}, this stack "
            f"needs CUDA {cuda_major}: update the driver"
        )
    driver.cuDeviceGetCount(ctypes.byref(count))
    if count.value == 0:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        return "no NVIDIA GPU visible to this process" + (
            f" (CUDA_VISIBLE_DEVICES={visible})" if visible is not None else ""
        )
    return None


def preload(sonames: Iterable[str]) -> None:
    """Load the named libraries from the pip wheels' folders with RTLD_GLOBAL, so that a library loaded
    later that names them (ONNX Runtime's TensorRT EP -> libnvinfer.so.10) resolves to them; setting
    LD_LIBRARY_PATH in a running process would not. Names not found are left to the loader."""
    for soname in sonames:
        path = find_library(soname)
        if path is not None:
            with contextlib.suppress(OSError):
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)


def quietly(call, *args, **kwargs):
    """`call(...)` with its prints to stdout swallowed (onnxruntime.preload_dlls prints its misses)."""
    with contextlib.redirect_stdout(io.StringIO()):
        return call(*args, **kwargs)


def _library_version(soname: str, function: str) -> int | None:
    path = find_library(soname)
    if path is None:
        return None
    try:
        symbol = getattr(ctypes.CDLL(path), function)
    except (OSError, AttributeError):
        return None
    if function == "cudnnGetVersion":
        symbol.restype = ctypes.c_size_t
        return int(symbol())
    version = ctypes.c_int(0)
    return version.value if symbol(ctypes.byref(version)) == 0 else None


def library_versions(cuda_major: int, tensorrt_version: str | None) -> dict[str, Any]:
    """The CUDA runtime, cuDNN and TensorRT versions this process would load (None where absent)."""
    cudart = _library_version(f"libcudart.so.{cuda_major}", "cudaRuntimeGetVersion")
    cudnn = _library_version("libcudnn.so.9", "cudnnGetVersion")
    return {
        "cuda_runtime": f"{cudart // 1000}.{cudart % 1000 // 10}" if cudart else None,
        "cudnn": f"{cudnn // 10000}.{cudnn % 10000 // 100}.{cudnn % 100}" if cudnn else None,
        "tensorrt": tensorrt_version,
    }


def _nvml():
    """The NVML module, initialised, or None where nvidia-ml-py or the driver is missing."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    return pynvml


def _ask(nvml, call, *args, scale: float | None = None):
    """One NVML reading, divided by `scale` if given; None where NVML cannot give it on this device."""
    try:
        value = call(*args)
    except nvml.NVMLError:
        return None
    return value / scale if scale else value


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def gpu_metadata(device: int) -> dict[str, Any]:
    """GPU `device` as NVML reports it: name, UUID, driver, CUDA driver version, compute capability,
    SM/memory clocks (current and max, MHz), power limit (W), total memory. A field NVML cannot give
    is None; without NVML the dict says why."""
    nvml = _nvml()
    if nvml is None:
        return {"nvml": "unavailable: pip install nvidia-ml-py (in 'dbench[gpu]') on a machine with the NVIDIA driver"}
    handle = nvml.nvmlDeviceGetHandleByIndex(device)

    ask = functools.partial(_ask, nvml)

    cuda = ask(nvml.nvmlSystemGetCudaDriverVersion)
    capability = ask(nvml.nvmlDeviceGetCudaComputeCapability, handle)
    memory = ask(nvml.nvmlDeviceGetMemoryInfo, handle)
    return {
        "index": device,
        "name": _text(nvml.nvmlDeviceGetName(handle)),
        "uuid": _text(nvml.nvmlDeviceGetUUID(handle)),
        "driver": _text(nvml.nvmlSystemGetDriverVersion()),
        "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None,
        "compute_capability": f"{capability[0]}.{capability[1]}" if capability else None,
        "sm_clock_mhz": ask(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM),
        "memory_clock_mhz": ask(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_MEM),
        "max_sm_clock_mhz": ask(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_SM),
        "max_memory_clock_mhz": ask(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_MEM),
        "power_limit_w": ask(nvml.nvmlDeviceGetEnforcedPowerLimit, handle, scale=1000),
        "memory_total_bytes": int(memory.total) if memory else None,
    }


def process_device_memory(device: int, pid: int | None = None) -> int | None:
    """Bytes of GPU `device` held by process `pid` (this one by default), from NVML's list of compute
    processes; None where NVML is missing or does not list the process (a container that hides host
    PIDs) — never the whole GPU's use."""
    nvml = _nvml()
    if nvml is None:
        return None
    pid = os.getpid() if pid is None else pid
    try:
        processes = nvml.nvmlDeviceGetComputeRunningProcesses(nvml.nvmlDeviceGetHandleByIndex(device))
    except nvml.NVMLError:
        return None
    used = [p.usedGpuMemory for p in processes if p.pid == pid and p.usedGpuMemory is not None]
    return int(sum(used)) if used else None


def device_index(device: str | None) -> int:
    """The CUDA device index of a `--device` value (`0`, `cuda:1`); UsageError otherwise."""
    from dbench.errors import UsageError

    text = (device or "0").removeprefix("cuda:")
    if not text.isdigit():
        raise UsageError(f"--device {device!r} is not a CUDA device index; use 0, 1, ... or cuda:N")
    return int(text)


def gpu_state(device: int) -> dict[str, Any]:
    """What GPU `device` is doing now, as NVML reports it: SM and memory clocks (MHz), power draw (W),
    temperature (°C) and the clock-event reasons bitmask (throttling: power, thermal, ...), so that a
    row can show the clocks it ran at; a field NVML cannot give is None, and without NVML the dict says why."""
    nvml = _nvml()
    if nvml is None:
        return {"nvml": "unavailable: pip install nvidia-ml-py on a machine with the NVIDIA driver"}
    handle = nvml.nvmlDeviceGetHandleByIndex(device)

    ask = functools.partial(_ask, nvml)

    reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
    )
    return {
        "sm_clock_mhz": ask(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM),
        "memory_clock_mhz": ask(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_MEM),
        "power_w": ask(nvml.nvmlDeviceGetPowerUsage, handle, scale=1000),
        "temperature_c": ask(nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU),
        "clock_event_reasons": ask(reasons, handle) if reasons else None,
    }
