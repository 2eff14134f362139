"""Where buffers live: host memory (numpy) or an NVIDIA GPU (CuPy), with the calls that differ, and
whether the largest message fits there, checked before anything is allocated."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from dbench.errors import DbenchError, InputError

if TYPE_CHECKING:  # implementations import this module for Device
    from dbench.allreduce.implementations import Implementation

GPU_HELP = "pip install 'dbench[gpu]'"
RANK_OVERHEAD = 2**26  # host bytes per rank for the interpreter, MPI and the check's temporaries
GB = 1e9


class Host:
    """numpy buffers in host memory; nothing to synchronise."""

    name = "cpu"
    xp: ModuleType = np

    def sync(self) -> None:
        """Host work is synchronous: nothing to wait for."""

    def to_host(self, array: Any) -> np.ndarray:
        return array

    def free_bytes(self) -> int:
        import psutil

        return int(psutil.virtual_memory().available)

    def sharing(self, local_ranks: int) -> int:
        """How many ranks share this memory: every rank on the host."""
        return local_ranks


class Gpu:
    """CuPy buffers on the GPU `local_rank % device_count`; work runs on CuPy's current stream."""

    name = "gpu"

    def __init__(self, local_rank: int, needed_by: str) -> None:
        try:
            import cupy
        except ImportError:
            raise InputError(f"{needed_by} needs CuPy and an NVIDIA GPU: {GPU_HELP}") from None
        try:
            self.devices = cupy.cuda.runtime.getDeviceCount()
        except cupy.cuda.runtime.CUDARuntimeError as error:
            raise InputError(f"{needed_by} needs CuPy and an NVIDIA GPU (CUDA says: {error}): {GPU_HELP}") from None
        if self.devices == 0:
            raise InputError(f"{needed_by} needs CuPy and an NVIDIA GPU (none found): {GPU_HELP}")
        self.xp = cupy
        cupy.cuda.Device(local_rank % self.devices).use()

    def sync(self) -> None:
        """Wait for the queued GPU work, so MPI reads finished buffers and timings cover the work."""
        self.xp.cuda.get_current_stream().synchronize()

    def to_host(self, array: Any) -> np.ndarray:
        return self.xp.asnumpy(array)

    def free_bytes(self) -> int:
        return int(self.xp.cuda.runtime.memGetInfo()[0])

    def sharing(self, local_ranks: int) -> int:
        """How many ranks of this host share one GPU (ranks are dealt round-robin over the GPUs)."""
        return -(-local_ranks // self.devices)


Device = Host | Gpu


def bytes_per_rank(impl: Implementation, elements: int, itemsize: int) -> dict[str, int]:
    """Bytes one rank holds at once for one message, per device: send + receive + scratch buffers,
    plus a host copy of a GPU result for its hash."""
    buffers = (2 * elements + impl.scratch_elements(elements)) * itemsize
    if impl.device.name == "cpu":
        return {"cpu": buffers}
    return {"gpu": buffers, "cpu": elements * itemsize}


def check_fits(elements: int, itemsize: int, impls: list[Implementation], devices: dict[str, Device],
               local_ranks: int) -> None:
    """Raise a clear error when the largest message (`elements` per rank) cannot fit on this host."""
    for name, device in devices.items():
        per_rank = max(bytes_per_rank(i, elements, itemsize).get(name, 0) for i in impls)
        per_rank += RANK_OVERHEAD if name == "cpu" else 0
        sharing = device.sharing(local_ranks)
        needed, free = per_rank * sharing, device.free_bytes()
        if needed > free:
            where = "host memory" if name == "cpu" else "GPU memory"
            raise DbenchError(
                f"size {elements} ({elements * itemsize / GB:.2f} GB per buffer) needs {needed / GB:.1f} GB of {where} "
                f"({sharing} ranks x {per_rank / GB:.2f} GB for send, receive and scratch buffers) "
                f"but {free / GB:.1f} GB is free: choose smaller --sizes or fewer ranks per host")
