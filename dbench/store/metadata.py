"""Host metadata taken at measurement time, so a result can be reproduced and compared across machines."""

from __future__ import annotations

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

PACKAGES = (
    "numpy", "onnx", "onnxruntime", "onnxruntime-gpu", "openvino", "tensorrt", "mpi4py", "mpich",
    "openmpi", "pandas", "pyarrow", "ml_dtypes", "cupy-cuda12x",
)
THREAD_ENV = re.compile(r"^(OMP_|MKL_|OPENBLAS_|KMP_|GOMP_|ORT_|OV_|TBB_|CUDA_VISIBLE_DEVICES|NVIDIA_TF32|DNNL_|ONEDNN_)")


def _cpu() -> dict[str, Any]:
    info: dict[str, Any] = {"model": platform.processor() or platform.machine(), "flags": []}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return info
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "Model", "Hardware") and info["model"] in ("", platform.machine(), platform.processor()):
            info["model"] = value.strip()
        elif key in ("flags", "Features") and not info["flags"]:
            info["flags"] = value.split()
    return info


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
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
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


def machine_name() -> str:
    """A folder-safe name for this machine (its host name), used as results/<machine>/."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname()) or "machine"


def host_metadata() -> dict[str, Any]:
    """CPU model and flags, cores, memory, OS, Python, package versions, dbench version and git
    commit, thread-related environment variables, and the time this was taken (UTC)."""
    cpu = _cpu()
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    return {
        "taken_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_name(),
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
