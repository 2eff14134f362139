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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dbench.errors import DbenchError
from dbench.runtimes.base import ConcurrentSession
from dbench.stats.records import ThroughputRound
from dbench.stats.samples import kept
from dbench.worker.timing import TimingConfig

POLL_S = 0.002
"""How often the main thread checks whether a time-limited loop may stop."""
CHUNK = 4096
"""Runs a request's timestamp buffers hold before its thread allocates the next pair (between two runs:
about a microsecond every CHUNK runs)."""


@dataclass
class Busy:
    """What one closed loop recorded: each request's run start and end times (ns), in buffers of CHUNK
    preallocated by the request's own thread (zero where no run has ended yet), and how many runs each
    request finished (set as its thread ends)."""

    starts: list[list[list[int]]]
    ends: list[list[list[int]]]
    counts: list[int]

    @classmethod
    def empty(cls, requests: int) -> Busy:
        return cls([[] for _ in range(requests)], [[] for _ in range(requests)], [0] * requests)

    def reached(self, runs: int) -> bool:
        """Whether every request has finished at least `runs` runs; readable while the loop runs (the
        threads only write their own buffers; a run's end time is its last write)."""
        if runs <= 0:
            return True
        chunk, offset = divmod(runs - 1, CHUNK)
        return all(len(ends) > chunk and ends[chunk][offset] for ends in self.ends)

    def _times(self, buffers: list[list[list[int]]], request: int) -> np.ndarray:
        count = self.counts[request]
        flat = np.concatenate([np.asarray(b, dtype=np.int64) for b in buffers[request]] or [np.zeros(0, np.int64)])
        return flat[:count]

    @property
    def inferences(self) -> int:
        return sum(self.counts)

    @property
    def wall_s(self) -> float:
        """From the first run's start to the last run's end (0 without a run)."""
        done = [k for k, count in enumerate(self.counts) if count]
        if not done:
            return 0.0
        first = min(self.starts[k][0][0] for k in done)
        last = max(self._times(self.ends, k)[-1] for k in done)
        return (int(last) - first) / 1e9

    def latencies_us(self) -> np.ndarray:
        """Every run's own time in µs, in the order the runs started."""
        requests = range(len(self.counts))
        starts = np.concatenate([self._times(self.starts, k) for k in requests])
        ends = np.concatenate([self._times(self.ends, k) for k in requests])
        return ((ends - starts) / 1e3)[np.argsort(starts, kind="stable")]


def keep_busy(
    calls: Sequence[Callable[[], None]], done: Callable[[Busy, float], bool], budget: int | None = None
) -> Busy:
    """Run each request's call (ConcurrentSession.runner) in a loop on its own thread until `done(busy,
    elapsed_s)` says so (checked every POLL_S) or, with `budget`, until that many runs in all were
    started. The hot path is the runtime's call between two clock reads stored into preallocated lists,
    and one flag read: as lean as a hand-written loop that counts its runs. An error in any thread stops
    every thread and is raised here."""
    busy = Busy.empty(len(calls))
    halt = [
        False
    ]  # written by the main thread (or a failing one), read by the loops: a list item is cheaper than an Event
    tickets = itertools.count()
    errors: list[BaseException] = []
    gate = threading.Barrier(len(calls) + 1)

    def loop(request: int) -> None:
        call, clock, issue = calls[request], time.perf_counter_ns, tickets.__next__
        starts, ends = busy.starts[request], busy.ends[request]
        started, ended = [0] * CHUNK, [0] * CHUNK
        try:
            gate.wait()
            while True:
                starts.append(started)
                ends.append(ended)
                for i in range(CHUNK):
                    if halt[0] or (budget is not None and issue() >= budget):
                        busy.counts[request] = CHUNK * (len(ends) - 1) + i
                        return
                    started[i] = clock()
                    call()
                    ended[i] = clock()
                started, ended = [0] * CHUNK, [0] * CHUNK
        except BaseException as err:  # the runtime's error: handed to the main thread, which classifies it
            errors.append(err)
            halt[0] = True

    threads = [
        threading.Thread(target=loop, args=(k,), name=f"dbench-request-{k}", daemon=True) for k in range(len(calls))
    ]
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for thread in threads:
            thread.start()
        gate.wait()
        start = time.perf_counter()
        while budget is None and not halt[0]:
            time.sleep(POLL_S)
            if done(busy, time.perf_counter() - start):
                halt[0] = True
        for thread in threads:
            thread.join()
    finally:
        halt[0] = True
        if gc_was_enabled:
            gc.enable()
    if errors:
        raise errors[0]
    return busy


def runners(session: ConcurrentSession) -> list[Callable[[], None]]:
    """Each request's call without arguments, for the loop's hot path."""
    return [session.runner(k) for k in range(session.requests)]


def warm_up(session: ConcurrentSession, config: TimingConfig) -> float:
    """Every request runs at least `warmup_calls` times (at least once: its first run is cold) and the
    loop at least `warmup_time`, at most the round's `max_time`; returns the seconds it took."""
    started = time.perf_counter()
    calls = max(1, config.warmup_calls)

    def done(busy: Busy, elapsed: float) -> bool:
        return elapsed >= config.max_time or (elapsed >= config.warmup_time and busy.reached(calls))

    keep_busy(runners(session), done)
    return time.perf_counter() - started


def sample(session: ConcurrentSession, config: TimingConfig) -> Busy:
    """The round's timed loop: until its share of --min-time has passed and every request has done at
    least `min_samples` runs (a request the others starve keeps the loop going), or its share of
    --max-time has passed; or exactly `iterations` runs in all."""
    if config.iterations is not None:
        return keep_busy(runners(session), lambda busy, elapsed: False, budget=config.iterations)

    def done(busy: Busy, elapsed: float) -> bool:
        return elapsed >= config.max_time or (elapsed >= config.min_time and busy.reached(config.min_samples))

    return keep_busy(runners(session), done)


def percentiles_us(latencies: np.ndarray) -> dict[str, float]:
    """The exact p50, p90 and p99 of a round's latencies (all of them, not only the kept ones)."""
    p50, p90, p99 = (float(v) for v in np.percentile(latencies, [50, 90, 99]))
    return {"latency_p50_us": p50, "latency_p90_us": p90, "latency_p99_us": p99}


def measure_throughput(session: ConcurrentSession, config: TimingConfig) -> ThroughputRound:
    """One throughput round: warm up, then the timed closed loop; the round's figures as the row's
    summary (dbench.stats.throughput) reads them."""
    warmup_s = warm_up(session, config)
    busy = sample(session, config)
    if not busy.inferences:
        raise DbenchError("no request finished within the round's time; raise --max-time")
    latencies = busy.latencies_us()
    return ThroughputRound(
        streams=session.requests,
        streams_executed=session.streams_executed(),
        inferences=busy.inferences,
        wall_s=busy.wall_s,
        per_stream=list(busy.counts),
        latency_us=kept(latencies),
        **percentiles_us(latencies),
        warmup_s=warmup_s,
    )


def capacity(session: ConcurrentSession, seconds: float) -> float:
    """Closed-loop inferences per second over about `seconds` (at least two runs per request): the rate
    no arrival process can exceed for long."""
    busy = keep_busy(runners(session), lambda b, elapsed: elapsed >= seconds and b.reached(2))
    return busy.inferences / busy.wall_s if busy.wall_s > 0 else math.inf
