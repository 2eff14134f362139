"""Input buffers on transparent huge pages, and what backs them. A runtime streaming a weight fed per
call (a decode GEMV's 12 MB) runs up to 1.7x slower from 4 KiB pages than from 2 MiB ones on a VM
(nested page walks), and whether malloc'd memory gets huge pages depends on the process's heap
layout, so it changed from one worker process to the next. `OpenVINO`'s `benchmark_app` reads inputs
its numpy made (madvised by numpy); the worker gives every large per-call input that backing on
purpose: 2 MiB-aligned anonymous memory, madvise(MADV_HUGEPAGE), written at once."""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HUGE_PAGE = 2 << 20
"""The x86-64 and common arm64 transparent huge page size; a buffer below it cannot hold one."""
THP_MODE = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def thp_mode(path: Path = THP_MODE) -> str | None:
    """The kernel's transparent huge page mode (`always`, `madvise` or `never`); None where it has none."""
    try:
        text = path.read_text()
    except OSError:
        return None
    chosen = [word[1:-1] for word in text.split() if word.startswith("[")]
    return chosen[0] if chosen else None


def huge_page_array(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A zeroed array in its own anonymous mapping, 2 MiB-aligned, advised onto huge pages where the
    kernel allows it, and written now so that every page is faulted in before any timed call."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    length = -(-max(nbytes, 1) // HUGE_PAGE) * HUGE_PAGE
    region = mmap.mmap(-1, length + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    raw = np.frombuffer(region, dtype=np.uint8)
    start = -raw.ctypes.data % HUGE_PAGE
    if hasattr(mmap, "MADV_HUGEPAGE"):
        region.madvise(mmap.MADV_HUGEPAGE, start, length)
    raw[start : start + length] = 0  # the touch: faults now, not in the first timed calls
    return raw[start : start + nbytes].view(dtype).reshape(shape)


def on_huge_pages(array: np.ndarray) -> np.ndarray:
    """`array` copied onto huge-page-backed memory when it is large enough to hold a huge page (and a
    plain numpy array); smaller arrays, and others, as they are."""
    if type(array) is not np.ndarray or array.nbytes < HUGE_PAGE or array.dtype.hasobject:
        return array
    copy = huge_page_array(array.shape, array.dtype)
    copy[...] = array
    return copy


@dataclass(frozen=True)
class Backing:
    """How the large per-call inputs of a round are backed: their bytes, and those on huge pages."""

    input_bytes: int
    huge_bytes: int

    def short(self) -> str | None:
        """Why the row's inputs are not all on huge pages, with the kernel's mode; None when they are."""
        if self.input_bytes == 0 or self.huge_bytes >= self.input_bytes - HUGE_PAGE:
            return None
        mode = thp_mode()
        return (
            f"{self.huge_bytes / 2**20:.0f} of {self.input_bytes / 2**20:.0f} MiB of inputs on huge pages "
            f"(transparent huge pages: {mode or 'not offered by this kernel'}); a runtime streaming them "
            "may be slower than on a machine that backs them"
        )


def backing(arrays: list[np.ndarray], smaps: Path = Path("/proc/self/smaps")) -> Backing | None:
    """The huge-page backing of the arrays of at least one huge page, from the kernel's own account
    (each mapping's AnonHugePages, shared out by the bytes each array covers); None where /proc does
    not say."""
    large = [a for a in arrays if isinstance(a, np.ndarray) and a.nbytes >= HUGE_PAGE]
    if not large:
        return Backing(0, 0)
    try:
        text = smaps.read_text()
    except OSError:
        return None
    mappings: list[tuple[int, int, int]] = []  # (start, end, huge bytes)
    for line in text.splitlines():
        head = line.split(maxsplit=1)[0]
        if "-" in head and not head.endswith(":"):
            low, _, high = head.partition("-")
            mappings.append((int(low, 16), int(high, 16), 0))
        elif head == "AnonHugePages:" and mappings:
            low, high, _ = mappings[-1]
            mappings[-1] = (low, high, int(line.split()[1]) * 1024)
    huge = 0
    for array in large:
        begin, end = array.ctypes.data, array.ctypes.data + array.nbytes
        for low, high, pages in mappings:
            covered = min(end, high) - max(begin, low)
            if covered > 0 and pages:
                huge += min(covered, pages)
    return Backing(sum(a.nbytes for a in large), huge)
