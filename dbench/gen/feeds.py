"""Seeded input data for a graph, drawn from its TensorSpecs, so any machine makes the same feeds."""

from __future__ import annotations

import zlib

import numpy as np

from dbench.gen.graph import GraphSpec, TensorSpec
from dbench.gen.precision import DTYPES


def default_seed(graph_id: str) -> int:
    """A stable per-graph seed (CRC32 of the id), so feeds do not depend on generation order."""
    return zlib.crc32(graph_id.encode())


def make_tensor(spec: TensorSpec, rng: np.random.Generator) -> np.ndarray:
    """One input: uniform floats or integers in [low, high] (booleans: each True with probability 1/2),
    with `zeros` of the elements zeroed."""
    dtype = DTYPES[spec.dtype]
    if dtype == np.bool_:
        data = rng.random(spec.shape) < 0.5
    elif np.issubdtype(dtype, np.integer):
        data = rng.integers(int(spec.low), int(spec.high), size=spec.shape, endpoint=True, dtype=np.int64)
    else:
        data = rng.random(spec.shape, dtype=np.float32)  # float32 directly: multi-GB weights stay affordable
        data *= spec.high - spec.low
        data += spec.low
    if spec.zeros:
        data[rng.random(spec.shape, dtype=np.float32) < spec.zeros] = 0
    return np.asarray(data.astype(dtype, copy=False), order="C")  # 0-d stays 0-d


def make_feeds(spec: GraphSpec, seed: int | None = None) -> dict[str, np.ndarray]:
    """All inputs of a graph, from `seed` (default: the graph's own seed)."""
    rng = np.random.default_rng(spec.seed if seed is None else seed)
    return {t.name: make_tensor(t, rng) for t in spec.inputs}
