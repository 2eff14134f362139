"""Timing a graph in the cache state a model leaves it (`dbench predict`'s evicted units): before every
timed call, outside the timed interval, the worker reads a buffer as large as the model's traffic
between two uses of the unit (dbench.gen.graph.EVICT_ATTR: every weight of the model and every value its units hand on),
so the unit's weights are where the rest of the model would have pushed them (the last-level cache
where the model fits in it, memory where it does not), whatever this machine's caches are; then it
brings the unit's inputs back (a producer inside the model has just written them). One call per
sample: a batched call would find its weights warm."""

from __future__ import annotations

import dataclasses
import gc
import time
from collections.abc import Callable

import numpy as np

from dbench.stats.records import LatencyRound
from dbench.worker.stats import summarize
from dbench.worker.timing import TimingConfig

WARMUP_CALLS = 2
"""Untimed evicted calls before sampling: the first after preparing also allocates."""


def eviction_buffer(size: int) -> np.ndarray:
    """A buffer of `size` bytes (in 8-byte words), written once so that its pages exist."""
    return np.ones(max(1, size // 8), dtype=np.float64)


def measure_evicted(
    call: Callable[[], None], config: TimingConfig, buffer: np.ndarray, refresh: Callable[[], None]
) -> LatencyRound:
    """One round of single calls, each after reading `buffer` and calling `refresh` (the inputs back in
    the caches), both untimed; sampling stops as `measure`'s does (the round's share of --min-time and
    samples, capped by its share of --max-time, or exactly --iterations calls), the untimed work counted
    in the elapsed time so that a round costs what its share allows."""
    clock = time.perf_counter_ns
    start = clock()
    first = None
    for _ in range(WARMUP_CALLS):
        buffer.sum()
        refresh()
        t0 = clock()
        call()
        took = clock() - t0
        first = took if first is None else first
    warmup_s = (clock() - start) / 1e9
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        samples = _sample(call, config, buffer, refresh)
    finally:
        if gc_was_enabled:
            gc.enable()
    return dataclasses.replace(summarize(samples, 1), warmup_s=warmup_s, first_call_us=first / 1e3)


def _sample(
    call: Callable[[], None], config: TimingConfig, buffer: np.ndarray, refresh: Callable[[], None]
) -> list[float]:
    clock = time.perf_counter_ns
    samples: list[float] = []
    min_ns, max_ns = config.min_time * 1e9, config.max_time * 1e9
    start = clock()
    while True:
        buffer.sum()
        refresh()
        t0 = clock()
        call()
        t1 = clock()
        samples.append(t1 - t0)
        if config.iterations is not None:
            if len(samples) >= config.iterations:
                break
            continue
        elapsed = t1 - start
        if elapsed >= max_ns or (elapsed >= min_ns and len(samples) >= config.min_samples):
            break
    return samples
