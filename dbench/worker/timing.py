"""The measurement method: every graph is timed in `rounds` rounds spread over the run, each in a fresh
worker process and session (the run loop's job); inside one round, warm up by count and time, then
sample per call with perf_counter_ns until the round's share of the minimum time and count is reached,
capped by its share of the maximum time (or exactly a number of calls). A round after the first pays
its own work (inputs, preparing, warm-up) out of that share, so rounds divide a graph's time instead
of adding to it. Calls shorter than `min_sample_ns` are batched so that the clock's own cost stays
negligible. Where the runtime has its own per-call clock it is read after each sample, outside the
timed interval."""

from __future__ import annotations

import dataclasses
import gc
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from dbench.stats.records import LatencyRound
from dbench.worker.stats import summarize

DEFAULT_PERCENTILES = (50.0, 90.0, 99.0)


@dataclass(frozen=True)
class TimingConfig:
    """Measurement settings per graph (seconds unless named otherwise), all rounds together; recorded
    with every run. `iterations` (calls per graph) replaces the time limits when set."""

    warmup_calls: int = 1
    """Untimed calls before each round's sampling, at least; the first is the cold call right after preparing."""
    warmup_time: float = 0.05
    min_time: float = 2.0
    """Seconds of sampling per graph, all rounds together; a round after the first counts its own work in."""
    min_samples: int = 9
    """At least this many samples per graph, all rounds together: 3 a round at the default 3 rounds, a
    later round's warm-up calls off its share (`paid`). The schema-2 default of 10 in one session became
    4 a round, 12 in all, and the slow graphs' extra calls alone grew the default run by about 5 %."""
    max_time: float = 10.0
    min_sample_ns: int = 20_000
    rounds: int = 3
    """Rounds per graph, each in its own worker process and session at another moment of the run."""
    iterations: int | None = None
    percentiles: tuple[float, ...] = DEFAULT_PERCENTILES
    unstable_above: float = 0.05
    """A row is unstable when the interval a re-run's median should fall in is wider than ± this fraction."""
    share_rounds: int | None = None
    """The rounds the sampling time is divided among when that is not `rounds`: under --resolve, `rounds`
    is the most a graph may get, while each round samples the share a fixed run of `share_rounds` would
    (so the rounds are as long as those `dbench calibrate` measured)."""
    round_cost_cap: float | None = None
    """Another round only while a round's own cost outside sampling (inputs, preparing, warm-up) is at
    most this many times a round's share of --max-time, and a per-node profile only while it costs at
    most this many times the graph's --max-time; None: rounds and profiles whatever they cost. --quick
    sets 1: a smoke run's own work must not cost more than its sampling (a 2 GB GEMV's round: ~10 s
    for 0.17 s; a 5 s GRU's profile: a second session and two calls)."""

    def to_dict(self) -> dict:
        return asdict(self)

    def round_too_costly(self, cost_s: float) -> bool:
        """Whether a round whose own cost outside sampling is `cost_s` is over the round cost cap (never
        without one): the run loop then gives the graph no further round, and the plan counts it so."""
        return self.round_cost_cap is not None and cost_s > self.round_cost_cap * self.max_time / max(
            1, self.share_rounds or self.rounds
        )

    def profile_cap_s(self) -> float | None:
        """With a round cost cap (--quick), the most a graph's per-node profile may cost: the cap times
        the graph's --max-time; None without one."""
        return None if self.round_cost_cap is None else self.round_cost_cap * self.max_time

    def per_round(self) -> TimingConfig:
        """One round's share: the time limits, sample count and iterations divided by the rounds."""
        rounds = max(1, self.share_rounds or self.rounds)
        return dataclasses.replace(
            self,
            rounds=1,
            share_rounds=None,
            min_time=self.min_time / rounds,
            max_time=self.max_time / rounds,
            min_samples=max(1, math.ceil(self.min_samples / rounds)),
            iterations=None if self.iterations is None else max(1, math.ceil(self.iterations / rounds)),
        )

    def paid(self, own_s: float, warmup_calls: int) -> TimingConfig:
        """A later round's share once it has paid for its own work: its cost outside sampling (`own_s`:
        inputs, preparing, warm-up) off its share of --min-time, and its warm-up calls off its share of
        samples (one sample stays: the rounds, not a round's samples, carry the row's interval). The
        first round pays nothing, so the later rounds cost about what a one-round run would sample
        instead: at the defaults a 0.65 s call takes 3 samples in the first round and a cold call and 2
        samples in each later one (9 calls after the first warm-up, as one round's 9 samples; at 5
        rounds 2, then a cold call and 1); a 1 ms call samples 0.67 s in the first round and 0.67 s less
        its own cost in each later one. With --iterations the count stands."""
        if self.iterations is not None:
            return self
        return dataclasses.replace(
            self, min_time=max(0.0, self.min_time - own_s), min_samples=max(1, self.min_samples - warmup_calls)
        )


