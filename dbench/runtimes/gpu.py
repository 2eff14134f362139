"""NVIDIA GPU queries shared by the GPU adapters (cuda-python from the `gpu` extra)."""

from __future__ import annotations

from dbench.errors import DbenchError


def device_memory_used(device: int) -> int:
    """Bytes in use on the GPU (all processes: the driver reports no per-process figure here)."""
    try:
        from cuda.bindings import runtime
    except ImportError:
        raise DbenchError("cuda-python is not installed: pip install 'dbench[gpu]'") from None
    (err,) = runtime.cudaSetDevice(device)
    err, free, total = runtime.cudaMemGetInfo()
    if int(err) != 0:
        raise DbenchError(f"cudaMemGetInfo failed on device {device}: error {int(err)}")
    return int(total) - int(free)
