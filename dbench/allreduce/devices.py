"""Where buffers live: host memory (numpy) or an NVIDIA GPU (CuPy), with the calls that differ and
the free memory and sharing that dbench.allreduce.fits checks a message size against."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from dbench.errors import InputError

GPU_HELP = "pip install 'dbench[gpu]'"


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
