"""The measurement method: warm up by count and time, calibrate, then sample per call with
perf_counter_ns until a minimum time and count are reached, capped by a maximum time. Calls shorter
than `min_sample_ns` are batched so that the clock's own cost stays negligible. Where the runtime has
its own per-call clock it is read after each sample, outside the timed interval."""

from __future__ import annotations

import dataclasses
import gc
import math
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from dbench.worker.stats import CI_THRESHOLD, Stats, summarize


@dataclass(frozen=True)
class TimingConfig:
    """Measurement settings (seconds unless named otherwise); recorded with every run."""

    warmup_calls: int = 1
    """Untimed calls before sampling, at least; the first is the cold call right after preparing."""
    warmup_time: float = 0.05
    min_time: float = 2.0
    min_samples: int = 10
    max_time: float = 10.0
    min_sample_ns: int = 20_000
    ci_threshold: float = CI_THRESHOLD

    def to_dict(self) -> dict:
        return asdict(self)


QUICK = TimingConfig(warmup_calls=1, warmup_time=0.0, min_time=0.02, min_samples=3, max_time=0.5)


def warm_up(call: Callable[[], None], config: TimingConfig) -> tuple[float, float]:
    """Run `call` at least `warmup_calls` times and for at least `warmup_time`; return the first (cold)
    call and the fastest warm-up call in ns (the estimate used to decide batching)."""
    clock = time.perf_counter_ns
    best = first = math.inf
    start = clock()
    count = 0
    while count < config.warmup_calls or clock() - start < config.warmup_time * 1e9:
        t0 = clock()
        call()
        took = clock() - t0
        first = took if count == 0 else first
        best = min(best, took)
        count += 1
        if clock() - start > config.max_time * 1e9:
            break
    return first, best


def measure(call: Callable[[], None], config: TimingConfig,
            runtime_clock: Callable[[], float | None] | None = None) -> Stats:
    """Warm up, then collect per-call samples; the garbage collector is off while sampling.
    `runtime_clock` (the runtime's latency of its last call, µs) is read after each sample, between
    two timed intervals, so it adds no work inside them; a batched sample yields its last call's."""
    warm_start = time.perf_counter()
    first, estimate = warm_up(call, config)
    warmup_s = time.perf_counter() - warm_start
    batch = max(1, math.ceil(config.min_sample_ns / max(estimate, 1)))
    clock = time.perf_counter_ns
    min_ns, max_ns = config.min_time * 1e9, config.max_time * 1e9
    samples: list[float] = []
    append = samples.append
    runtime_us: list[float] = []
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = clock()
        while True:
            if batch == 1:
                t0 = clock()
                call()
                t1 = clock()
                append(t1 - t0)
            else:
                t0 = clock()
                for _ in range(batch):
                    call()
                t1 = clock()
                append((t1 - t0) / batch)
            if runtime_clock is not None and (latency := runtime_clock()) is not None:
                runtime_us.append(latency)
            elapsed = t1 - start
            if elapsed >= max_ns or (elapsed >= min_ns and len(samples) >= config.min_samples):
                break
    finally:
        if gc_was_enabled:
            gc.enable()
    return dataclasses.replace(summarize(samples, batch, config.ci_threshold), warmup_s=warmup_s, first_call_us=first / 1e3,
                               runtime_median_us=float(np.median(runtime_us)) if runtime_us else None)
