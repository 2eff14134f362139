"""Inputs on huge pages (dbench.runtimes.pages): the buffers' alignment and values, the kernel's account of
their backing read back, both CPU runtimes reading a large input from such a buffer and still answering
right, and the row's note when the inputs are not on huge pages."""

from __future__ import annotations

import numpy as np
import pytest

from dbench.catalog import GemmKernel
from dbench.check.verdict import compare
from dbench.gen.feeds import make_feeds
from dbench.gen.plan import GraphRequest, build, reference, tolerance
from dbench.gen.weights import split_feeds
from dbench.runtimes.base import RuntimeOptions
from dbench.runtimes.pages import HUGE_PAGE, Backing, backing, huge_page_array, on_huge_pages, thp_mode

# A GEMV whose weight, fed per call, is 4 MiB: large enough for two huge pages.
GEMV = GemmKernel(m=1024, n=1, k=1024, a_t=False, b_t=False)


def test_huge_page_array_is_aligned_zeroed_and_shaped():
    array = huge_page_array((3, 1000, 700), np.float32)
    assert array.ctypes.data % HUGE_PAGE == 0
    assert array.shape == (3, 1000, 700) and array.dtype == np.float32 and not array.any()


def test_on_huge_pages_copies_large_arrays_and_leaves_small_ones(seed):
    rng = np.random.default_rng(seed)
    large = rng.standard_normal((1024, 1024), dtype=np.float32)
    small = rng.standard_normal((16, 16), dtype=np.float32)
    moved = on_huge_pages(large)
    assert moved is not large and moved.ctypes.data % HUGE_PAGE == 0 and np.array_equal(moved, large)
    assert on_huge_pages(small) is small


def test_the_kernel_backs_a_huge_page_array_as_its_mode_allows():
    """Read from the real /proc/self/smaps: under `always` or `madvise` the buffer is on huge pages (this
    kernel may fail to find a free huge page under memory pressure: then the note must say so)."""
    array = huge_page_array((2 * HUGE_PAGE // 4,), np.float32)
    found = backing([array])
    assert found is not None and found.input_bytes == array.nbytes
    if thp_mode() in ("always", "madvise"):
        assert found.huge_bytes == array.nbytes or "huge pages" in found.short()
    else:
        assert found.huge_bytes == 0 and "transparent huge pages" in found.short()


def test_backing_shares_out_each_mappings_huge_pages(tmp_path):
    """The parse on a written smaps: an array inside a mapping with 2 MiB of AnonHugePages has 2 MiB on
    huge pages; arrays below a huge page are left out."""
    array = np.zeros(3 * HUGE_PAGE // 4, dtype=np.float32)
    begin = array.ctypes.data
    smaps = tmp_path / "smaps"
    smaps.write_text(
        f"{begin - 4096:x}-{begin + array.nbytes + 4096:x} rw-p 00000000 00:00 0\n"
        "Size:              12300 kB\nAnonHugePages:      2048 kB\nVmFlags: rd wr mr mw me ac hg\n"
        "7f0000000000-7f0000001000 r--p 00000000 00:00 0\nAnonHugePages:         0 kB\n"
    )
    assert backing([array, np.zeros(8)], smaps) == Backing(array.nbytes, HUGE_PAGE)
    assert backing([np.zeros(8)], smaps) == Backing(0, 0)
    assert backing([array], tmp_path / "missing") is None


def test_the_note_names_the_share_and_the_mode():
    assert Backing(0, 0).short() is None
    assert Backing(12 << 20, 12 << 20).short() is None
    note = Backing(12 << 20, 0).short()
    assert note.startswith("0 of 12 MiB of inputs on huge pages") and "transparent huge pages" in note


@pytest.mark.parametrize("runtime_name", ["openvino", "ort-cpu"])
def test_a_large_input_is_read_from_huge_page_memory_and_verifies(runtime_name, seed):
    """Weights fed per call: the session's input buffer for the 4 MiB weight is dbench's 2 MiB-aligned
    one (not the runtime's heap or the feed itself), and the GEMV's output still matches numpy's."""
    from dbench.worker.instance import runtime_for

    graph = build(GraphRequest(GEMV, "fp32", "fwd", "gemm"))
    feeds = make_feeds(graph.spec, seed)
    constants, per_call = split_feeds(graph.spec, feeds, "input")
    session = runtime_for(runtime_name, RuntimeOptions(threads=1)).prepare(graph.model, graph.spec, constants)
    session.bind(per_call)
    session.run()
    assert compare(session.outputs(), reference(graph.spec, feeds), tolerance(graph.spec)).ok
    buffers = [b for b in session.input_buffers() if b.nbytes >= HUGE_PAGE]
    assert len(buffers) == 1 and buffers[0].ctypes.data % HUGE_PAGE == 0
    assert not any(np.shares_memory(b, f) for b in buffers for f in per_call.values())
    session.refresh_inputs()
    session.run()
    assert compare(session.outputs(), reference(graph.spec, feeds), tolerance(graph.spec)).ok
    session.close()
