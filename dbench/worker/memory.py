"""Memory accounting for the worker: peak resident memory while a kernel is prepared and run (Linux
resets the peak through /proc/self/clear_refs), and a check that a kernel can fit before allocating."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
from collections.abc import Callable
from pathlib import Path

import psutil


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, looked up once per process: find_library starts `ldconfig -p` (about 20 ms),
    which every job of a prediction's hundreds paid before."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


def trim() -> None:
    """Collect garbage and hand freed heap back to the OS (glibc), so the next kernel's peak is its own."""
    gc.collect()
    malloc_trim = _malloc_trim()
    if malloc_trim is not None:
        malloc_trim(0)


def reset_peak() -> bool:
    """Reset this process's peak RSS (VmHWM); False where the kernel does not allow it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss() -> int | None:
    """Peak resident bytes since the last `reset_peak` (VmHWM); None where /proc does not say."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def current_rss() -> int:
    return psutil.Process().memory_info().rss


def available() -> int:
    return psutil.virtual_memory().available
