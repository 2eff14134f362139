"""Seeded input data for a graph, drawn from its TensorSpecs, so any machine makes the same feeds."""

from __future__ import annotations

import zlib

import numpy as np

from dbench.gen.graph import GraphSpec, TensorSpec
from dbench.gen.precision import DTYPES, PACKED_BITS


def default_seed(graph_id: str) -> int:
    """A stable per-graph seed (CRC32 of the id), so feeds do not depend on generation order."""
    return zlib.crc32(graph_id.encode())


ZERO_MASK_CHUNK = 2**20
"""Elements per draw of the zero mask. Drawn in chunks into one buffer, the mask is the same random
stream as one whole-array draw, without its temporary array: a 150 MB sparse weight's feed took
0.7-1.1 s in a fresh worker (every round draws it again), 0.3 s chunked."""


def zero_fraction(data: np.ndarray, fraction: float, rng: np.random.Generator) -> None:
    """Zero each element of C-contiguous `data` in place with probability `fraction`: the elements where
    `rng.random(data.shape, dtype=np.float32) < fraction`, drawn chunk by chunk."""
    flat = data.reshape(-1)  # a view: the arrays drawn here are C-contiguous
    draw = np.empty(min(ZERO_MASK_CHUNK, flat.size), dtype=np.float32)
    for start in range(0, flat.size, ZERO_MASK_CHUNK):
        part = flat[start : start + ZERO_MASK_CHUNK]
        mask = draw[: part.size]
        rng.random(part.size, dtype=np.float32, out=mask)
        part[mask < fraction] = 0


def make_tensor(spec: TensorSpec, rng: np.random.Generator) -> np.ndarray:
    """One input: uniform floats or integers in [low, high] (booleans: each True with probability 1/2),
    with `zeros` of the elements zeroed."""
    dtype = DTYPES[spec.dtype]
    if dtype == np.bool_:
        data = rng.random(spec.shape) < 0.5
    elif np.issubdtype(dtype, np.integer):
        # 4-bit values are drawn as int8: a [500000, 1024] weight's int64 draw alone would be 4 GB.
        draw = np.int8 if spec.dtype in PACKED_BITS else np.int64
        data = rng.integers(int(spec.low), int(spec.high), size=spec.shape, endpoint=True, dtype=draw)
    else:
        data = rng.random(spec.shape, dtype=np.float32)  # float32 directly: multi-GB weights stay affordable
        data *= spec.high - spec.low
        data += spec.low
    if spec.zeros:
        zero_fraction(data, spec.zeros, rng)
    return np.asarray(data.astype(dtype, copy=False), order="C")  # 0-d stays 0-d


def make_feeds(spec: GraphSpec, seed: int | None = None) -> dict[str, np.ndarray]:
    """All inputs of a graph, from `seed` (default: the graph's own seed)."""
    rng = np.random.default_rng(spec.seed if seed is None else seed)
    return {t.name: make_tensor(t, rng) for t in spec.inputs}
