"""CUDA timing for the torch-cuda session: CUDA events around back-to-back calls on the session's
stream, and the same calls captured once into a CUDA graph and replayed (no per-kernel launch cost).
Imported only by CUDA sessions; written against PyTorch's documented torch.cuda API."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

EVENT_ROUNDS = 5
"""Event-timed rounds per figure; the median round is reported."""


def event_time_us(torch, enqueue: Callable[[], None], stream, iterations: int, warmup: int = 1) -> float:
    """Median over EVENT_ROUNDS of the time per call, in µs, between two CUDA events recorded on
    `stream` around `iterations` back-to-back `enqueue()` calls (after `warmup` untimed ones: the
    session is warm from its timed calls; one replays a new CUDA graph once before it is timed), with
    no host synchronisation inside the timed region."""
    for _ in range(warmup):
        enqueue()
    stream.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rounds = []
    for _ in range(EVENT_ROUNDS):
        start.record(stream)
        for _ in range(iterations):
            enqueue()
        end.record(stream)
        end.synchronize()
        rounds.append(start.elapsed_time(end) * 1000.0 / iterations)
    return float(np.median(rounds))


def capture(torch, call: Callable[[], None], stream):
    """`call` captured into a torch.cuda.CUDAGraph on `stream` (after the untimed calls that set up
    the libraries' lazy state, which the timing already made)."""
    graph = torch.cuda.CUDAGraph()
    stream.synchronize()
    with torch.cuda.graph(graph, stream=stream):
        call()
    stream.synchronize()
    return graph