QUICK = TimingConfig(warmup_calls=1, warmup_time=0.0, min_time=0.02, min_samples=3, max_time=0.5, round_cost_cap=1.0)


@dataclass(frozen=True)
class Warmed:
    """Untimed calls the session already made before the round's warm-up (a profile taken first): they
    count towards the warm-up, and the first of them was the cold call."""

    calls: int
    seconds: float
    first_ns: float
    best_ns: float


def warm_up(call: Callable[[], None], config: TimingConfig, before: Warmed | None = None) -> tuple[float, float, int]:
    """Run `call` until, with the calls `before` it, at least `warmup_calls` were made for at least
    `warmup_time`; return the first (cold) call and the fastest warm-up call in ns (the estimate used
    to decide batching), and the calls made, those before included."""
    clock = time.perf_counter_ns
    best = first = math.inf
    count, spent = 0, 0
    if before is not None:
        first, best, count, spent = before.first_ns, before.best_ns, before.calls, int(before.seconds * 1e9)
    start = clock() - spent
    while count < config.warmup_calls or clock() - start < config.warmup_time * 1e9:
        t0 = clock()
        call()
        took = clock() - t0
        first = took if count == 0 else first
        best = min(best, took)
        count += 1
        if config.iterations is None and clock() - start > config.max_time * 1e9:
            break
    return first, best, count


def measure(
    call: Callable[[], None],
    config: TimingConfig,
    runtime_clock: Callable[[], float | None] | None = None,
    before: Warmed | None = None,
    paying_s: float | None = None,
) -> LatencyRound:
    """One round: warm up (counting the calls `before` it), then collect per-call samples; the garbage
    collector is off while sampling. `runtime_clock` (the runtime's latency of its last call, µs) is
    read after each sample, between two timed intervals, so it adds no work inside them; a batched
    sample yields its last call's. With `iterations`, exactly that many calls are timed (in whole
    batches), whatever they take. `paying_s` (a round after the first: its inputs and preparing, s)
    makes the round pay that and its warm-up out of its share (TimingConfig.paid)."""
    warm_start = time.perf_counter()
    first, estimate, warm_calls = warm_up(call, config, before)
    warmup_s = time.perf_counter() - warm_start
    if paying_s is not None:
        config = config.paid(paying_s + warmup_s, warm_calls)
    batch = max(1, math.ceil(config.min_sample_ns / max(estimate, 1)))
    if config.iterations is not None:
        batch = min(batch, config.iterations)
    clock = time.perf_counter_ns
    min_ns, max_ns = config.min_time * 1e9, config.max_time * 1e9
    wanted = math.ceil(config.iterations / batch) if config.iterations is not None else None
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
            if wanted is not None:
                if len(samples) >= wanted:
                    break
                continue
            elapsed = t1 - start
            if elapsed >= max_ns or (elapsed >= min_ns and len(samples) >= config.min_samples):
                break
    finally:
        if gc_was_enabled:
            gc.enable()
    return dataclasses.replace(
        summarize(samples, batch),
        warmup_s=warmup_s,
        first_call_us=first / 1e3,
        runtime_median_us=float(np.median(runtime_us)) if runtime_us else None,
    )
