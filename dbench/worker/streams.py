"""Throughput rounds: every request of a ConcurrentSession kept busy by its own thread, issuing its next
run the moment the last one returns (a closed loop, as benchmark_app's asynchronous mode and
onnxruntime_perf_test -c keep theirs busy). Each run is timed on its thread with perf_counter_ns; the
round's throughput is the inferences over the wall time from the first run's start to the last one's
end (the ramp-down included, as both tools count it), and each run's own time is its latency under load.
Runtimes release the GIL inside a run, so the threads run in parallel; the garbage collector is off."""

from __future__ import annotations

import gc
import itertools
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from dbench.errors import DbenchError
from dbench.runtimes.base import ConcurrentSession
from dbench.stats.samples import kept
from dbench.worker.timing import TimingConfig

POLL_S = 0.002
"""How often the main thread checks whether a time-limited loop may stop."""


@dataclass
class Busy:
    """What one closed loop recorded: each request's run start and end times (ns)."""

    starts: list[list[int]]
    ends: list[list[int]]

    @property
    def inferences(self) -> int:
        return sum(len(e) for e in self.ends)

    @property
    def wall_s(self) -> float:
        """From the first run's start to the last run's end (0 without a run)."""
        if not self.inferences:
            return 0.0
        first = min(s[0] for s in self.starts if s)
        last = max(e[-1] for e in self.ends if e)
        return (last - first) / 1e9

    def latencies_us(self) -> np.ndarray:
        """Every run's own time in µs, in the order the runs started."""
        starts = np.concatenate([np.asarray(s, dtype=np.int64) for s in self.starts])
        ends = np.concatenate([np.asarray(e, dtype=np.int64) for e in self.ends])
        return ((ends - starts) / 1e3)[np.argsort(starts, kind="stable")]


def keep_busy(run: Callable[[int], None], requests: int, done: Callable[[Busy, float], bool],
              budget: int | None = None) -> Busy:
    """Run every request in a loop on its own thread until `done(busy, elapsed_s)` says so (checked every
    POLL_S) or, with `budget`, until that many runs in all were started. An error in any thread stops
    every thread and is raised here."""
    busy = Busy([[] for _ in range(requests)], [[] for _ in range(requests)])
    stop = threading.Event()
    issued = itertools.count()
    errors: list[BaseException] = []
    gate = threading.Barrier(requests + 1)

    def loop(request: int) -> None:
        clock = time.perf_counter_ns
        starts, ends = busy.starts[request].append, busy.ends[request].append
        try:
            gate.wait()
            while not stop.is_set() and (budget is None or next(issued) < budget):
                t0 = clock()
                run(request)
                t1 = clock()
                starts(t0)
                ends(t1)
        except BaseException as err:  # the runtime's error: handed to the main thread, which classifies it
            errors.append(err)
            stop.set()

    threads = [threading.Thread(target=loop, args=(k,), name=f"dbench-request-{k}", daemon=True) for k in range(requests)]
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for thread in threads:
            thread.start()
        gate.wait()
        start = time.perf_counter()
        while budget is None and not stop.is_set():
            time.sleep(POLL_S)
            if done(busy, time.perf_counter() - start):
                stop.set()
        for thread in threads:
            thread.join()
    finally:
        stop.set()
        if gc_was_enabled:
            gc.enable()
    if errors:
        raise errors[0]
    return busy


def warm_up(session: ConcurrentSession, config: TimingConfig) -> float:
    """Every request runs at least `warmup_calls` times (at least once: its first run is cold) and the
    loop at least `warmup_time`, at most the round's `max_time`; returns the seconds it took."""
    started = time.perf_counter()
    calls = max(1, config.warmup_calls)

    def done(busy: Busy, elapsed: float) -> bool:
        return elapsed >= config.max_time or (
            elapsed >= config.warmup_time and all(len(e) >= calls for e in busy.ends))

    keep_busy(session.run, session.requests, done)
    return time.perf_counter() - started


def sample(session: ConcurrentSession, config: TimingConfig) -> Busy:
    """The round's timed loop: until its share of --min-time has passed and every request has done at
    least `min_samples` runs (a request the others starve keeps the loop going), or its share of
    --max-time has passed; or exactly `iterations` runs in all."""
    if config.iterations is not None:
        return keep_busy(session.run, session.requests, lambda busy, elapsed: False, budget=config.iterations)

    def done(busy: Busy, elapsed: float) -> bool:
        return elapsed >= config.max_time or (
            elapsed >= config.min_time and all(len(e) >= config.min_samples for e in busy.ends))

    return keep_busy(session.run, session.requests, done)


def percentiles_us(latencies: np.ndarray) -> dict[str, float]:
    """The exact p50, p90 and p99 of a round's latencies (all of them, not only the kept ones)."""
    p50, p90, p99 = (float(v) for v in np.percentile(latencies, [50, 90, 99]))
    return {"latency_p50_us": p50, "latency_p90_us": p90, "latency_p99_us": p99}


def measure_throughput(session: ConcurrentSession, config: TimingConfig) -> dict[str, Any]:
    """One throughput round: warm up, then the timed closed loop; the round's figures as the row's
    summary (dbench.stats.load) reads them."""
    warmup_s = warm_up(session, config)
    busy = sample(session, config)
    if not busy.inferences:
        raise DbenchError("no request finished within the round's time; raise --max-time")
    latencies = busy.latencies_us()
    return {"mode": "throughput", "streams": session.requests, "streams_executed": session.streams_executed(),
            "inferences": busy.inferences, "wall_s": busy.wall_s, "per_stream": [len(e) for e in busy.ends],
            "latency_us": kept(latencies), **percentiles_us(latencies), "warmup_s": warmup_s, "timed_s": busy.wall_s}


def capacity(session: ConcurrentSession, seconds: float) -> float:
    """Closed-loop inferences per second over about `seconds` (at least two runs per request): the rate
    no arrival process can exceed for long."""
    wanted = 2 * session.requests
    busy = keep_busy(session.run, session.requests, lambda b, elapsed: elapsed >= seconds and b.inferences >= wanted)
    return busy.inferences / busy.wall_s if busy.wall_s > 0 else math.inf
