"""Host metadata taken at measurement time, so a result can be reproduced and compared across machines."""

from __future__ import annotations

import math
import os
import platform
import re
import socket
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import dbench
from dbench.store.board import board_metadata
from dbench.store.machine import isa_features, key_override, machine_key, microarchitecture

PACKAGES = (
    "archspec",
    "numpy",
    "onnx",
    "onnxruntime",
    "onnxruntime-gpu",
    "openvino",
    "tensorrt",
    "mpi4py",
    "mpich",
    "openmpi",
    "pandas",
    "pyarrow",
    "ml_dtypes",
    "cupy-cuda12x",
    "cupy-cuda13x",
    "nvidia-ml-py",
)
THREAD_ENV = re.compile(
    r"^(OMP_|MKL_|OPENBLAS_|KMP_|GOMP_|ORT_|OV_|TBB_|CUDA_VISIBLE_DEVICES|NVIDIA_TF32|DNNL_|ONEDNN_)"
)


def _cpuinfo() -> dict[str, Any]:
    """The CPU model (and the flags, for when archspec has none) from /proc/cpuinfo, the first CPU's."""
    info: dict[str, Any] = {"model": platform.processor() or platform.machine(), "flags": []}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return info
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "Model", "Hardware") and info["model"] in (
            "",
            platform.machine(),
            platform.processor(),
        ):
            info["model"] = value.strip()
        elif key in ("flags", "Features") and not info["flags"]:
            info["flags"] = value.split()
    return info


def cpu_flags() -> list[str] | None:
    """The host CPU's feature flags as archspec detects them (sorted; with its aliases, e.g. sse3 for
    /proc/cpuinfo's pni), or None where it cannot tell (a platform it does not know)."""
    try:
        import warnings

        import archspec.cpu.detect

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # archspec warns when one of its detectors fails
            features = archspec.cpu.detect.detected_info().features
    except Exception:  # archspec missing or failing here: the caller falls back to /proc/cpuinfo
        return None
    return sorted(features) or None


def _cpu() -> dict[str, Any]:
    """CPU model and flags: the flags from archspec, else /proc/cpuinfo's; the model from /proc/cpuinfo
    (archspec reads an x86 brand string with cpuid, the same text, and none on ARM)."""
    info = _cpuinfo()
    flags = cpu_flags()
    return {**info, "flags": flags} if flags else info


def _memory_bytes() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:  # psutil missing or restricted: metadata is best-effort
        return None


def _git_commit() -> str | None:
    root = Path(dbench.__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            continue
    return versions


def _gpus() -> list[str]:
    """GPU model names, through NVML (nvidia-ml-py, in the gpu extra) where it is installed, else from
    nvidia-smi where that exists; an empty list without an NVIDIA driver."""
    try:
        import pynvml
    except ImportError:
        return _gpus_from_nvidia_smi()
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:  # no driver or no library: no NVIDIA GPU to name
        return []
    try:
        names = [
            pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(pynvml.nvmlDeviceGetCount())
        ]
    except pynvml.NVMLError:
        names = []
    finally:
        pynvml.nvmlShutdown()
    return [name.decode() if isinstance(name, bytes) else str(name) for name in names]


def _gpus_from_nvidia_smi() -> list[str]:
    """GPU model names from nvidia-smi (a board or host without nvidia-ml-py)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()] if out.returncode == 0 else []


def cache_sizes() -> dict[str, int]:
    """cpu0's caches in bytes by level, e.g. {"L1d": 32768, "L2": 524288, "L3": 33554432} (Linux sysfs)."""
    sizes = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level, kind, size = ((index / name).read_text().strip() for name in ("level", "type", "size"))
        except OSError:
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(size[-1:], 1)
        suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
        sizes[f"L{level}{suffix}"] = int(size.rstrip("KMG")) * scale
    return sizes


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the OS has none)."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


BUSY_LOAD_PER_CORE = 0.5
"""A run is flagged busy when the 1-minute load average, net of the run's own threads, exceeds this
many per usable core at its start or its end."""
LOAD_TIME_CONSTANT_S = 60.0
"""The 1-minute load average is an exponential average with this time constant (Linux's calc_load)."""


def is_busy(load: list[float] | None, cores: int | None, own: float = 0.0) -> bool:
    """The busy-machine rule above, for one load reading of which `own` is the run's own (`own_load`)."""
    return bool(load and cores and load[0] - own > cores * BUSY_LOAD_PER_CORE)


def own_load(rows: list[dict[str, Any]], cores: int | None, started_at: str | None) -> float:
    """What the run's own busy threads add to the 1-minute load average by its last row: the most any
    row kept busy (streams x threads, at most the cores), raised through the exponential average over
    the run's length. An upper bound (a worker also waits, verifies, starts): without it, a 2-thread run
    on 2 cores read its own threads as another job's and flagged itself busy at the end."""
    ends = [r["finished_at"] for r in rows if r.get("finished_at")]
    if not rows or not cores or not started_at or not ends:
        return 0.0
    seconds = (datetime.fromisoformat(ends[-1]) - datetime.fromisoformat(started_at)).total_seconds()
    threads = max(
        (r.get("streams_executed") or r.get("streams") or 1)
        * (r.get("threads_per_stream") or (r.get("runtime_options") or {}).get("threads") or cores)
        for r in rows
    )
    return min(threads, cores) * (1.0 - math.exp(-max(seconds, 0.0) / LOAD_TIME_CONSTANT_S))


def _identity() -> dict[str, Any]:
    """What the machine key is built from."""
    cpu = _cpu()
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 0
    return {
        "microarchitecture": microarchitecture(cpu),
        "isa": isa_features(cpu["flags"]),
        "cores": cores,
        "memory_bytes": _memory_bytes(),
        "gpus": _gpus(),
        "cpu_model": cpu["model"],
        "hostname": socket.gethostname(),
    }


def machine_name() -> str:
    """This machine's key (see dbench.store.machine), used as results/<machine>/ for new runs;
    $DBENCH_MACHINE_KEY where it names the machine instead."""
    return key_override() or machine_key(_identity())


def host_metadata() -> dict[str, Any]:
    """Machine key and what it is built from, load average, CPU model and flags, cores, memory, OS,
    Python, package versions, dbench version and git commit, thread-related environment variables,
    and the time this was taken (UTC)."""
    cpu = _cpu()
    identity = _identity()
    affinity = identity["cores"]
    load = load_average()
    override = key_override()
    return {
        "taken_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": override or machine_key(identity),
        "machine_key": override or machine_key(identity),
        **({"machine_key_computed": machine_key(identity)} if override else {}),
        "microarchitecture": identity["microarchitecture"],
        "isa": identity["isa"],
        "gpus": identity["gpus"],
        "load_start": load,
        "caches": cache_sizes(),
        "busy_start": is_busy(load, affinity),
        "hostname": socket.gethostname(),
        "cpu_model": cpu["model"],
        "cpu_flags": cpu["flags"],
        "cpu_count": os.cpu_count(),
        "cpu_affinity": affinity,
        "memory_bytes": _memory_bytes(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "packages": package_versions(),
        "dbench_version": dbench.__version__,
        "git_commit": _git_commit(),
        "board": board_metadata(),
        "env": {k: v for k, v in sorted(os.environ.items()) if THREAD_ENV.match(k)},
    }
